import { useState } from "preact/hooks";
import { ApiError, Config, rpc, type CallFilter, type Destination } from "../../api";
import { draftOf, filterOf, type FilterDraft } from "../../call-filter-draft";
import { Field, Link } from "../../components";
import { fieldKey, formErrors, NO_ERRORS, type FormErrors } from "../../fields";
import { FilterEditor } from "../../filter-editor";
import { navigate } from "../../router";
import { SECRET_PLACEHOLDER, type SetupProps } from "./setup";

/*
 * What every kind's setup form has besides its kind's own settings: id, name, enabled, the rate
 * limit, the secrets (never shown back), the connected sources with their filters, and saving
 * (PutDestination, then the connections). A kind's form adds its fieldsets and gives `save` its
 * settings, the problems it found itself and the keys of its fields.
 */

/** The keys errors name for the fields every kind has. */
const COMMON_KEYS = new Set([
  "id",
  "name",
  "enabled",
  "sharedSecret",
  "standardWebhooks",
  "standardWebhooks.signingSecret",
  "sources",
  "maxRequestsPerSecond",
]);

export interface CommonDraft {
  id: string;
  name: string;
  enabled: boolean;
  /** As typed: empty or 0 for no limit. */
  rateLimit: string;
  /** A new shared secret; blank keeps the stored one. */
  sharedSecret: string;
  removeSharedSecret: boolean;
  standardWebhooks: boolean;
  /** A new signing secret; blank keeps the stored one. */
  signingSecret: string;
  selectedSources: string[];
  filters: Record<string, FilterDraft>;
}

/** A kind's part of a save. */
export interface KindPart {
  settings: Pick<Destination, "webhooksKind"> | Pick<Destination, "webhooksActionsKind">;
  /** What the kind's form refused before sending, by key. */
  problems: Map<string, string>;
  /** The keys of the kind's fields, as the service's errors name them (without "destination."). */
  keys: Set<string>;
}

export type SetupForm = ReturnType<typeof useSetupForm>;

/** A new Standard Webhooks secret, made in the browser: "whsec_" + base64 of 32 random bytes. */
function newSigningSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** The first field with an error (in `scope`) takes the focus, so its message is read out. */
export function focusFirstError(scope: ParentNode = document): void {
  requestAnimationFrame(() =>
    (scope.querySelector(".field.invalid input, .field.invalid select, .field.invalid textarea") as HTMLElement | null)?.focus(),
  );
}

