import { describe, expect, it } from "vitest";
import type { configApi } from "@switchyard/contracts";
import { callFilterJsonOf, callFilterMessageOf, callFilterSchema, FILTER_PATH_RULE, type CallFilter } from "./call-filter.js";
import { describeIssues, workspaceFileSchema } from "./schema.js";

/** The "path: rule" lines a filter is refused with (prefixed as in a ConnectRequest). */
function problems(filter: unknown): string[] {
  const parsed = callFilterSchema.safeParse(filter);
  if (parsed.success) throw new Error(`accepted ${JSON.stringify(filter)}`);
  return describeIssues(parsed.error, "filter");
}

const field = (path: string, test: Record<string, unknown>) => ({ field: { path, ...test } });
const nested = (levels: number): unknown => (levels === 1 ? field("type", { equals: "track" }) : { not: nested(levels - 1) });

describe("callFilterSchema", () => {
  it("accepts every kind and test, and stores the proto's snake_case names in camelCase", () => {
    const filter = {
      any: {
        filters: [
          { all: { filters: [field("type", { equals: "track" }), field("properties.revenue", { greater_than: 0 })] } },
          { not: field("context.app.version", { exists: false }) },
          field("event", { in: ["Order Completed", 1, true, null] }),
          field("traits.plan", { not_in: ["free"] }),
          field("userId", { not_equals: "" }),
          field("properties.items", { less_or_equal: 5 }),
          field("properties.items", { greaterOrEqual: 1, path: "properties.items" }),
          field("name", { contains: "Check" }),
          field("anonymousId", { lessThan: 3 }),
          { all: {} },
        ],
      },
    };
    const parsed = callFilterSchema.parse(filter);
    expect(parsed).toEqual({
      any: {
        filters: [
          { all: { filters: [field("type", { equals: "track" }), field("properties.revenue", { greaterThan: 0 })] } },
          { not: field("context.app.version", { exists: false }) },
          field("event", { in: ["Order Completed", 1, true, null] }),
          field("traits.plan", { notIn: ["free"] }),
          field("userId", { notEquals: "" }),
          field("properties.items", { lessOrEqual: 5 }),
          field("properties.items", { greaterOrEqual: 1 }),
          field("name", { contains: "Check" }),
          field("anonymousId", { lessThan: 3 }),
          { all: { filters: [] } },
        ],
      },
    });
    // What is stored reads back the same.
    expect(callFilterSchema.parse(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
  });

  it("refuses a path the body does not have, naming where it is", () => {
    const filter = {
      all: { filters: [field("type", { equals: "track" }), field("event", { exists: true }), field("revenue", { greaterThan: 0 })] },
    };
    expect(problems(filter)).toEqual([`filter.all.filters.2.field.path: ${FILTER_PATH_RULE}`]);
    // The names come from the Call model: every text field of a call, each payload's included.
    for (const name of ["type", "messageId", "userId", "anonymousId", "event", "name", "category", "groupId", "previousId"]) {
      expect(FILTER_PATH_RULE).toContain(`"${name}", `);
    }
    expect(FILTER_PATH_RULE).toMatch(
      /^must be "type", .* or start with "traits\.", "properties\." or "context\." followed by keys separated by dots \(none empty\)$/,
    );
    for (const path of ["", "properties", "properties.", "context..app", "Previous ID", "timestamp", "integrations.All", 7]) {
      expect(problems(field(path as string, { exists: true })), String(path)).toEqual([`filter.field.path: ${FILTER_PATH_RULE}`]);
    }
    expect(problems(field(`properties.${"k".repeat(300)}`, { exists: true }))).toEqual([
      "filter.field.path: must be at most 256 characters",
    ]);
  });

  it("refuses anything but exactly one kind of filter, and exactly one test", () => {
    expect(problems({})).toEqual(['filter: give exactly one of "all", "any", "not", "field"']);
    expect(problems({ all: { filters: [] }, any: { filters: [] } })).toEqual([
      'filter: give exactly one of "all", "any", "not", "field" (got all and any)',
    ]);
    expect(problems({ none: {} })).toEqual(['filter.none: is not a kind of filter: give exactly one of "all", "any", "not", "field"']);
    expect(problems("type == track")).toEqual(['filter: must be an object: give exactly one of "all", "any", "not", "field"']);
    expect(problems({ all: [] })).toEqual(['filter.all: must be an object: {"filters": [...]}']);
    expect(problems({ any: { filters: {} } })).toEqual(["filter.any.filters: must be a list of filters"]);
    expect(problems({ any: { filter: [] } })).toEqual(['filter.any.filter: is not a field of a filter list: only "filters"']);
    const tests = '"equals", "notEquals", "exists", "in", "notIn", "greaterThan", "greaterOrEqual", "lessThan", "lessOrEqual", "contains"';
    expect(problems(field("type", {}))).toEqual([`filter.field: give exactly one test: ${tests}`]);
    expect(problems(field("type", { equals: "track", exists: true }))).toEqual([
      `filter.field: give exactly one test: ${tests} (got equals and exists)`,
    ]);
    expect(problems(field("type", { equal: "track" }))).toEqual([`filter.field.equal: is not a test: give exactly one test: ${tests}`]);
  });

  it("refuses values a test cannot use", () => {
    const scalar = "must be a string, a finite number, true, false or null (objects and lists cannot be compared)";
    expect(problems(field("type", { equals: { a: 1 } }))).toEqual([`filter.field.equals: ${scalar}`]);
    expect(problems(field("type", { notEquals: [1] }))).toEqual([`filter.field.notEquals: ${scalar}`]);
    expect(problems(field("type", { equals: undefined }))).toEqual([`filter.field.equals: ${scalar}`]);
    expect(problems(field("type", { in: "track" }))).toEqual(["filter.field.in: must be a list of strings, numbers, booleans or nulls"]);
    expect(problems(field("type", { notIn: ["a", {}] }))).toEqual([`filter.field.notIn.1: ${scalar}`]);
    expect(problems(field("type", { in: Array.from({ length: 1001 }, (_, i) => i) }))).toEqual([
      "filter.field.in: holds 1001 values; at most 1000",
    ]);
    expect(problems(field("properties.n", { greaterThan: "1" }))).toEqual(["filter.field.greaterThan: must be a finite number"]);
    expect(problems(field("properties.n", { lessThan: Number.NaN }))).toEqual(["filter.field.lessThan: must be a finite number"]);
    expect(problems(field("properties.n", { exists: "yes" }))).toEqual(["filter.field.exists: must be true or false"]);
    expect(problems(field("properties.n", { contains: "" }))).toEqual(["filter.field.contains: must be a non-empty string"]);
    expect(problems(field("properties.n", { equals: "a\ud800" }))).toEqual([
      "filter.field.equals: must be valid Unicode text (no lone surrogates)",
    ]);
  });

  it("takes 8 levels and 100 conditions, no more, without walking deeper", () => {
    expect(callFilterSchema.safeParse(nested(8)).success).toBe(true);
    expect(problems(nested(9))).toEqual([`filter${".not".repeat(8)}: nests deeper than 8 levels`]);
    // Far deeper than any stack: refused where it passes the limit, the rest never walked.
    expect(problems(nested(5000))).toEqual([`filter${".not".repeat(8)}: nests deeper than 8 levels`]);
    const conditions = (count: number) => ({ all: { filters: Array.from({ length: count }, () => field("type", { exists: true })) } });
    expect(callFilterSchema.safeParse(conditions(100)).success).toBe(true);
    expect(problems(conditions(101))).toEqual(["filter: holds 101 conditions; at most 100"]);
  });

  it("refuses a filter over 256 KiB as stored", () => {
    const big = {
      any: { filters: Array.from({ length: 100 }, () => field("event", { in: Array.from({ length: 1000 }, (_, i) => `event ${i}`) })) },
    };
    expect(problems(big)).toEqual([expect.stringMatching(/^filter: takes \d+ bytes as stored; at most 262144$/)]);
  });

  it("in a workspace file, names the connection", () => {
    const parsed = workspaceFileSchema.safeParse({
      sources: [{ id: "web", writeKeys: ["wk_web_0123456789"] }],
      destinations: [{ id: "hook", settings: { webhooks: [{ url: "https://hooks.example/in" }] } }],
      connections: [
        {
          sourceId: "web",
          destinationId: "hook",
          filter: { all: { filters: [field("type", { equals: "track" }), field("revenue", { exists: true })] } },
        },
      ],
    });
    expect(parsed.success).toBe(false);
    expect(describeIssues(parsed.error!)).toEqual([`connections.0.filter.all.filters.1.field.path: ${FILTER_PATH_RULE}`]);
  });
});

describe("callFilterJsonOf and callFilterMessageOf", () => {
  it("carry a message to the stored form and back unchanged", () => {
    const message: configApi.CallFilter = {
      filter: {
        $case: "all",
        value: {
          filters: [
            { filter: { $case: "field", value: { path: "type", test: { $case: "equals", value: "track" } } } },
            {
              filter: {
                $case: "not",
                value: { filter: { $case: "field", value: { path: "userId", test: { $case: "exists", value: false } } } },
              },
            },
            { filter: { $case: "any", value: { filters: [] } } },
            { filter: { $case: "field", value: { path: "properties.plan", test: { $case: "notIn", value: ["free", null] } } } },
            { filter: { $case: "field", value: { path: "properties.revenue", test: { $case: "greaterOrEqual", value: 0.5 } } } },
            { filter: { $case: "field", value: { path: "context.tags", test: { $case: "contains", value: "vip" } } } },
          ],
        },
      },
    };
    const stored: CallFilter = callFilterSchema.parse(callFilterJsonOf(message));
    expect(stored).toEqual({
      all: {
        filters: [
          field("type", { equals: "track" }),
          { not: field("userId", { exists: false }) },
          { any: { filters: [] } },
          field("properties.plan", { notIn: ["free", null] }),
          field("properties.revenue", { greaterOrEqual: 0.5 }),
          field("context.tags", { contains: "vip" }),
        ],
      },
    });
    expect(callFilterMessageOf(stored)).toEqual(message);
  });

  it("keep an empty message empty, so the schema names what is missing", () => {
    expect(problems(callFilterJsonOf({ filter: undefined }))).toEqual(['filter: give exactly one of "all", "any", "not", "field"']);
    expect(problems(callFilterJsonOf({ filter: { $case: "field", value: { path: "type", test: undefined } } }))[0]).toMatch(
      /^filter\.field: give exactly one test/,
    );
  });
});
