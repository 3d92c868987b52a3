import { describe, expect, it } from "vitest";
import { draftOf, filterOf, formatScalar, parseList, parseScalar, type FilterDraft } from "../web/call-filter-draft.js";

/** The destination form's filter drafts (pure logic of services/console/web/call-filter-draft.ts). */
describe("call filter drafts", () => {
  it("reads typed values as JSON scalars, other text as text, and writes them back the same way", () => {
    expect(parseScalar("42")).toBe(42);
    expect(parseScalar("-1.5e3")).toBe(-1500);
    expect(parseScalar("true")).toBe(true);
    expect(parseScalar("null")).toBe(null);
    expect(parseScalar('"42"')).toBe("42");
    expect(parseScalar("Order Completed")).toBe("Order Completed");
    for (const value of ["42", "true", "null", '"quoted"', "plain text", 42, false, null])
      expect(parseScalar(formatScalar(value))).toEqual(value);
    expect(parseList('a, 42, "b, c", null')).toEqual(["a", 42, "b, c", null]);
  });

  it("edits a flat list of conditions in the builder and anything else as JSON", () => {
    expect(draftOf(undefined).mode).toBe("none");
    const flat = draftOf({
      any: { filters: [{ field: { path: "event", in: ["A", 1] } }, { field: { path: "traits.x", exists: false } }] },
    });
    expect(flat).toMatchObject({
      mode: "builder",
      combine: "any",
      conditions: [
        { path: "event", op: "in", value: "A, 1" },
        { path: "traits.x", op: "absent", value: "" },
      ],
    });
    expect(draftOf({ field: { path: "type", equals: "track" } })).toMatchObject({ mode: "builder", combine: "all" });
    const nested = draftOf({ not: { field: { path: "type", equals: "track" } } });
    expect(nested.mode).toBe("json");
    expect(JSON.parse(nested.json)).toEqual({ not: { field: { path: "type", equals: "track" } } });
  });

  it("makes the filter of a builder, keyed problems as the service would name them", () => {
    const draft: FilterDraft = {
      mode: "builder",
      combine: "all",
      json: "",
      conditions: [
        { path: " properties.revenue ", op: "greaterThan", value: "10" },
        { path: "event", op: "notIn", value: "Ping, Heartbeat" },
        { path: "properties.n", op: "lessThan", value: "ten" },
      ],
    };
    const { filter, problems } = filterOf(draft);
    expect(filter).toEqual({
      all: {
        filters: [
          { field: { path: "properties.revenue", greaterThan: 10 } },
          { field: { path: "event", notIn: ["Ping", "Heartbeat"] } },
          { field: { path: "properties.n", lessThan: Number.NaN } },
        ],
      },
    });
    expect([...problems]).toEqual([["filter.all.filters.2.field.lessThan", "must be a number"]]);
    expect([...filterOf({ ...draft, conditions: [] }).problems.keys()]).toEqual(["filter"]);
  });

  it("refuses JSON that is not JSON, or holds names proto3 JSON readers would drop", () => {
    const json = (text: string) => filterOf({ mode: "json", combine: "all", conditions: [], json: text });
    expect([...json("{").problems.keys()]).toEqual(["filter"]);
    expect([...json('{"al": {"filters": []}}').problems.keys()]).toEqual(["filter"]);
    expect([...json('{"not": {"field": {"path": "event", "equal": "x"}}}').problems.keys()]).toEqual(["filter.not.field"]);
    expect(json('{"not": {"field": {"path": "event", "not_in": ["x"]}}}')).toEqual({
      filter: { not: { field: { path: "event", not_in: ["x"] } } },
      problems: new Map(),
    });
  });
});