export function useSetupForm({ existing, sources, connectedSources, filters }: SetupProps) {
  const hasSharedSecret = existing?.sharedSecret === SECRET_PLACEHOLDER;
  const hasSigningSecret = existing?.standardWebhooks !== undefined;
  const [draft, setDraft] = useState<CommonDraft>(() => ({
    id: existing?.id ?? "",
    name: existing?.name ?? "",
    enabled: existing ? existing.enabled === true : true,
    rateLimit: existing?.maxRequestsPerSecond ? String(existing.maxRequestsPerSecond) : "",
    sharedSecret: "",
    removeSharedSecret: false,
    standardWebhooks: hasSigningSecret,
    signingSecret: "",
    selectedSources: connectedSources,
    filters: Object.fromEntries(sources.map((source) => [source.id, draftOf(filters[source.id])])),
  }));
  // Each connection's filter problems, by source, keyed as the service names them (filter.all.filters.0.field.path).
  const [filterErrors, setFilterErrors] = useState<Record<string, Map<string, string>>>({});
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);
  const update = (change: Partial<CommonDraft>) => setDraft((previous) => ({ ...previous, ...change }));

  const save = async (kind: KindPart) => {
    const local = new Map(kind.problems);
    // Proto3 JSON would read text as 0 (no limit): a whole number is checked here, its range by the service.
    if (draft.rateLimit.trim() !== "" && !/^\d+$/.test(draft.rateLimit.trim()))
      local.set("maxRequestsPerSecond", "must be a whole number of requests per second, or empty (or 0) for no limit");
    const localFilters: Record<string, Map<string, string>> = {};
    const filterOfSource: Record<string, CallFilter | undefined> = {};
    for (const sourceId of draft.selectedSources) {
      const { filter, problems } = filterOf(draft.filters[sourceId] ?? draftOf(undefined));
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
        id: draft.id,
        name: draft.name,
        enabled: draft.enabled,
        maxRequestsPerSecond: draft.rateLimit.trim() === "" ? 0 : Number(draft.rateLimit.trim()),
        ...kind.settings,
        // A blank field keeps a stored secret (reads give the placeholder, and putting it back keeps the secret).
        sharedSecret:
          draft.sharedSecret !== "" ? draft.sharedSecret : hasSharedSecret && !draft.removeSharedSecret ? SECRET_PLACEHOLDER : "",
        ...(draft.standardWebhooks
          ? {
              standardWebhooks: {
                signingSecret: draft.signingSecret !== "" ? draft.signingSecret : hasSigningSecret ? SECRET_PLACEHOLDER : "",
              },
            }
          : {}),
      };
      await rpc(Config("PutDestination"), { destination });
      // Connecting again replaces a connection's filter, so every selected source is connected with the filter shown.
      for (const sourceId of draft.selectedSources) {
        try {
          await rpc(Config("Connect"), {
            sourceId,
            destinationId: draft.id,
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
      for (const sourceId of connectedSources.filter((s) => !draft.selectedSources.includes(s)))
        await rpc(Config("Disconnect"), { sourceId, destinationId: draft.id });
      update({ sharedSecret: "", signingSecret: "" });
      navigate(`/destinations?saved=${encodeURIComponent(draft.id)}`);
    } catch (caught) {
      if (!(caught instanceof ApiError)) throw caught;
      setErrors(formErrors(caught, (key) => COMMON_KEYS.has(key) || kind.keys.has(key), "destination"));
      focusFirstError();
    } finally {
      setBusy(false);
    }
  };

  return {
    existing,
    sources,
    draft,
    update,
    hasSharedSecret,
    hasSigningSecret,
    filterErrors,
    errors,
    setErrors,
    error: (key: string) => errors.byField.get(key),
    busy,
    save,
  };
}

/** Id, name, enabled and the rate limit. */
export function DestinationFields({ form, rateLimitHint }: { form: SetupForm; rateLimitHint: string }) {
  const { draft, update, error } = form;
  return (
    <fieldset>
      <legend>Destination</legend>
      <Field label="Id" error={error("id")} hint="1-64 letters, digits, - or _.">
        {(attributes) => (
          <input
            {...attributes}
            name="id"
            value={draft.id}
            readOnly={form.existing !== undefined}
            onInput={(event) => update({ id: event.currentTarget.value })}
          />
        )}
      </Field>
      <Field label="Name (optional)" error={error("name")}>
        {(attributes) => (
          <input {...attributes} name="name" value={draft.name} onInput={(event) => update({ name: event.currentTarget.value })} />
        )}
      </Field>
      <div class="check">
        <input
          id="enabled"
          type="checkbox"
          checked={draft.enabled}
          onChange={(event) => update({ enabled: event.currentTarget.checked })}
        />
        <label for="enabled">Enabled (a disabled destination receives nothing; its retries wait)</label>
      </div>
      <Field label="Rate limit (requests per second)" error={error("maxRequestsPerSecond")} hint={rateLimitHint}>
        {(attributes) => (
          <input
            {...attributes}
            name="maxRequestsPerSecond"
            inputMode="numeric"
            value={draft.rateLimit}
            onInput={(event) => update({ rateLimit: event.currentTarget.value })}
          />
        )}
      </Field>
    </fieldset>
  );
}

/** The shared secret (X-Signature) and Standard Webhooks signing: secrets are typed, never shown back. */
export function SigningFields({ form }: { form: SetupForm }) {
  const { draft, update, error, hasSharedSecret, hasSigningSecret } = form;
  return (
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
            value={draft.sharedSecret}
            disabled={draft.removeSharedSecret}
            onInput={(event) => update({ sharedSecret: event.currentTarget.value })}
          />
        )}
      </Field>
      {hasSharedSecret && (
        <div class="check">
          <input
            id="remove-secret"
            type="checkbox"
            checked={draft.removeSharedSecret}
            onChange={(event) => update({ removeSharedSecret: event.currentTarget.checked })}
          />
          <label for="remove-secret">Remove the shared secret (requests go unsigned by X-Signature)</label>
        </div>
      )}
      <div class="check">
        <input
          id="standard-webhooks"
          type="checkbox"
          checked={draft.standardWebhooks}
          onChange={(event) => update({ standardWebhooks: event.currentTarget.checked })}
        />
        <label for="standard-webhooks">Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature)</label>
      </div>
      {draft.standardWebhooks && (
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
                value={draft.signingSecret}
                onInput={(event) => update({ signingSecret: event.currentTarget.value })}
              />
              <button type="button" class="secondary" onClick={() => update({ signingSecret: newSigningSecret() })}>
                Generate
              </button>
            </div>
          )}
        </Field>
      )}
    </fieldset>
  );
}

/** The sources that send here, each with its connection's filter. */
export function SourceConnections({ form }: { form: SetupForm }) {
  const { draft, update, error, sources, filterErrors } = form;
  return (
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
                checked={draft.selectedSources.includes(source.id)}
                onChange={(event) =>
                  update({
                    selectedSources: event.currentTarget.checked
                      ? [...draft.selectedSources, source.id]
                      : draft.selectedSources.filter((s) => s !== source.id),
                  })
                }
              />
              <label for={`source-${source.id}`}>
                <span class="mono">{source.id}</span>
                {source.name ? ` (${source.name})` : ""}
              </label>
            </div>
            {draft.selectedSources.includes(source.id) && (
              <FilterEditor
                sourceId={source.id}
                draft={draft.filters[source.id] ?? draftOf(undefined)}
                errors={filterErrors[source.id] ?? new Map()}
                onChange={(filter) => update({ filters: { ...draft.filters, [source.id]: filter } })}
              />
            )}
          </div>
        ))
      )}
    </fieldset>
  );
}

/** Save and cancel. */
export function SetupActions({ form }: { form: SetupForm }) {
  return (
    <div class="form-actions">
      <button type="submit" disabled={form.busy}>
        {form.busy ? "Saving…" : form.existing ? "Save changes" : "Create destination"}
      </button>
      <Link to="/destinations" class="button secondary">
        Cancel
      </Link>
    </div>
  );
}
