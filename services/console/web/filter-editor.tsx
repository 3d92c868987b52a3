import type { CallFilter, FieldCondition } from "./api";
import { Field } from "./components";

/**
 * A connection's filter (CallFilter, proto3 JSON) as the destination form edits it: none, a flat
 * list of conditions combined with all / any (the common case, as a builder), or any filter as
 * JSON (nesting, not). Keys of errors are the service's paths ("filter.all.filters.2.field.path"),
 * so a refusal lands next to the input it names.
 */

export type FilterMode = "none" | "builder" | "json";
export type Combine = "all" | "any";

/** The tests a condition can make; "absent" is `exists: false`. */
const OPERATORS = [
  { op: "equals", label: "equals" },
  { op: "notEquals", label: "does not equal" },
  { op: "exists", label: "exists" },
  { op: "absent", label: "is absent" },
  { op: "in", label: "is one of" },
  { op: "notIn", label: "is none of" },
  { op: "greaterThan", label: ">" },
  { op: "greaterOrEqual", label: "≥" },
  { op: "lessThan", label: "<" },
  { op: "lessOrEqual", label: "≤" },
  { op: "contains", label: "contains" },
] as const;
export type Operator = (typeof OPERATORS)[number]["op"];
const NUMERIC: Operator[] = ["greaterThan", "greaterOrEqual", "lessThan", "lessOrEqual"];
const TEST_NAMES = ["equals", "notEquals", "exists", "in", "notIn", "greaterThan", "greaterOrEqual", "lessThan", "lessOrEqual", "contains"];
/** The proto's snake_case names, which proto3 JSON accepts too. */
const SNAKE: Record<string, string> = {
  not_equals: "notEquals",
  not_in: "notIn",
  greater_than: "greaterThan",
  greater_or_equal: "greaterOrEqual",
  less_than: "lessThan",
  less_or_equal: "lessOrEqual",
};

export interface Condition {
  path: string;
  op: Operator;
  /** As typed: a scalar, a comma-separated list (in, not in), a number, or text (contains). */
  value: string;
}

export interface FilterDraft {
  mode: FilterMode;
  combine: Combine;
  conditions: Condition[];
  json: string;
}

type Scalar = string | number | boolean | null;

/** Text as a value: a JSON number, true, false, null or "quoted text" as that; anything else as text. */
export function parseScalar(text: string): Scalar {
  const trimmed = text.trim();
  if (/^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null|"(?:[^"\\]|\\.)*")$/.test(trimmed)) return JSON.parse(trimmed) as Scalar;
  return text;
}

/** A value as parseScalar reads it back: text that would read as something else is quoted. */
export function formatScalar(value: unknown): string {
  if (typeof value === "string") return parseScalar(value) === value ? value : JSON.stringify(value);
  return JSON.stringify(value);
}

/** "a, 42, \"7\"" as a list; quoted values may hold commas. */
export function parseList(text: string): Scalar[] {
  return (text.match(/"(?:[^"\\]|\\.)*"|[^,]+/g) ?? [])
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map(parseScalar);
}

function conditionOf(field: Record<string, unknown>): Condition | undefined {
  const tests = Object.keys(field).filter((key) => key !== "path");
  if (typeof field.path !== "string" || tests.length !== 1) return undefined;
  const test = SNAKE[tests[0]!] ?? tests[0]!;
  const value = field[tests[0]!];
  const path = field.path;
  if (test === "exists") return typeof value === "boolean" ? { path, op: value ? "exists" : "absent", value: "" } : undefined;
  if (test === "in" || test === "notIn")
    return Array.isArray(value) && value.every((v) => v === null || typeof v !== "object")
      ? { path, op: test, value: value.map(formatScalar).join(", ") }
      : undefined;
  if (NUMERIC.includes(test as Operator))
    return typeof value === "number" ? { path, op: test as Operator, value: String(value) } : undefined;
  if (test === "contains") return typeof value === "string" ? { path, op: "contains", value } : undefined;
  if (test === "equals" || test === "notEquals")
    return value === null || typeof value !== "object" ? { path, op: test, value: formatScalar(value) } : undefined;
  return undefined;
}

/** The draft of a stored filter: the builder when it is a flat list (or one condition), JSON otherwise. */
export function draftOf(filter: CallFilter | undefined): FilterDraft {
  const empty: FilterDraft = { mode: "none", combine: "all", conditions: [], json: "" };
  if (!filter) return empty;
  const json = JSON.stringify(filter, null, 2);
  const flat = builderOf(filter);
  return flat ? { ...flat, json } : { ...empty, mode: "json", json };
}

