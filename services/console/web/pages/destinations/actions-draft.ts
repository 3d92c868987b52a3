/**
 * A Webhooks (Actions) destination's mappings as the mapping editor holds them (text, as typed)
 * and as the API takes them (ActionMapping, proto3 JSON), with the problems the editor finds
 * itself (JSON that does not parse, a header listed twice) keyed by field as the service keys its
 * own (`mappings.1.trigger`). Pure: no DOM, so it is unit-tested in Node.
 */

import type * as json from "@switchyard/contracts/json";
import { DEFAULT_BATCH_SIZE, DEFAULT_BATCH_WAIT_MS, MAX_BATCH_SIZE } from "@switchyard/mappings/limits";

type ActionMapping = json.ActionMapping;
/** A problem a service named, with its field (as FieldProblem in api.ts, which Node cannot load). */
interface NamedProblem {
  field: string;
  message: string;
}

export { ACTION_METHODS, MAX_ACTION_MAPPINGS } from "@switchyard/mappings/limits";
/** What an empty data field stands for: the whole call. */
export const WHOLE_CALL = '{"@path": "$."}';
/** A literal header value as reads show it; sent back as it is, it keeps the stored value. */
export const MASKED_VALUE = /^\[set:hmac:[0-9a-f]{8}\]$/;

export interface HeaderDraft {
  name: string;
  /** Text, or a mapping-kit directive as JSON (starting with "{"). */
  value: string;
}

export interface MappingDraft {
  /** Stable through adding, removing and reordering, so a mapping keeps its test results. */
  key: number;
  name: string;
  enabled: boolean;
  trigger: string;
  /** A URL, or a mapping-kit directive as JSON (starting with "{"). */
  url: string;
  method: string;
  headers: HeaderDraft[];
  /** A JSON object (mapping-kit); empty for the whole call. */
  data: string;
  batching: boolean;
  batchSize: string;
  batchMaxWaitMs: string;
}

/** The fields of a mapping the editor shows errors at, after `mappings.<index>.`. */
const MAPPING_FIELDS = ["name", "trigger", "url", "method", "headers", "data", "batching", "batching.size", "batching.maxWaitMs"];

let lastKey = 0;

