import { readFileSync } from "node:fs";
import { checkCall, tooDeeplyNestedField, type ValidCall } from "@switchyard/calls";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "./errors.js";
import type { CallType } from "./messages.js";
import { prepareCall, rawCall } from "./prepare-call.js";
import { LIBRARY } from "./version.js";

function refusal(type: Parameters<typeof prepareCall>[0], message: unknown): { field: string; rule: string; message: string } {
  try {
    prepareCall(type, message);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    const { field, rule, message: text } = error as ValidationError;
    return { field, rule, message: text };
  }
  throw new Error("the call was accepted");
}

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe("validation when a call is made", () => {
  it.each([
    ["a message that is not an object", "track", "Order", "", "type"],
    ["identify without userId or anonymousId", "identify", { traits: {} }, "userId", "identity_required"],
    ["track without userId or anonymousId", "track", { event: "E" }, "userId", "identity_required"],
    ["page without userId or anonymousId", "page", { name: "Home" }, "userId", "identity_required"],
    ["screen without userId or anonymousId", "screen", { name: "Home" }, "userId", "identity_required"],
    ["group without userId or anonymousId", "group", { groupId: "g" }, "userId", "identity_required"],
    ["track without event", "track", { userId: "u" }, "event", "required"],
    ["track with an empty event", "track", { userId: "u", event: "" }, "event", "not_empty"],
    ["track with a non-string event", "track", { userId: "u", event: 7 }, "event", "type"],
    ["group without groupId", "group", { userId: "u" }, "groupId", "required"],
    ["alias without userId", "alias", { previousId: "p", anonymousId: "a" }, "userId", "required"],
    ["alias without previousId", "alias", { userId: "u" }, "previousId", "required"],
    ["an empty userId", "identify", { userId: "" }, "userId", "not_empty"],
    ["a userId over 128 characters", "identify", { userId: "u".repeat(129) }, "userId", "max_length"],
    ["a messageId over 128 characters", "identify", { userId: "u", messageId: "m".repeat(129) }, "messageId", "max_length"],
    ["a timestamp that is not ISO 8601", "track", { userId: "u", event: "E", timestamp: "yesterday" }, "timestamp", "format"],
    ["an invalid Date", "track", { userId: "u", event: "E", timestamp: new Date(Number.NaN) }, "timestamp", "format"],
    ["properties that are not an object", "track", { userId: "u", event: "E", properties: [1] }, "properties", "type"],
    ["traits that are not an object", "identify", { userId: "u", traits: "vip" }, "traits", "type"],
    ["context that is not an object", "identify", { userId: "u", context: 5 }, "context", "type"],
    ["a page name that is not a string", "page", { userId: "u", name: 5 }, "name", "type"],
    [
      "an integrations value that is not a boolean or object",
      "track",
      { userId: "u", event: "E", integrations: { All: "no" } },
      "integrations.All",
      "value",
    ],
    ["a BigInt value (not JSON)", "track", { userId: "u", event: "E", properties: { n: 1n } }, "", "type"],
    ["a messageId with a line break", "track", { userId: "u", event: "E", messageId: "m\r\nx" }, "messageId", "control_characters"],
    ["a messageId with a C1 control", "identify", { userId: "u", messageId: "m\u0085" }, "messageId", "control_characters"],
    ["NaN in properties", "track", { userId: "u", event: "E", properties: { price: Number.NaN } }, "properties.price", "finite_number"],
    ["Infinity in a list in context", "track", { userId: "u", event: "E", context: { n: [1, Infinity] } }, "context.n.1", "finite_number"],
    ["-Infinity in traits", "identify", { userId: "u", traits: { score: -Infinity } }, "traits.score", "finite_number"],
    ["a lone surrogate in properties", "track", { userId: "u", event: "E", properties: { name: "\ud800" } }, "properties.name", "unicode"],
    ["a lone surrogate in a userId", "identify", { userId: "u\udc00" }, "userId", "unicode"],
    ["a lone surrogate in a messageId", "identify", { userId: "u", messageId: "m\ud800" }, "messageId", "unicode"],
    ["an impossible date", "track", { userId: "u", event: "E", timestamp: "2026-02-30T00:00:00Z" }, "timestamp", "format"],
    [
      "NaN with a timestamp the quick check leaves to the rules",
      "track",
      { userId: "u", event: "E", timestamp: "2026-01-01T00:00:00+01:00", properties: { price: Number.NaN } },
      "properties.price",
      "finite_number",
    ],
    ["properties nested too deeply to be stored", "track", { userId: "u", event: "E", properties: nested(60) }, "properties", "max_depth"],
  ])("refuses %s, naming the field and the rule", (_what, type, message, field, rule) => {
    const refused = refusal(type as Parameters<typeof prepareCall>[0], message);
    expect(refused).toMatchObject({ field, rule });
    expect(refused.message).toContain(`rule: ${rule}`);
    if (field) expect(refused.message).toContain(field);
  });

  it("refuses a circular message as nested too deeply", () => {
    const properties: Record<string, unknown> = {};
    properties.self = properties;
    expect(refusal("track", { userId: "u", event: "E", properties })).toMatchObject({ field: "properties", rule: "max_depth" });
  });

  it("names the field nested too deeply as the rule does, whatever else the call holds", () => {
    const deep = nested(60);
    const circular: Record<string, unknown> = { list: [] };
    (circular.list as unknown[]).push({ back: circular });
    for (const [type, message, field] of [
      ["identify", { userId: "u", context: { a: deep } }, "context"],
      ["identify", { userId: "u", context: circular }, "context"],
      ["track", { userId: "u", event: "E", integrations: { A: deep } }, "integrations"],
      ["identify", { userId: "u", traits: { list: [[deep]] } }, "traits"],
      ["group", { userId: "u", groupId: "g", traits: circular }, "traits"],
      // context is checked before properties, as the separate walk did
      ["track", { userId: "u", event: "E", context: deep, properties: deep }, "context"],
      // a BigInt written before the field nested too deeply: the nesting rule still comes first
      ["track", { userId: "u", event: "E", context: { n: 1n }, properties: deep }, "properties"],
      // the caller's context.library, replaced by ours, is still held to the rule
      ["track", { userId: "u", event: "E", context: { library: deep } }, "context"],
      // fields the call's type does not have are not written, but the rule checks them
      ["track", { userId: "u", event: "E", traits: deep }, "traits"],
      ["identify", { userId: "u", properties: circular }, "properties"],
      ["alias", { userId: "u", previousId: "p", traits: deep }, "traits"],
      // a message that the rules copy (not a plain object) is checked the same way
      ["track", Object.assign(Object.create({ unused: 1 }) as object, { userId: "u", event: "E", properties: deep }), "properties"],
    ] as const) {
      expect(refusal(type, message), `${type} ${field}`).toMatchObject({ field, rule: "max_depth" });
    }
  });

  it("refuses what a toJSON() returns when it nests too deeply, naming the field it is in", () => {
    // The rule sees the object, not what is written in its place; stored, it could not be read back.
    const properties = { report: { toJSON: () => nested(60) } };
    expect(refusal("track", { userId: "u", event: "E", properties })).toMatchObject({ field: "properties", rule: "max_depth" });
  });

  it("accepts and refuses by nesting exactly where the rule does, near the limit", () => {
    // Values of every shape the levels count differently, nested to depths around the limit.
    const leaf = fc.constantFrom<unknown>(
      1,
      "x",
      null,
      undefined,
      new Date(0),
      [],
      {},
      [undefined],
      new Array(2),
      Object.assign(new Array(2), { 1: 5 }),
    );
    const value = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        leaf,
        fc.array(tie("value"), { minLength: 1, maxLength: 2 }),
        fc.dictionary(fc.constantFrom("a", "b", "library"), tie("value"), { minKeys: 1, maxKeys: 2 }),
      ),
    })).value;
    const wrapped = fc.tuple(fc.integer({ min: 0, max: 50 }), value, fc.constantFrom("object", "list")).map(([depth, inner, how]) => {
      let result: unknown = inner;
      for (let index = 0; index < depth; index++) result = how === "object" ? { a: result } : [result];
      return { a: result } as Record<string, unknown>;
    });
    const types = fc.constantFrom<CallType>("identify", "track", "group");
    const roots = fc.constantFrom("context", "integrations", "traits", "properties");
    fc.assert(
      fc.property(types, roots, wrapped, (type, root, free) => {
        const message = { userId: "u", event: "E", groupId: "g", [root]: root === "integrations" ? { X: free } : free };
        // The call as the separate walk saw it: the message with type and messageId (quickAccept takes these).
        const raw = rawCall(type, message);
        expect(checkCall(raw, 0, 0).ok).toBe(true);
        const expected = tooDeeplyNestedField(raw as ValidCall);
        if (expected === undefined) expect(() => prepareCall(type, message)).not.toThrow();
        else expect(refusal(type, message)).toMatchObject({ field: expected, rule: "max_depth" });
      }),
      { numRuns: 3_000 },
    );
  });

  it("refuses a 33 KB message and accepts one just under 32 KB", () => {
    const big = refusal("track", { userId: "u", event: "E", properties: { blob: "x".repeat(33 * 1024) } });
    expect(big).toMatchObject({ field: "", rule: "max_size" });
    expect(big.message).toContain("32 KB");
    const fits = prepareCall("track", { userId: "u", event: "E", properties: { blob: "x".repeat(31 * 1024) } });
    expect(fits.jsonBytes).toBeLessThanOrEqual(32 * 1024);
  });

  it("accepts a page with only an anonymousId, like ingest, and an alias with userId and previousId", () => {
    expect(() => prepareCall("page", { anonymousId: "a" })).not.toThrow();
    expect(() => prepareCall("alias", { userId: "u", previousId: "p" })).not.toThrow();
  });

  it("accepts a member its type does not store being null (traits: null on a track), as ingest does", () => {
    expect(() => prepareCall("track", { userId: "u", event: "E", traits: null })).not.toThrow();
  });

  it("adds context.library, keeping the caller's context", () => {
    const prepared = prepareCall("track", { userId: "u", event: "E", context: { ip: "1.2.3.4", library: { name: "other" } } });
    expect(prepared.jsonBytes).toBeGreaterThan(0);
    expect(LIBRARY.version).toBe(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version);
  });
});
