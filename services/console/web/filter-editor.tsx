import { useState } from "preact/hooks";
import { Field } from "./components";
import {
  builderOf,
  conditionKey,
  filterOf,
  NUMERIC,
  OPERATORS,
  type Combine,
  type Condition,
  type FilterDraft,
  type FilterMode,
  type Operator,
} from "./call-filter-draft";

const emptyCondition = (): Condition => ({ path: "", op: "equals", value: "" });

/** A condition's value input: its label and hint, by operator. */
function valueHint(op: Operator): string | undefined {
  if (op === "in" || op === "notIn") return 'Comma-separated; quote a value to keep it text ("42").';
  if (NUMERIC.includes(op)) return "A number.";
  if (op === "contains") return "Text (case-sensitive).";
  if (op === "equals" || op === "notEquals") return "Numbers, true, false and null are read as such; quote them for text.";
  return undefined;
}

/**
 * The filter of one connection. `errors` holds this connection's problems by key (filter...);
 * what no input of the current mode shows is shown above them.
 */
export function FilterEditor(props: {
  sourceId: string;
  draft: FilterDraft;
  errors: Map<string, string>;
  onChange: (draft: FilterDraft) => void;
}) {
  const { draft, errors, sourceId } = props;
  const set = (change: Partial<FilterDraft>) => props.onChange({ ...draft, ...change });
  const setCondition = (index: number, change: Partial<Condition>) =>
    set({ conditions: draft.conditions.map((c, i) => (i === index ? { ...c, ...change } : c)) });

  // Keys the builder's inputs show; the rest goes above them (or, for JSON, next to the text).
  const shown = new Set<string>();
  const errorOf = (prefix: string, except?: string): string | undefined => {
    for (const [key, message] of errors)
      if ((key === prefix || key.startsWith(`${prefix}.`)) && !(except && (key === except || key.startsWith(`${except}.`)))) {
        shown.add(key);
        return message;
      }
    return undefined;
  };
  const relative = (key: string) => key.replace(/^filter\.?/, "") || "filter";

  const [note, setNote] = useState<string>();
  const [, setRefused] = useState(0);
  const switchMode = (mode: FilterMode) => {
    if (mode === draft.mode) return;
    if (mode !== "builder") setNote(undefined);
    if (mode === "json") {
      const { filter } = filterOf(draft.mode === "none" ? { ...draft, mode: "builder" } : draft);
      set({ mode, json: filter ? JSON.stringify(filter, null, 2) : draft.json || '{\n  "all": { "filters": [] }\n}' });
    } else if (mode === "builder" && draft.mode === "json") {
      let parsed: unknown;
      try {
        parsed = JSON.parse(draft.json);
      } catch {
        parsed = undefined;
      }
      const flat = parsed ? builderOf(parsed) : undefined;
      if (flat) {
        setNote(undefined);
        set({ mode, combine: flat.combine, conditions: flat.conditions.length > 0 ? flat.conditions : [emptyCondition()] });
      } else if (draft.json.trim() === "") set({ mode, conditions: [emptyCondition()] });
      // Nesting, `not` or a value the builder cannot hold: switching would lose it, so the JSON stays.
      else {
        setNote("This filter is not a flat list of conditions (or is not valid JSON): edit it here, as JSON.");
        // A new render puts the radios back as the mode is, however often this is refused.
        setRefused((count) => count + 1);
      }
    } else
      set({
        mode,
        conditions: mode === "builder" && draft.conditions.length === 0 ? [emptyCondition()] : draft.conditions,
      });
  };

  const builder = draft.mode === "builder" && (
    <>
      <div class="field">
        <label for={`combine-${sourceId}`}>Match</label>
        <select
          id={`combine-${sourceId}`}
          value={draft.combine}
          onChange={(event) => set({ combine: event.currentTarget.value as Combine })}
        >
          <option value="all">all of these conditions</option>
          <option value="any">any of these conditions</option>
        </select>
      </div>
      <p class="hint">
        A path is a text field of the call (type, event, name, category, userId, anonymousId, messageId, groupId, previousId, ...), or a key
        under properties., traits. or context. (dots go deeper: context.app.version).
      </p>
      <ol class="conditions">
        {draft.conditions.map((condition, index) => {
          const key = conditionKey(draft.combine, index);
          const pathError = errorOf(`${key}.path`);
          const valueError = errorOf(`filter.${draft.combine}.filters.${index}`, `${key}.path`);
          const needsValue = condition.op !== "exists" && condition.op !== "absent";
          return (
            <li key={index} class="condition-row">
              <Field label={`Path ${index + 1}`} error={pathError}>
                {(attributes) => (
                  <input
                    {...attributes}
                    class="mono"
                    value={condition.path}
                    placeholder="properties.revenue"
                    onInput={(event) => setCondition(index, { path: event.currentTarget.value })}
                  />
                )}
              </Field>
              <Field label={`Test ${index + 1}`}>
                {(attributes) => (
                  <select
                    {...attributes}
                    value={condition.op}
                    onChange={(event) => setCondition(index, { op: event.currentTarget.value as Operator })}
                  >
                    {OPERATORS.map((operator) => (
                      <option key={operator.op} value={operator.op}>
                        {operator.label}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              {needsValue ? (
                <Field label={`Value ${index + 1}`} error={valueError} hint={valueHint(condition.op)}>
                  {(attributes) => (
                    <input
                      {...attributes}
                      class="mono"
                      value={condition.value}
                      onInput={(event) => setCondition(index, { value: event.currentTarget.value })}
                    />
                  )}
                </Field>
              ) : (
                <div>{valueError && <p class="field-error">{valueError}</p>}</div>
              )}
              <button
                type="button"
                class="secondary small"
                aria-label={`Remove condition ${index + 1} of ${sourceId}`}
                onClick={() => set({ conditions: draft.conditions.filter((_, i) => i !== index) })}
              >
                Remove
              </button>
            </li>
          );
        })}
      </ol>
      <button type="button" class="secondary small" onClick={() => set({ conditions: [...draft.conditions, emptyCondition()] })}>
        Add a condition
      </button>
    </>
  );

  const jsonError =
    draft.mode === "json" && errors.size > 0
      ? [...errors].map(([key, message]) => (key === "filter" ? message : `${relative(key)}: ${message}`)).join("; ")
      : undefined;
  const json = draft.mode === "json" && (
    <Field
      label={`Filter of ${sourceId} as JSON`}
      error={jsonError}
      hint='A CallFilter in proto3 JSON, e.g. {"not": {"field": {"path": "event", "in": ["Ping", "Heartbeat"]}}}. Nesting: at most 8 levels, 100 conditions.'
    >
      {(attributes) => (
        <textarea
          {...attributes}
          class="mono"
          rows={8}
          spellcheck={false}
          value={draft.json}
          onInput={(event) => set({ json: event.currentTarget.value })}
        />
      )}
    </Field>
  );

  // Rendered first so the inputs claim their errors; what is left is shown above them.
  const body = (
    <>
      {builder}
      {json}
    </>
  );
  const leftOver = draft.mode === "builder" ? [...errors].filter(([key]) => !shown.has(key)) : [];
  return (
    <fieldset class="filter" aria-label={`Filter of ${sourceId}`}>
      <legend>Which calls of {sourceId} are sent here</legend>
      <div class="radios" role="radiogroup" aria-label={`Filter mode of ${sourceId}`}>
        {(
          [
            ["none", "All calls"],
            ["builder", "Calls matching conditions"],
            ["json", "Filter as JSON (nested)"],
          ] as const
        ).map(([mode, label]) => (
          <div class="check" key={mode}>
            <input
              type="radio"
              id={`filter-mode-${sourceId}-${mode}`}
              name={`filter-mode-${sourceId}`}
              checked={draft.mode === mode}
              onChange={() => switchMode(mode)}
            />
            <label for={`filter-mode-${sourceId}-${mode}`}>{label}</label>
          </div>
        ))}
      </div>
      {note && (
        <p class="hint" role="status">
          {note}
        </p>
      )}
      {leftOver.length > 0 && (
        <p class="field-error" role="alert">
          {leftOver.map(([key, message]) => (key === "filter" ? message : `${relative(key)}: ${message}`)).join("; ")}
        </p>
      )}
      {body}
    </fieldset>
  );
}
