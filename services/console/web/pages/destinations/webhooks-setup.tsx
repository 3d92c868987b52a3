import { useState } from "preact/hooks";
import { ApiError, Config, rpc, type CallFilter, type Destination, type WebhookEntry } from "../../api";
import { Field, Link, Notice } from "../../components";
import { fieldKey, formErrors, NO_ERRORS, type FormErrors } from "../../fields";
import { draftOf, filterOf, type FilterDraft } from "../../call-filter-draft";
import { FilterEditor } from "../../filter-editor";
import { navigate } from "../../router";
import { SECRET_PLACEHOLDER, type SetupProps } from "./setup";

const MAX_URLS = 5;

interface HeaderRow {
  name: string;
  value: string;
}
interface UrlRow {
  url: string;
  headers: HeaderRow[];
}

/** A Webhooks destination's URLs as read: its kind's (reads fill the older top-level field too). */
export function webhookUrls(destination: Destination): WebhookEntry[] {
  return destination.webhooksKind?.webhooks ?? destination.webhooks ?? [];
}

/** A new Standard Webhooks secret, made in the browser: "whsec_" + base64 of 32 random bytes. */
function newSigningSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** The webhook setup form: URLs with static headers, secrets (never shown back), enabled, sources. */
export function WebhookSetup({ existing, sources, connectedSources, filters }: SetupProps) {
  const [id, setId] = useState(existing?.id ?? "");
  const [name, setName] = useState(existing?.name ?? "");
  const [enabled, setEnabled] = useState(existing ? existing.enabled === true : true);
  const [urls, setUrls] = useState<UrlRow[]>(
    existing && webhookUrls(existing).length > 0
      ? webhookUrls(existing).map((webhook) => ({
          url: webhook.url,
          headers: Object.entries(webhook.headers ?? {}).map(([n, v]) => ({ name: n, value: v })),
        }))
      : [{ url: "", headers: [] }],
  );
  const hasSharedSecret = existing?.sharedSecret === SECRET_PLACEHOLDER;
  const [sharedSecret, setSharedSecret] = useState("");
  const [removeSharedSecret, setRemoveSharedSecret] = useState(false);
  const hasSigningSecret = existing?.standardWebhooks !== undefined;
  const [standardWebhooks, setStandardWebhooks] = useState(hasSigningSecret);
  const [signingSecret, setSigningSecret] = useState("");
  const [selectedSources, setSelectedSources] = useState<string[]>(connectedSources);
  const [rateLimit, setRateLimit] = useState(existing?.maxRequestsPerSecond ? String(existing.maxRequestsPerSecond) : "");
  const [drafts, setDrafts] = useState<Record<string, FilterDraft>>(() =>
    Object.fromEntries(sources.map((source) => [source.id, draftOf(filters[source.id])])),
  );
  // Each connection's filter problems, by source, keyed as the service names them (filter.all.filters.0.field.path).
  const [filterErrors, setFilterErrors] = useState<Record<string, Map<string, string>>>({});
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  const fieldKeys = (): Set<string> => {
    const keys = new Set([
      "id",
      "name",
      "enabled",
      "webhooks",
      "sharedSecret",
      "standardWebhooks",
      "standardWebhooks.signingSecret",
      "sources",
      "maxRequestsPerSecond",
    ]);
    urls.forEach((row, index) => {
      keys.add(`webhooks.${index}`);
      keys.add(`webhooks.${index}.url`);
      keys.add(`webhooks.${index}.headers`);
      for (const header of row.headers) keys.add(`webhooks.${index}.headers.${header.name}`);
    });
    return keys;
  };
  const error = (key: string) => errors.byField.get(key);
  // The first field with an error takes the focus, so its message is read out.
  const focusFirstError = () =>
    requestAnimationFrame(() =>
      (document.querySelector(".field.invalid input, .field.invalid select, .field.invalid textarea") as HTMLElement | null)?.focus(),
    );
  const updateUrl = (index: number, change: (row: UrlRow) => UrlRow) => setUrls(urls.map((row, i) => (i === index ? change(row) : row)));

  const submit = async (event: Event) => {
    event.preventDefault();
    // What the API cannot be told: two rows with one header name would become one entry.
    const local = new Map<string, string>();
    urls.forEach((row, index) => {
      const seen = new Set<string>();
      for (const header of row.headers) {
        if (header.name.trim() === "" && header.value !== "") local.set(`webhooks.${index}.headers`, "a header with a value needs a name");
        if (seen.has(header.name.toLowerCase())) local.set(`webhooks.${index}.headers`, `the header ${header.name} is listed twice`);
        seen.add(header.name.toLowerCase());
      }
    });
    // Proto3 JSON would read text as 0 (no limit): a whole number is checked here, its range by the service.
    if (rateLimit.trim() !== "" && !/^\d+$/.test(rateLimit.trim()))
      local.set("maxRequestsPerSecond", "must be a whole number of requests per second, or empty (or 0) for no limit");
    const localFilters: Record<string, Map<string, string>> = {};
    const filterOfSource: Record<string, CallFilter | undefined> = {};
    for (const sourceId of selectedSources) {
      const { filter, problems } = filterOf(drafts[sourceId] ?? draftOf(undefined));
      if (problems.size > 0) localFilters[sourceId] = problems;
      filterOfSource[sourceId] = filter;
    }
    setFilterErrors(localFilters);
    if (local.size > 0 || Object.keys(localFilters).length > 0) {
      setErrors({ byField: local, general: undefined });
      focusFirstError();
      return;
    }
    setBusy(true);
    try {
      const destination = {
        id,
        name,
        enabled,
        maxRequestsPerSecond: rateLimit.trim() === "" ? 0 : Number(rateLimit.trim()),
        webhooksKind: {
          webhooks: urls.map((row) => ({
            url: row.url,
            headers: Object.fromEntries(row.headers.filter((h) => h.name.trim() !== "").map((h) => [h.name.trim(), h.value])),
          })),
        },
        // A blank field keeps a stored secret (reads give the placeholder, and putting it back keeps the secret).
        sharedSecret: sharedSecret !== "" ? sharedSecret : hasSharedSecret && !removeSharedSecret ? SECRET_PLACEHOLDER : "",
        ...(standardWebhooks
          ? { standardWebhooks: { signingSecret: signingSecret !== "" ? signingSecret : hasSigningSecret ? SECRET_PLACEHOLDER : "" } }
          : {}),
      };
      await rpc(Config("PutDestination"), { destination });
      // Connecting again replaces a connection's filter, so every selected source is connected with the filter shown.
      for (const sourceId of selectedSources) {
        try {
          await rpc(Config("Connect"), {
            sourceId,
            destinationId: id,
            ...(filterOfSource[sourceId] ? { filter: filterOfSource[sourceId] } : {}),
          });
        } catch (caught) {
          if (!(caught instanceof ApiError) || caught.fields.length === 0) throw caught;
          const problems = new Map<string, string>();
          for (const problem of caught.fields) problems.set(fieldKey(problem.field), problem.message);
          setFilterErrors({ [sourceId]: problems });
          setErrors({ byField: new Map(), general: `The destination is saved; the filter of ${sourceId} was refused (below).` });
          focusFirstError();
          return;
        }
      }
      for (const sourceId of connectedSources.filter((s) => !selectedSources.includes(s)))
        await rpc(Config("Disconnect"), { sourceId, destinationId: id });
      setSharedSecret("");
      setSigningSecret("");
      navigate(`/destinations?saved=${encodeURIComponent(id)}`);
    } catch (caught) {
      if (!(caught instanceof ApiError)) throw caught;
      const keys = fieldKeys();
      const found = formErrors(caught, (key) => keys.has(key), "destination");
      setErrors(found);
      focusFirstError();
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="setup" onSubmit={(event) => void submit(event)} noValidate>
      {errors.general && <Notice kind="error">{errors.general}</Notice>}
      <fieldset>
        <legend>Destination</legend>
        <Field label="Id" error={error("id")} hint="1-64 letters, digits, - or _.">
          {(attributes) => (
            <input
              {...attributes}
              name="id"
              value={id}
              readOnly={existing !== undefined}
              onInput={(event) => setId(event.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Name (optional)" error={error("name")}>
          {(attributes) => <input {...attributes} name="name" value={name} onInput={(event) => setName(event.currentTarget.value)} />}
        </Field>
        <div class="check">
          <input id="enabled" type="checkbox" checked={enabled} onChange={(event) => setEnabled(event.currentTarget.checked)} />
          <label for="enabled">Enabled (a disabled destination receives nothing; its retries wait)</label>
        </div>
        <Field
          label="Rate limit (requests per second)"
          error={error("maxRequestsPerSecond")}
          hint="All URLs and delivery replicas together, 1-100000. Empty or 0: no limit. Calls over the limit wait their turn; none is dropped."
        >
          {(attributes) => (
            <input
              {...attributes}
              name="maxRequestsPerSecond"
              inputMode="numeric"
              value={rateLimit}
              onInput={(event) => setRateLimit(event.currentTarget.value)}
            />
          )}
        </Field>
      </fieldset>

      <fieldset>
        <legend>URLs, called in this order</legend>
        {error("webhooks") && <p class="field-error">{error("webhooks")}</p>}
        {urls.map((row, index) => (
          <div class="url-row" key={index}>
            <Field
              label={`URL ${index + 1}`}
              error={error(`webhooks.${index}.url`) ?? error(`webhooks.${index}`)}
              hint={index === 0 ? "An absolute http or https URL." : undefined}
            >
              {(attributes) => (
                <input
                  {...attributes}
                  name={`url-${index}`}
                  type="url"
                  class="mono"
                  placeholder="https://example.com/webhooks"
                  value={row.url}
                  onInput={(event) => updateUrl(index, (r) => ({ ...r, url: event.currentTarget.value }))}
                />
              )}
            </Field>
            <div class="headers" role="group" aria-label={`Static headers of URL ${index + 1}`}>
              {error(`webhooks.${index}.headers`) && <p class="field-error">{error(`webhooks.${index}.headers`)}</p>}
              {row.headers.map((header, h) => (
                <div class="header-row" key={h}>
                  <Field label={`Header name ${h + 1}`} error={header.name ? error(`webhooks.${index}.headers.${header.name}`) : undefined}>
                    {(attributes) => (
                      <input
                        {...attributes}
                        class="mono"
                        value={header.name}
                        onInput={(event) =>
                          updateUrl(index, (r) => ({
                            ...r,
                            headers: r.headers.map((x, i) => (i === h ? { ...x, name: event.currentTarget.value } : x)),
                          }))
                        }
                      />
                    )}
                  </Field>
                  <Field
                    label={`Header value ${h + 1}`}
                    hint={
                      /^\[set:hmac:[0-9a-f]{8}\]$/.test(header.value) ? "Stored value (masked): kept unless you replace it." : undefined
                    }
                  >
                    {(attributes) => (
                      <input
                        {...attributes}
                        class="mono"
                        value={header.value}
                        onInput={(event) =>
                          updateUrl(index, (r) => ({
                            ...r,
                            headers: r.headers.map((x, i) => (i === h ? { ...x, value: event.currentTarget.value } : x)),
                          }))
                        }
                      />
                    )}
                  </Field>
                  <button
                    type="button"
                    class="secondary small"
                    aria-label={`Remove header ${h + 1} of URL ${index + 1}`}
                    onClick={() => updateUrl(index, (r) => ({ ...r, headers: r.headers.filter((_, i) => i !== h) }))}
                  >
                    Remove
                  </button>
                </div>
              ))}
              <button
                type="button"
                class="secondary small"
                onClick={() => updateUrl(index, (r) => ({ ...r, headers: [...r.headers, { name: "", value: "" }] }))}
              >
                Add a header
              </button>
            </div>
            {urls.length > 1 && (
              <button
                type="button"
                class="secondary small"
                aria-label={`Remove URL ${index + 1}`}
                onClick={() => setUrls(urls.filter((_, i) => i !== index))}
              >
                Remove URL {index + 1}
              </button>
            )}
          </div>
        ))}
        {urls.length < MAX_URLS && (
          <button type="button" class="secondary" onClick={() => setUrls([...urls, { url: "", headers: [] }])}>
            Add a URL
          </button>
        )}
      </fieldset>

      <fieldset>
        <legend>Signing</legend>
        <Field
          label="Shared secret (X-Signature)"
          error={error("sharedSecret")}
          hint={
            hasSharedSecret
              ? "A secret is set and is never shown. Leave blank to keep it, or type a new one."
              : "Optional: every request then carries X-Signature, an HMAC-SHA1 of the body."
          }
        >
          {(attributes) => (
            <input
              {...attributes}
              type="password"
              autoComplete="new-password"
              name="sharedSecret"
              value={sharedSecret}
              disabled={removeSharedSecret}
              onInput={(event) => setSharedSecret(event.currentTarget.value)}
            />
          )}
        </Field>
        {hasSharedSecret && (
          <div class="check">
            <input
              id="remove-secret"
              type="checkbox"
              checked={removeSharedSecret}
              onChange={(event) => setRemoveSharedSecret(event.currentTarget.checked)}
            />
            <label for="remove-secret">Remove the shared secret (requests go unsigned by X-Signature)</label>
          </div>
        )}
        <div class="check">
          <input
            id="standard-webhooks"
            type="checkbox"
            checked={standardWebhooks}
            onChange={(event) => setStandardWebhooks(event.currentTarget.checked)}
          />
          <label for="standard-webhooks">Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature)</label>
        </div>
        {standardWebhooks && (
          <Field
            label="Signing secret"
            error={error("standardWebhooks.signingSecret") ?? error("standardWebhooks")}
            hint={
              hasSigningSecret
                ? "A secret is set and is never shown. Leave blank to keep it, or give a new one (it replaces the old one at once)."
                : "whsec_ followed by base64 of 24-64 random bytes. Give it to your receiver; it is not shown again after saving."
            }
          >
            {(attributes) => (
              <div class="secret-row">
                <input
                  {...attributes}
                  class="mono"
                  name="signingSecret"
                  autoComplete="off"
                  value={signingSecret}
                  onInput={(event) => setSigningSecret(event.currentTarget.value)}
                />
                <button type="button" class="secondary" onClick={() => setSigningSecret(newSigningSecret())}>
                  Generate
                </button>
              </div>
            )}
          </Field>
        )}
      </fieldset>

      <fieldset>
        <legend>Sources that send here</legend>
        {error("sources") && <p class="field-error">{error("sources")}</p>}
        {sources.length === 0 ? (
          <p class="hint">
            No sources yet: <Link to="/sources">create one</Link>, then connect it here.
          </p>
        ) : (
          sources.map((source) => (
            <div class="source-connection" key={source.id}>
              <div class="check">
                <input
                  id={`source-${source.id}`}
                  type="checkbox"
                  checked={selectedSources.includes(source.id)}
                  onChange={(event) =>
                    setSelectedSources(
                      event.currentTarget.checked ? [...selectedSources, source.id] : selectedSources.filter((s) => s !== source.id),
                    )
                  }
                />
                <label for={`source-${source.id}`}>
                  <span class="mono">{source.id}</span>
                  {source.name ? ` (${source.name})` : ""}
                </label>
              </div>
              {selectedSources.includes(source.id) && (
                <FilterEditor
                  sourceId={source.id}
                  draft={drafts[source.id] ?? draftOf(undefined)}
                  errors={filterErrors[source.id] ?? new Map()}
                  onChange={(draft) => setDrafts({ ...drafts, [source.id]: draft })}
                />
              )}
            </div>
          ))
        )}
      </fieldset>

      <div class="form-actions">
        <button type="submit" disabled={busy}>
          {busy ? "Saving…" : existing ? "Save changes" : "Create destination"}
        </button>
        <Link to="/destinations" class="button secondary">
          Cancel
        </Link>
      </div>
    </form>
  );
}
