import type { configApi } from "@switchyard/contracts";
import { ServiceError } from "@switchyard/platform";
import { holdsMaskedValues, type ActionMappingRecord, type Destination, type Masker } from "@switchyard/workspace";

/*
 * A Destination message's `kind` and the record's type and kind settings, both ways. Everything
 * else of a destination (id, name, enabled, secrets, rate limit) is the same for every kind and
 * stays in config-service.ts.
 */

/** What a PutDestination's kind stores: the record's type and its kind's own settings. */
export type KindToStore =
  | { readonly type: "webhooks"; readonly settings: { webhooks: configApi.WebhookEntry[] } }
  | { readonly type: "webhooks_actions"; readonly settings: { mappings: ActionMappingRecord[] } };

/**
 * The kind a PutDestination gives, as the record stores it. Masked header and query values, as
 * reads return them, keep the stored values they stand for (see Masker.keepMaskedValues).
 */
export async function kindToStore(
  input: configApi.Destination,
  stored: () => Promise<Destination | undefined>,
  masker: Masker,
): Promise<KindToStore> {
  if (input.kind?.$case === "webhooksActionsKind") {
    if (input.webhooks.length > 0)
      throw new ServiceError(
        "INVALID_ARGUMENT",
        "destination.webhooks: must be empty for a Webhooks (Actions) destination (its URLs are in its mappings)",
      );
    let mappings = input.kind.value.mappings.map(mappingRecordOf);
    if (mappings.some(holdsMaskedMappingValues)) {
      const record = await stored();
      if (record?.type === "webhooks_actions") mappings = mappings.map((mapping) => keepMaskedMappingValues(mapping, record, masker));
    }
    return { type: "webhooks_actions", settings: { mappings } };
  }
  const storedAsRead = async () => {
    const record = await stored();
    return record && kindMessage(record, masker).webhooks;
  };
  let webhooks = (await webhookEntriesOf(input, storedAsRead)).map((w) => ({ url: w.url, headers: w.headers }));
  if (holdsMaskedValues(webhooks)) {
    const record = await stored();
    webhooks = masker.keepMaskedValues(webhooks, record?.type === "webhooks" ? record.settings.webhooks : []);
  }
  return { type: "webhooks", settings: { webhooks } };
}

/** A destination's kind as reads show it, with `webhooks`, the older form of a Webhooks destination's URLs. */
export function kindMessage(record: Destination, masker: Masker): Pick<configApi.Destination, "kind" | "webhooks"> {
  if (record.type === "webhooks_actions") {
    const mappings = record.settings.mappings.map((mapping) => mappingMessageOf(mapping, masker));
    return { kind: { $case: "webhooksActionsKind", value: { mappings } }, webhooks: [] };
  }
  // Static headers and URL query values carry receivers' credentials: reads show fingerprints.
  const webhooks = record.settings.webhooks.map((entry) => ({
    url: masker.maskUrl(entry.url),
    headers: masker.maskHeaders(entry.headers),
  }));
  return { kind: { $case: "webhooksKind", value: { webhooks } }, webhooks };
}

/**
 * A Webhooks destination's URLs from a PutDestination: its kind's, or, from a client that does
 * not know `kind`, the older `webhooks` field. A client that reads a destination gets both; one
 * that changes only one of them and sends the other back as read (an older client keeps the `kind`
 * it cannot see as an unknown field) has its change taken. Both changed, differently, is refused.
 */
async function webhookEntriesOf(
  input: configApi.Destination,
  storedAsRead: () => Promise<configApi.WebhookEntry[] | undefined>,
): Promise<configApi.WebhookEntry[]> {
  if (input.kind?.$case !== "webhooksKind") return input.webhooks;
  const entries = input.kind.value.webhooks;
  if (input.webhooks.length === 0 || sameEntries(input.webhooks, entries)) return entries;
  const read = await storedAsRead();
  if (read && sameEntries(entries, read)) return input.webhooks;
  if (read && sameEntries(input.webhooks, read)) return entries;
  throw new ServiceError(
    "INVALID_ARGUMENT",
    "destination.webhooks: differs from destination.webhooks_kind.webhooks, and both differ from what is stored; give the URLs in one of them (webhooks is the older form)",
  );
}

