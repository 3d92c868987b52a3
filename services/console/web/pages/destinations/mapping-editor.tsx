import { useId } from "preact/hooks";
import { Field } from "../../components";
import { MAX_BATCH_SIZE } from "@switchyard/mappings/limits";
import { ACTION_METHODS, headerValueKey, MASKED_VALUE, WHOLE_CALL, type HeaderDraft, type MappingDraft } from "./actions-draft";
import { MappingTest, type TestOutcome } from "./mapping-test";

/** One mapping of a Webhooks (Actions) destination: its trigger, its request, its batching, and its test. */
export function MappingEditor(props: {
  draft: MappingDraft;
  index: number;
  count: number;
  /** The form's error at a key (`mappings.<index>.trigger`, ...). */
  error: (key: string) => string | undefined;
  onChange: (draft: MappingDraft) => void;
  onRemove: () => void;
  onMove: (by: -1 | 1) => void;
  onTest: (send: boolean) => Promise<TestOutcome>;
  /** The destination is not saved yet: tests go unsigned. */
  unsaved: boolean;
}) {
  const { draft, index, count, error } = props;
  const at = `mappings.${index}`;
  const number = index + 1;
  const id = useId();
  const set = (change: Partial<MappingDraft>) => props.onChange({ ...draft, ...change });

  return (
    <fieldset class="mapping">
      <legend>Mapping {number}</legend>
      {error(at) && <p class="field-error">{error(at)}</p>}
      <div class="mapping-head">
        <Field
          label="Name"
          error={error(`${at}.name`)}
          hint="1-100 characters, unique in the destination; the attempt log names requests by it."
        >
          {(attributes) => <input {...attributes} value={draft.name} onInput={(event) => set({ name: event.currentTarget.value })} />}
        </Field>
        <div class="check">
          <input
            id={`${id}-enabled`}
            type="checkbox"
            checked={draft.enabled}
            onChange={(event) => set({ enabled: event.currentTarget.checked })}
          />
          <label for={`${id}-enabled`}>Enabled (a disabled mapping takes no call)</label>
        </div>
      </div>
      <Field
        label="Trigger"
        error={error(`${at}.trigger`)}
        hint={'Which calls it takes, in Segment\'s subscription language: type = "track" and event = "Order Completed".'}
      >
        {(attributes) => (
          <input
            {...attributes}
            class="mono"
            spellcheck={false}
            value={draft.trigger}
            onInput={(event) => set({ trigger: event.currentTarget.value })}
          />
        )}
      </Field>
      <div class="mapping-request">
        <Field label="Method" error={error(`${at}.method`)}>
          {(attributes) => (
            <select {...attributes} value={draft.method} onChange={(event) => set({ method: event.currentTarget.value })}>
              {ACTION_METHODS.map((method) => (
                <option key={method} value={method}>
                  {method}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field
          label="URL"
          error={error(`${at}.url`)}
          hint={
            'An absolute http(s) URL, or a mapping-kit directive as JSON that makes one: {"@template": "https://hooks.example/{{userId}}"}.'
          }
        >
          {(attributes) => (
            <input
              {...attributes}
              class="mono"
              spellcheck={false}
              placeholder="https://example.com/webhooks"
              value={draft.url}
              onInput={(event) => set({ url: event.currentTarget.value })}
            />
          )}
        </Field>
      </div>
      <MappingHeaders headers={draft.headers} number={number} at={at} error={error} onChange={(headers) => set({ headers })} />
      <Field
        label="Data (JSON)"
        error={error(`${at}.data`)}
        hint={'The body, in mapping-kit: {"order": {"@path": "$.properties"}, "user": {"@path": "$.userId"}}. Empty: the whole call.'}
      >
        {(attributes) => (
          <textarea
            {...attributes}
            class="mono"
            rows={Math.min(14, Math.max(4, draft.data.split("\n").length))}
            spellcheck={false}
            placeholder={WHOLE_CALL}
            value={draft.data}
            onInput={(event) => set({ data: event.currentTarget.value })}
          />
        )}
      </Field>
      <div class="check">
        <input
          id={`${id}-batching`}
          type="checkbox"
          checked={draft.batching}
          onChange={(event) => set({ batching: event.currentTarget.checked })}
        />
        <label for={`${id}-batching`}>Send in batches (one request for many calls, its body the array of their data)</label>
      </div>
      {error(`${at}.batching`) && <p class="field-error">{error(`${at}.batching`)}</p>}
      {draft.batching && (
        <div class="mapping-batching">
          <Field label="Batch size (calls)" error={error(`${at}.batching.size`)} hint={`1-${MAX_BATCH_SIZE}.`}>
            {(attributes) => (
              <input
                {...attributes}
                inputMode="numeric"
                value={draft.batchSize}
                onInput={(event) => set({ batchSize: event.currentTarget.value })}
              />
            )}
          </Field>
          <Field
            label="Longest wait (ms)"
            error={error(`${at}.batching.maxWaitMs`)}
            hint="10-60000: a batch goes when it is full or its first call has waited this long."
          >
            {(attributes) => (
              <input
                {...attributes}
                inputMode="numeric"
                value={draft.batchMaxWaitMs}
                onInput={(event) => set({ batchMaxWaitMs: event.currentTarget.value })}
              />
            )}
          </Field>
        </div>
      )}

      <MappingTest onTest={props.onTest} unsaved={props.unsaved} />

      <div class="mapping-actions">
        {index > 0 && (
          <button type="button" class="secondary small" aria-label={`Move mapping ${number} up`} onClick={() => props.onMove(-1)}>
            Move up
          </button>
        )}
        {index < count - 1 && (
          <button type="button" class="secondary small" aria-label={`Move mapping ${number} down`} onClick={() => props.onMove(1)}>
            Move down
          </button>
        )}
        {count > 1 && (
          <button type="button" class="danger small" onClick={props.onRemove}>
            Remove mapping {number}
          </button>
        )}
      </div>
    </fieldset>
  );
}

/** A mapping's headers: name and value rows, each value text or a directive as JSON. */
function MappingHeaders(props: {
  headers: HeaderDraft[];
  number: number;
  /** The mapping's error keys' prefix (`mappings.<index>`). */
  at: string;
  error: (key: string) => string | undefined;
  onChange: (headers: HeaderDraft[]) => void;
}) {
  const { headers, number, at, error, onChange } = props;
  const setHeader = (h: number, change: Partial<HeaderDraft>) =>
    onChange(headers.map((header, i) => (i === h ? { ...header, ...change } : header)));
  return (
    <div class="headers" role="group" aria-label={`Headers of mapping ${number}`}>
      <p class="hint">
        Headers: a value starting with {"{"} is a mapping-kit directive as JSON ({'{"@path": "$.userId"}'}); any other is sent as it is.
      </p>
      {error(`${at}.headers`) && <p class="field-error">{error(`${at}.headers`)}</p>}
      {headers.map((header, h) => (
        <div class="header-row" key={h}>
          <Field label={`Header name ${h + 1}`} error={header.name.trim() ? error(`${at}.headers.${header.name.trim()}`) : undefined}>
            {(attributes) => (
              <input
                {...attributes}
                class="mono"
                value={header.name}
                onInput={(event) => setHeader(h, { name: event.currentTarget.value })}
              />
            )}
          </Field>
          <Field
            label={`Header value ${h + 1}`}
            error={header.name.trim() ? error(`${at}.${headerValueKey(header.name)}`) : undefined}
            hint={MASKED_VALUE.test(header.value) ? "Stored value (masked): kept unless you replace it." : undefined}
          >
            {(attributes) => (
              <input
                {...attributes}
                class="mono"
                spellcheck={false}
                value={header.value}
                onInput={(event) => setHeader(h, { value: event.currentTarget.value })}
              />
            )}
          </Field>
          <button
            type="button"
            class="secondary small"
            aria-label={`Remove header ${h + 1} of mapping ${number}`}
            onClick={() => onChange(headers.filter((_, i) => i !== h))}
          >
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="secondary small" onClick={() => onChange([...headers, { name: "", value: "" }])}>
        Add a header
      </button>
    </div>
  );
}