function builderOf(filter: unknown): FilterDraft | undefined {
  if (typeof filter !== "object" || filter === null) return undefined;
  const record = filter as Record<string, unknown>;
  if ("field" in record && typeof record.field === "object" && record.field !== null) {
    const condition = conditionOf(record.field as Record<string, unknown>);
    return condition ? { mode: "builder", combine: "all", conditions: [condition], json: "" } : undefined;
  }
  const combine: Combine | undefined = "all" in record ? "all" : "any" in record ? "any" : undefined;
  if (!combine || Object.keys(record).length !== 1) return undefined;
  const filters = ((record[combine] as { filters?: unknown[] } | undefined)?.filters ?? []) as unknown[];
  const conditions: Condition[] = [];
  for (const part of filters) {
    const field = (part as { field?: Record<string, unknown> } | null)?.field;
    if (!field || Object.keys(part as object).length !== 1) return undefined;
    const condition = conditionOf(field);
    if (!condition) return undefined;
    conditions.push(condition);
  }
  return { mode: "builder", combine, conditions, json: "" };
}

/** Where the builder's condition `index` is, as the service names it. */
export const conditionKey = (combine: Combine, index: number) => `filter.${combine}.filters.${index}.field`;

/** The filter a draft makes, or the problems the page can tell at once (keyed as the service would). */
export function filterOf(draft: FilterDraft): { filter: CallFilter | undefined; problems: Map<string, string> } {
  const problems = new Map<string, string>();
  if (draft.mode === "none") return { filter: undefined, problems };
  if (draft.mode === "json") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(draft.json);
    } catch (error) {
      problems.set("filter", `not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
      return { filter: undefined, problems };
    }
    // Proto3 JSON readers drop names they do not know: a misspelt one would silently change the filter.
    checkNames(parsed, "filter", problems);
    return { filter: problems.size === 0 ? (parsed as CallFilter) : undefined, problems };
  }
  if (draft.conditions.length === 0) problems.set("filter", "add a condition, or choose “All calls”");
  const filters = draft.conditions.map((condition, index): CallFilter => {
    const key = conditionKey(draft.combine, index);
    const field: FieldCondition = { path: condition.path.trim() };
    if (condition.op === "exists" || condition.op === "absent") field.exists = condition.op === "exists";
    else if (condition.op === "in" || condition.op === "notIn") field[condition.op] = parseList(condition.value);
    else if (NUMERIC.includes(condition.op)) {
      const number = Number(condition.value);
      if (condition.value.trim() === "" || !Number.isFinite(number)) problems.set(`${key}.${condition.op}`, "must be a number");
      field[condition.op] = number;
    } else if (condition.op === "contains") field.contains = condition.value;
    else field[condition.op] = parseScalar(condition.value);
    return { field };
  });
  return { filter: draft.combine === "all" ? { all: { filters } } : { any: { filters } }, problems };
}

function checkNames(value: unknown, path: string, problems: Map<string, string>): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problems.set(path, "must be an object with one of all, any, not, field");
    return;
  }
  for (const [key, inner] of Object.entries(value)) {
    if (key === "all" || key === "any") {
      const filters = (inner as { filters?: unknown } | null)?.filters;
      const extra = Object.keys((inner as object | null) ?? {}).filter((name) => name !== "filters");
      if (extra.length > 0) problems.set(`${path}.${key}`, `unknown name ${JSON.stringify(extra[0])}; a list has only "filters"`);
      if (Array.isArray(filters)) filters.forEach((item, index) => checkNames(item, `${path}.${key}.filters.${index}`, problems));
    } else if (key === "not") checkNames(inner, `${path}.not`, problems);
    else if (key === "field") {
      for (const name of Object.keys((inner as object | null) ?? {}))
        if (name !== "path" && !TEST_NAMES.includes(SNAKE[name] ?? name))
          problems.set(`${path}.field`, `unknown name ${JSON.stringify(name)}; give "path" and one of ${TEST_NAMES.join(", ")}`);
    } else problems.set(path, `unknown name ${JSON.stringify(key)}; give one of all, any, not, field`);
  }
}

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

  const switchMode = (mode: FilterMode) => {
    if (mode === draft.mode) return;
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
      set(flat ? { mode, combine: flat.combine, conditions: flat.conditions } : { mode, conditions: draft.conditions });
    } else
      set({
        mode,
        conditions: mode === "builder" && draft.conditions.length === 0 ? [{ path: "", op: "equals", value: "" }] : draft.conditions,
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
      <ol class="conditions">
        {draft.conditions.map((condition, index) => {
          const key = conditionKey(draft.combine, index);
          const pathError = errorOf(`${key}.path`);
          const valueError = errorOf(`filter.${draft.combine}.filters.${index}`, `${key}.path`);
          const needsValue = condition.op !== "exists" && condition.op !== "absent";
          return (
            <li key={index} class="condition-row">
              <Field
                label={`Path ${index + 1}`}
                error={pathError}
                hint={index === 0 ? "type, event, name, userId, … or properties.x, traits.x, context.x" : undefined}
              >
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
                valueError && <p class="field-error">{valueError}</p>
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
      <button
        type="button"
        class="secondary small"
        onClick={() => set({ conditions: [...draft.conditions, { path: "", op: "equals", value: "" }] })}
      >
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
      {leftOver.length > 0 && (
        <p class="field-error" role="alert">
          {leftOver.map(([key, message]) => (key === "filter" ? message : `${relative(key)}: ${message}`)).join("; ")}
        </p>
      )}
      {body}
    </fieldset>
  );
}
