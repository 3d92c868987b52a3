import { useState } from "preact/hooks";
import type { Destination, WebhookEntry } from "../../api";
import { Field, Notice } from "../../components";
import type { SetupProps } from "./setup";
import { DestinationFields, SetupActions, SigningFields, SourceConnections, useSetupForm } from "./setup-form";

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

/** The webhook setup form: URLs with static headers, secrets (never shown back), enabled, sources. */
export function WebhookSetup(props: SetupProps) {
  const { existing } = props;
  const form = useSetupForm(props);
  const [urls, setUrls] = useState<UrlRow[]>(
    existing && webhookUrls(existing).length > 0
      ? webhookUrls(existing).map((webhook) => ({
          url: webhook.url,
          headers: Object.entries(webhook.headers ?? {}).map(([n, v]) => ({ name: n, value: v })),
        }))
      : [{ url: "", headers: [] }],
  );

  const fieldKeys = (): Set<string> => {
    const keys = new Set(["webhooks"]);
    urls.forEach((row, index) => {
      keys.add(`webhooks.${index}`);
      keys.add(`webhooks.${index}.url`);
      keys.add(`webhooks.${index}.headers`);
      for (const header of row.headers) keys.add(`webhooks.${index}.headers.${header.name}`);
    });
    return keys;
  };
  const error = form.error;
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
    await form.save({
      settings: {
        webhooksKind: {
          webhooks: urls.map((row) => ({
            url: row.url,
            headers: Object.fromEntries(row.headers.filter((h) => h.name.trim() !== "").map((h) => [h.name.trim(), h.value])),
          })),
        },
      },
      problems: local,
      keys: fieldKeys(),
    });
  };

  return (
    <form class="setup" onSubmit={(event) => void submit(event)} noValidate>
      {form.errors.general && <Notice kind="error">{form.errors.general}</Notice>}
      <DestinationFields
        form={form}
        rateLimitHint="All URLs and delivery replicas together, 1-100000. Empty or 0: no limit. Calls over the limit wait their turn; none is dropped."
      />

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

      <SigningFields form={form} />
      <SourceConnections form={form} />
      <SetupActions form={form} />
    </form>
  );
}
