import { FILTER_FIELD_NAMES, FILTER_OBJECT_NAMES } from "@switchyard/calls";
import type { configApi } from "@switchyard/contracts";
import { z } from "zod";

/*
 * A connection's filter (switchyard.v1.CallFilter): which of the source's calls the destination
 * receives. Stored, in the workspace file and in the KV record, as the proto3 JSON of CallFilter
 * (lowerCamelCase names; the proto's snake_case names are accepted too and stored camelCase):
 *
 *   {"all":{"filters":[{"field":{"path":"type","equals":"track"}},
 *                      {"field":{"path":"properties.revenue","greaterThan":0}}]}}
 *
 * This module holds its rules (checked when a filter is saved) and its conversion from and to
 * the gRPC message; delivery compiles it into a test over a call's bytes (the semantics are
 * stated in proto/switchyard/v1/config.proto and docs/api.md, "Destination filters").
 */

/** A value a condition compares with: objects and lists are not compared. */
export type FilterValue = string | number | boolean | null;

/** The test of a FieldCondition: exactly one of these. */
export type FieldTest =
  | { equals: FilterValue }
  | { notEquals: FilterValue }
  | { exists: boolean }
  | { in: FilterValue[] }
  | { notIn: FilterValue[] }
  | { greaterThan: number }
  | { greaterOrEqual: number }
  | { lessThan: number }
  | { lessOrEqual: number }
  | { contains: string };

/** A test of one field of the call, named by its path as the webhook body spells it. */
export type FieldCondition = { path: string } & FieldTest;

/** A connection's filter, as stored: exactly one of all, any, not, field. */
export type CallFilter =
  { all: { filters: CallFilter[] } } | { any: { filters: CallFilter[] } } | { not: CallFilter } | { field: FieldCondition };

/** How deeply filters may nest (the outermost filter is level 1). */
export const MAX_FILTER_DEPTH = 8;
/** Most field conditions one filter holds, at every level together. */
export const MAX_FILTER_CONDITIONS = 100;
/** Most values an `in` or `notIn` list holds. */
export const MAX_FILTER_LIST_VALUES = 1000;
/** Longest path. */
export const MAX_FILTER_PATH_CHARS = 256;
/** Largest filter as stored: a connection record must fit in one bus message with room to spare. */
export const MAX_FILTER_BYTES = 256 * 1024;

export { FILTER_FIELD_NAMES, FILTER_OBJECT_NAMES };
/** The rule every path follows, as error messages state it. */
export const FILTER_PATH_RULE =
  `must be ${FILTER_FIELD_NAMES.map((name) => JSON.stringify(name)).join(", ")}, ` +
  `or start with ${orList(FILTER_OBJECT_NAMES.map((name) => JSON.stringify(`${name}.`)))} followed by keys separated by dots (none empty)`;

