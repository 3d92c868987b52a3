import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_MAPPING_BYTES, Mapping, mappingProblems, type JsonObject } from "./mapping.js";
import { mappingKit } from "./segment-packages.js";

const ORDER: JsonObject = {
  type: "track",
  event: "Order Completed",
  userId: "u-1",
  messageId: "m-1",
  properties: { total: 42, coupon: null, items: [{ sku: "a", price: 1 }, { sku: "b" }] },
  context: { app: { version: "1.2" } },
};

function applied(json: JsonObject, event: JsonObject = ORDER): JsonObject {
  expect(mappingProblems(json)).toEqual([]);
  const result = new Mapping(json).apply(event);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe("Mapping", () => {
  it("makes what Segment's mapping-kit makes: the whole call by default, paths, templates, conditions", () => {
    expect(applied({ "@path": "$." })).toEqual(ORDER);
    expect(
      applied({
        total: { "@path": "$.properties.total" },
        missing: { "@path": "$.properties.nope" },
        coupon: { "@path": "$.properties.coupon" },
      }),
    ).toEqual({
      total: 42,
      coupon: null,
    });
    expect(applied({ text: { "@template": "{{event}} by {{userId}} ({{properties.nope}})" } })).toEqual({
      text: "Order Completed by u-1 ()",
    });
    expect(
      applied({
        sku: { "@path": "$.properties.items[1].sku" },
        skus: { "@arrayPath": ["$.properties.items", { id: { "@path": "$.sku" } }] },
      }),
    ).toEqual({
      sku: "b",
      skus: [{ id: "a" }, { id: "b" }],
    });
    expect(applied({ paid: { "@if": { exists: { "@path": "$.properties.total" }, then: "yes", else: "no" } } })).toEqual({ paid: "yes" });
    expect(applied({ upper: { "@case": { operator: "upper", value: { "@path": "$.event" } } } })).toEqual({ upper: "ORDER COMPLETED" });
  });

  it("names the place of each problem when a mapping is saved", () => {
    expect(mappingProblems({ a: { "@path": 5 } })).toEqual(["/a/@path should be a string or a mapping directive but it is a number"]);
    expect(mappingProblems({ a: { b: { "@foo": 1 } }, c: { "@path": "$.x", "@template": "y" } })).toEqual([
      "/a/b has an invalid directive: @foo",
      "/c should only have one @-prefixed key but it has 2 keys",
    ]);
    expect(mappingProblems([])).toEqual(["must be a JSON object"]);
    expect(mappingProblems({ big: "x".repeat(MAX_MAPPING_BYTES) })).toEqual([
      `is ${MAX_MAPPING_BYTES + 10} bytes of JSON; the limit is ${MAX_MAPPING_BYTES}`,
    ]);
  });

  it("says why a mapping could not be made of a call, and leaves the saved mapping as it was", () => {
    const json: JsonObject = { merged: { "@merge": { objects: [{ "@path": "$.properties" }] } } };
    const result = new Mapping(json).apply(ORDER);
    expect(result).toEqual({ ok: false, error: expect.stringContaining("direction") });
    const replace: JsonObject = { coupon: { "@replace": { pattern: "o", replacement: "0", value: { "@path": "$.event" } } } };
    const mapping = new Mapping(replace);
    expect(mapping.apply(ORDER)).toEqual({ ok: true, value: { coupon: "Order C0mpleted" } });
    // mapping-kit fills in @replace's defaults in the object it is given: not in the saved one.
    expect(replace).toEqual({ coupon: { "@replace": { pattern: "o", replacement: "0", value: { "@path": "$.event" } } } });
  });

  const key = fc.constantFrom("a", "b", "total", "items", "event");
  const path = fc.constantFrom(
    "$.",
    "$.event",
    "$.properties.total",
    "$.properties.items",
    "$.properties.items[0].sku",
    "$.nope.deeper",
    "userId",
  );
  const mapping: fc.Arbitrary<JsonObject> = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      path.map((p) => ({ "@path": p })),
      fc.string({ maxLength: 5 }),
      fc.integer(),
      fc.constant(null),
      fc.tuple(path, path).map(([a, b]) => ({ "@template": `{{${a.slice(2)}}}-{{${b.slice(2)}}}` })),
      tie("object"),
    ),
    object: fc.dictionary(key, tie("value"), { maxKeys: 3 }),
  })).object as fc.Arbitrary<JsonObject>;
  const event: fc.Arbitrary<JsonObject> = fc
    .record(
      {
        type: fc.constantFrom("track", "page"),
        event: fc.string({ maxLength: 6 }),
        userId: fc.oneof(fc.string({ maxLength: 4 }), fc.constant(null)),
        properties: fc.record(
          {
            total: fc.oneof(fc.integer(), fc.string()),
            items: fc.array(fc.record({ sku: fc.string({ maxLength: 3 }) }), { maxLength: 2 }),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: ["type"] },
    )
    .map((call) => JSON.parse(JSON.stringify(call)) as JsonObject); // as a call's JSON reads: plain objects

  it("for random mappings and calls: valid ones make exactly mapping-kit's object, again and again", () => {
    fc.assert(
      fc.property(mapping, fc.array(event, { minLength: 1, maxLength: 3 }), (json, events) => {
        expect(mappingProblems(json)).toEqual([]);
        const compiled = new Mapping(json);
        for (const call of events) {
          const expected = mappingKit().transform(structuredClone(json), call);
          expect(compiled.apply(call)).toEqual({ ok: true, value: expected });
        }
      }),
      { numRuns: 300 },
    );
  });
});