function sameEntries(a: readonly configApi.WebhookEntry[], b: readonly configApi.WebhookEntry[]): boolean {
  const canonical = (entries: readonly configApi.WebhookEntry[]) =>
    JSON.stringify(entries.map((entry) => [entry.url, Object.entries(entry.headers).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))]));
  return canonical(a) === canonical(b);
}

/**
 * An ActionMapping message as a stored destination would hold it, masked header and URL values (as
 * reads show them) put back from its stored mapping of the same name: what TestActionMapping tests.
 */
export function actionMappingRecord(
  mapping: configApi.ActionMapping,
  stored: Destination | undefined,
  masker: Masker,
): ActionMappingRecord {
  const record = mappingRecordOf(mapping);
  return stored?.type === "webhooks_actions" && holdsMaskedMappingValues(record) ? keepMaskedMappingValues(record, stored, masker) : record;
}

/** An ActionMapping message as the record holds it (proto3 JSON's form: what the workspace file writes). */
function mappingRecordOf(mapping: configApi.ActionMapping): ActionMappingRecord {
  return {
    name: mapping.name,
    enabled: mapping.enabled,
    trigger: mapping.trigger,
    url: mapping.url,
    method: mapping.method || "POST",
    ...(mapping.headers === undefined ? {} : { headers: mapping.headers }),
    ...(mapping.data === undefined ? {} : { data: mapping.data }),
    ...(mapping.batching === undefined ? {} : { batching: { ...mapping.batching } }),
  };
}

/** A stored mapping as reads show it: text header values and a text URL's query values masked. */
function mappingMessageOf(mapping: ActionMappingRecord, masker: Masker): configApi.ActionMapping {
  const { url, headers } = textParts(mapping);
  return {
    name: mapping.name,
    enabled: mapping.enabled,
    trigger: mapping.trigger,
    url: typeof mapping.url === "string" ? masker.maskUrl(url) : mapping.url,
    method: mapping.method,
    headers: mapping.headers && { ...mapping.headers, ...masker.maskHeaders(headers) },
    data: mapping.data,
    batching: mapping.batching && {
      enabled: mapping.batching.enabled,
      size: mapping.batching.size ?? 0,
      maxWaitMs: mapping.batching.maxWaitMs ?? 0,
    },
  };
}

/** A mapping's literal URL and literal header values: the parts that can hold credentials, and are masked. */
function textParts(mapping: ActionMappingRecord): { url: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(mapping.headers ?? {})) if (typeof value === "string") headers[name] = value;
  return { url: typeof mapping.url === "string" ? mapping.url : "", headers };
}

function holdsMaskedMappingValues(mapping: ActionMappingRecord): boolean {
  return holdsMaskedValues([textParts(mapping)]);
}

/**
 * The mapping with masked values put back from the stored mapping of the same name, when both
 * send to the same receiver: the same URL origin for literal URLs (see Masker.keepMaskedValues), the
 * same directive for mapped ones. A changed receiver never gets a stored credential.
 */
function keepMaskedMappingValues(
  mapping: ActionMappingRecord,
  record: Extract<Destination, { type: "webhooks_actions" }>,
  masker: Masker,
): ActionMappingRecord {
  const old = record.settings.mappings.find((candidate) => candidate.name === mapping.name);
  if (!old) return mapping;
  const mine = textParts(mapping);
  const theirs = textParts(old);
  if (typeof mapping.url === "string") {
    const [kept] = masker.keepMaskedValues([mine], [theirs]);
    return { ...mapping, url: kept!.url, ...(mapping.headers && { headers: { ...mapping.headers, ...kept!.headers } }) };
  }
  if (JSON.stringify(mapping.url) !== JSON.stringify(old.url) || !mapping.headers) return mapping;
  return { ...mapping, headers: { ...mapping.headers, ...masker.keepMaskedHeaders(mine.headers, [theirs.headers]) } };
}