function orList(items: readonly string[]): string {
  return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

const FILTER_KINDS = ["all", "any", "not", "field"] as const;
const KIND_RULE = `give exactly one of ${FILTER_KINDS.map((kind) => JSON.stringify(kind)).join(", ")}`;

/** Each test by its JSON name, and the proto's own (snake_case) name where it differs. */
const TESTS = [
  "equals",
  "notEquals",
  "exists",
  "in",
  "notIn",
  "greaterThan",
  "greaterOrEqual",
  "lessThan",
  "lessOrEqual",
  "contains",
] as const;
type TestName = (typeof TESTS)[number];
const TEST_ALIASES: Record<string, TestName> = {
  not_equals: "notEquals",
  not_in: "notIn",
  greater_than: "greaterThan",
  greater_or_equal: "greaterOrEqual",
  less_than: "lessThan",
  less_or_equal: "lessOrEqual",
};
const TEST_RULE = `give exactly one test: ${TESTS.map((test) => JSON.stringify(test)).join(", ")}`;

const SCALAR_RULE = "must be a string, a finite number, true, false or null (objects and lists cannot be compared)";
const TEXT_RULE = "must be valid Unicode text (no lone surrogates)";

/** Whether a path names a field a filter can test (see FILTER_PATH_RULE). */
export function isFilterPath(path: string): boolean {
  if ((FILTER_FIELD_NAMES as readonly string[]).includes(path)) return true;
  const dot = path.indexOf(".");
  if (dot < 0 || !(FILTER_OBJECT_NAMES as readonly string[]).includes(path.slice(0, dot))) return false;
  return path
    .slice(dot + 1)
    .split(".")
    .every((key) => key !== "");
}

type Path = (string | number)[];
type Report = (path: Path, message: string) => void;

/** What a walk over a filter has seen so far. */
interface Walk {
  report: Report;
  conditions: number;
}

/**
 * A connection's filter, checked: every rule broken is reported with the path of the part that
 * breaks it (e.g. `all.filters.2.field.path`). Nesting deeper than MAX_FILTER_DEPTH is reported
 * where it starts, and not walked further, so no input can make the walk itself too deep.
 */
export const callFilterSchema: z.ZodType<CallFilter, unknown> = z.unknown().transform((input, ctx) => {
  const walk: Walk = {
    report: (path, message) => ctx.addIssue({ code: "custom", path, message }),
    conditions: 0,
  };
  const filter = readFilter(input, [], 1, walk);
  if (walk.conditions > MAX_FILTER_CONDITIONS) {
    walk.report([], `holds ${walk.conditions} conditions; at most ${MAX_FILTER_CONDITIONS}`);
  }
  if (ctx.issues.length > 0 || filter === undefined) return z.NEVER;
  const bytes = Buffer.byteLength(JSON.stringify(filter));
  if (bytes > MAX_FILTER_BYTES) {
    walk.report([], `takes ${bytes} bytes as stored; at most ${MAX_FILTER_BYTES}`);
    return z.NEVER;
  }
  return filter;
});

/** Whether text has no lone surrogate (which UTF-8 cannot carry, so no call's text ever equals it). */
function wellFormed(text: string): boolean {
  return !/\p{Cs}/u.test(text);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readFilter(input: unknown, path: Path, depth: number, walk: Walk): CallFilter | undefined {
  if (depth > MAX_FILTER_DEPTH) {
    walk.report(path, `nests deeper than ${MAX_FILTER_DEPTH} levels`);
    return undefined;
  }
  if (!isObject(input)) {
    walk.report(path, `must be an object: ${KIND_RULE}`);
    return undefined;
  }
  const keys = Object.keys(input);
  const unknown = keys.filter((key) => !(FILTER_KINDS as readonly string[]).includes(key));
  for (const key of unknown) walk.report([...path, key], `is not a kind of filter: ${KIND_RULE}`);
  const kinds = keys.filter((key) => (FILTER_KINDS as readonly string[]).includes(key));
  if (kinds.length !== 1) {
    if (unknown.length === 0) walk.report(path, kinds.length === 0 ? KIND_RULE : `${KIND_RULE} (got ${kinds.join(" and ")})`);
    return undefined;
  }
  const kind = kinds[0] as (typeof FILTER_KINDS)[number];
  const value = input[kind];
  switch (kind) {
    case "all":
    case "any": {
      const filters = readList(value, [...path, kind], depth, walk);
      if (!filters || unknown.length > 0) return undefined;
      return kind === "all" ? { all: { filters } } : { any: { filters } };
    }
    case "not": {
      const inner = readFilter(value, [...path, "not"], depth + 1, walk);
      return inner && unknown.length === 0 ? { not: inner } : undefined;
    }
    case "field": {
      walk.conditions++;
      const field = readCondition(value, [...path, "field"], walk);
      return field && unknown.length === 0 ? { field } : undefined;
    }
  }
}

function readList(input: unknown, path: Path, depth: number, walk: Walk): CallFilter[] | undefined {
  if (!isObject(input)) {
    walk.report(path, 'must be an object: {"filters": [...]}');
    return undefined;
  }
  let ok = true;
  for (const key of Object.keys(input)) {
    if (key === "filters") continue;
    walk.report([...path, key], 'is not a field of a filter list: only "filters"');
    ok = false;
  }
  const list = input.filters ?? [];
  if (!Array.isArray(list)) {
    walk.report([...path, "filters"], "must be a list of filters");
    return undefined;
  }
  const filters: CallFilter[] = [];
  list.forEach((item, index) => {
    const filter = readFilter(item, [...path, "filters", index], depth + 1, walk);
    if (filter) filters.push(filter);
    else ok = false;
  });
  return ok ? filters : undefined;
}

function readCondition(input: unknown, path: Path, walk: Walk): FieldCondition | undefined {
  if (!isObject(input)) {
    walk.report(path, `must be an object: {"path": ..., and one test}`);
    return undefined;
  }
  let ok = true;
  const conditionPath = input.path;
  if (typeof conditionPath !== "string" || !isFilterPath(conditionPath)) {
    walk.report([...path, "path"], FILTER_PATH_RULE);
    ok = false;
  } else if (conditionPath.length > MAX_FILTER_PATH_CHARS) {
    walk.report([...path, "path"], `must be at most ${MAX_FILTER_PATH_CHARS} characters`);
    ok = false;
  } else if (!wellFormed(conditionPath)) {
    walk.report([...path, "path"], TEXT_RULE);
    ok = false;
  }
  const tests: [TestName, string][] = [];
  for (const key of Object.keys(input)) {
    if (key === "path") continue;
    const test = (TESTS as readonly string[]).includes(key) ? (key as TestName) : TEST_ALIASES[key];
    if (test) tests.push([test, key]);
    else {
      walk.report([...path, key], `is not a test: ${TEST_RULE}`);
      ok = false;
    }
  }
  if (tests.length !== 1) {
    if (ok) walk.report(path, tests.length === 0 ? TEST_RULE : `${TEST_RULE} (got ${tests.map(([, key]) => key).join(" and ")})`);
    return undefined;
  }
  const [test, key] = tests[0]!;
  const value = readTestValue(test, input[key], [...path, key], walk);
  if (!ok || value === INVALID) return undefined;
  return { path: conditionPath as string, [test]: value } as FieldCondition;
}

const INVALID = Symbol("invalid");

function readTestValue(test: TestName, value: unknown, path: Path, walk: Walk): unknown {
  switch (test) {
    case "equals":
    case "notEquals":
      return readScalar(value, path, walk);
    case "exists":
      if (typeof value === "boolean") return value;
      walk.report(path, "must be true or false");
      return INVALID;
    case "in":
    case "notIn": {
      if (!Array.isArray(value)) {
        walk.report(path, "must be a list of strings, numbers, booleans or nulls");
        return INVALID;
      }
      if (value.length > MAX_FILTER_LIST_VALUES) {
        walk.report(path, `holds ${value.length} values; at most ${MAX_FILTER_LIST_VALUES}`);
        return INVALID;
      }
      const values = value.map((item, index) => readScalar(item, [...path, index], walk));
      return values.includes(INVALID) ? INVALID : values;
    }
    case "greaterThan":
    case "greaterOrEqual":
    case "lessThan":
    case "lessOrEqual":
      if (typeof value === "number" && Number.isFinite(value)) return value;
      walk.report(path, "must be a finite number");
      return INVALID;
    case "contains":
      if (typeof value !== "string" || value === "") {
        walk.report(path, "must be a non-empty string");
        return INVALID;
      }
      if (!wellFormed(value)) {
        walk.report(path, TEXT_RULE);
        return INVALID;
      }
      return value;
  }
}

function readScalar(value: unknown, path: Path, walk: Walk): FilterValue | typeof INVALID {
  if (value === null || typeof value === "boolean") return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "string") {
    if (wellFormed(value)) return value;
    walk.report(path, TEXT_RULE);
    return INVALID;
  }
  walk.report(path, SCALAR_RULE);
  return INVALID;
}

/**
 * A CallFilter message (ConnectRequest.filter) as the JSON form the schema checks. Kept as it
 * came, so the schema reports what is wrong with it: a filter or condition with nothing set
 * becomes an empty object, an empty Value `undefined`.
 */
export function callFilterJsonOf(message: configApi.CallFilter): unknown {
  const filter = message.filter;
  switch (filter?.$case) {
    case undefined:
      return {};
    case "all":
    case "any":
      return { [filter.$case]: { filters: filter.value.filters.map(callFilterJsonOf) } };
    case "not":
      return { not: callFilterJsonOf(filter.value) };
    case "field": {
      const test = filter.value.test;
      return { field: { path: filter.value.path, ...(test ? { [test.$case]: test.value } : {}) } };
    }
  }
}

/** A stored filter as the CallFilter message reads return. */
export function callFilterMessageOf(filter: CallFilter): configApi.CallFilter {
  if ("all" in filter) return { filter: { $case: "all", value: { filters: filter.all.filters.map(callFilterMessageOf) } } };
  if ("any" in filter) return { filter: { $case: "any", value: { filters: filter.any.filters.map(callFilterMessageOf) } } };
  if ("not" in filter) return { filter: { $case: "not", value: callFilterMessageOf(filter.not) } };
  const { path, ...test } = filter.field;
  const [name, value] = Object.entries(test)[0] as [TestName, unknown];
  return { filter: { $case: "field", value: { path, test: { $case: name, value } as configApi.FieldCondition["test"] } } };
}
