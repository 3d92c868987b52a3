/**
 * A connection's filter (CallFilter, proto3 JSON) as the destination form edits it: none, a flat
 * list of conditions combined with all / any (the common case, as a builder), or any filter as
 * JSON (nesting, not). Keys of problems are the service's paths ("filter.all.filters.2.field.path"),
 * so a refusal lands next to the input it names. Pure: no DOM, so it is unit-tested in Node.
 */

import type * as json from "@switchyard/contracts/json";

/**
 * A connection's filter: the generated proto3 JSON message with exactly one of its members set
 * (the oneof), each nested filter read the same way.
 */
export type CallFilter = { [K in keyof json.CallFilter]-?: { [P in K]: FilterMember<P> } }[keyof json.CallFilter];
type FilterMember<K extends keyof json.CallFilter> = K extends "not"
  ? CallFilter
  : K extends "field"
    ? FieldCondition
    : { filters?: CallFilter[] };

/** A test of one field (the generated message): its path and exactly one test. */
export type FieldCondition = json.FieldCondition & { path: string };

export type FilterMode = "none" | "builder" | "json";
export type Combine = "all" | "any";

/** The tests a condition can make; "absent" is `exists: false`. */
export const OPERATORS = [
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
const NUMERIC_OPERATORS = ["greaterThan", "greaterOrEqual", "lessThan", "lessOrEqual"] as const satisfies readonly Operator[];
export const NUMERIC: readonly Operator[] = NUMERIC_OPERATORS;
const isNumeric = (op: Operator): op is (typeof NUMERIC_OPERATORS)[number] => NUMERIC.includes(op);
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
  return (text.match(/\s*"(?:[^"\\]|\\.)*"\s*|[^,]+/g) ?? [])
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

export function builderOf(filter: unknown): FilterDraft | undefined {
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
    else if (isNumeric(condition.op)) {
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