/** A URL or header value as the editor shows it: text as it is, a directive as one line of JSON. */
export function valueText(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A Webhooks (Actions) destination's mappings as read. */
export function mappingsOf(destination: Pick<json.Destination, "webhooksActionsKind"> | undefined): ActionMapping[] {
  return destination?.webhooksActionsKind?.mappings ?? [];
}

export function draftOfMapping(mapping: ActionMapping): MappingDraft {
  return {
    key: ++lastKey,
    name: mapping.name ?? "",
    enabled: mapping.enabled === true,
    trigger: mapping.trigger ?? "",
    url: valueText(mapping.url),
    method: mapping.method || "POST",
    headers: Object.entries(mapping.headers ?? {}).map(([name, value]) => ({ name, value: valueText(value) })),
    data: mapping.data === undefined ? "" : JSON.stringify(mapping.data, null, 2),
    batching: mapping.batching?.enabled === true,
    batchSize: String(mapping.batching?.size || DEFAULT_BATCH_SIZE),
    batchMaxWaitMs: String(mapping.batching?.maxWaitMs || DEFAULT_BATCH_WAIT_MS),
  };
}

/** A new mapping, with a name none of `others` has. */
export function newMapping(others: readonly MappingDraft[]): MappingDraft {
  let number = others.length + 1;
  while (others.some((mapping) => mapping.name === `Mapping ${number}`)) number++;
  return {
    key: ++lastKey,
    name: `Mapping ${number}`,
    enabled: true,
    trigger: 'type = "track"',
    url: "",
    method: "POST",
    headers: [],
    data: "",
    batching: false,
    batchSize: String(DEFAULT_BATCH_SIZE),
    batchMaxWaitMs: String(DEFAULT_BATCH_WAIT_MS),
  };
}

type Parsed = { ok: true; value: unknown } | { ok: false; reason: string };

function parseJson(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const startsAsJson = (text: string) => text.trimStart().startsWith("{");

/** The key of the local problem of a header's value (the service names a header by `headers.<name>` only). */
export const headerValueKey = (name: string) => `headerValues.${name.trim()}`;

/**
 * The mapping as the API takes it, and what is wrong with it that the service could not be told
 * (JSON that does not parse would not reach it; two rows with one header name would become one),
 * keyed by field within the mapping (`url`, `headers`, `data`, `batching.size`, ...).
 */
export function mappingOf(draft: MappingDraft): { mapping: ActionMapping; problems: Map<string, string> } {
  const problems = new Map<string, string>();
  const directive = (text: string, key: string, what: string): unknown => {
    const parsed = parseJson(text);
    if (!parsed.ok) problems.set(key, `${what} starts with { but is not valid JSON: ${parsed.reason}`);
    return parsed.ok ? parsed.value : text;
  };

  const url = startsAsJson(draft.url) ? directive(draft.url, "url", "The URL") : draft.url;

  const headers: Record<string, unknown> = {};
  const seen = new Set<string>();
  for (const header of draft.headers) {
    const name = header.name.trim();
    if (name === "") {
      if (header.value !== "") problems.set("headers", "a header with a value needs a name");
      continue;
    }
    if (seen.has(name.toLowerCase())) problems.set("headers", `the header ${name} is listed twice`);
    seen.add(name.toLowerCase());
    headers[name] = startsAsJson(header.value) ? directive(header.value, headerValueKey(name), `The value of ${name}`) : header.value;
  }

  let data: Record<string, unknown> | undefined;
  if (draft.data.trim() !== "") {
    const parsed = parseJson(draft.data);
    if (!parsed.ok) problems.set("data", `Data is not valid JSON: ${parsed.reason}`);
    else if (!isObject(parsed.value))
      problems.set("data", 'Data must be a JSON object (a mapping), e.g. {"order": {"@path": "$.properties"}}');
    else data = parsed.value;
  }

  // Proto3 JSON would refuse text here without naming the field: whole numbers are checked here, their range by the service.
  const whole = (text: string, key: string, rule: string): number => {
    const trimmed = text.trim();
    if (trimmed === "") return 0;
    if (!/^\d{1,9}$/.test(trimmed)) problems.set(key, rule);
    return Number(trimmed);
  };
  const batching = draft.batching
    ? {
        enabled: true,
        size: whole(draft.batchSize, "batching.size", `must be a whole number of calls, 1-${MAX_BATCH_SIZE}`),
        maxWaitMs: whole(draft.batchMaxWaitMs, "batching.maxWaitMs", "must be a whole number of milliseconds, 10-60000"),
      }
    : undefined;

  const mapping: ActionMapping = {
    name: draft.name,
    enabled: draft.enabled,
    trigger: draft.trigger,
    url,
    method: draft.method,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(data ? { data } : {}),
    ...(batching ? { batching } : {}),
  };
  return { mapping, problems };
}

/** The keys errors name for the mapping at `index`: the mapping itself, each field, each header. */
export function mappingKeys(draft: MappingDraft, index: number): string[] {
  const at = `mappings.${index}`;
  return [
    at,
    ...MAPPING_FIELDS.map((field) => `${at}.${field}`),
    ...draft.headers.filter((header) => header.name.trim() !== "").map((header) => `${at}.headers.${header.name.trim()}`),
  ];
}

/** Whether an error's key is of the mapping at `index`. */
export const isKeyOfMapping = (key: string, index: number) => key === `mappings.${index}` || key.startsWith(`mappings.${index}.`);

/**
 * TestActionMapping's problems placed for the mapping at `index`: "mapping.<field>: ..." at that
 * mapping's field when the form has it, "call...: ..." with the test call, the rest (for the
 * test's result) as they are.
 */
export function placeTestProblems(
  problems: readonly NamedProblem[],
  index: number,
  known: ReadonlySet<string>,
): { byField: Map<string, string>; call: string[]; other: string[] } {
  const byField = new Map<string, string>();
  const call: string[] = [];
  const other: string[] = [];
  for (const { field, message } of problems) {
    const key =
      field === "mapping" ? `mappings.${index}` : field.startsWith("mapping.") ? `mappings.${index}.${field.slice(8)}` : undefined;
    if (key && known.has(key) && !byField.has(key)) byField.set(key, message);
    else if (field === "call" || field.startsWith("call.")) call.push(field === "call" ? message : `${field.slice(5)}: ${message}`);
    else other.push(field ? `${field}: ${message}` : message);
  }
  return { byField, call, other };
}
