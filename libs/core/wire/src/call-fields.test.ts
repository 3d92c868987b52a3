import { CLIENT_TEXT_KEYS, FILTER_FIELD_NAMES, FILTER_OBJECT_NAMES } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import { callArbitrary } from "@switchyard/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallFieldFinder, callPath, FieldKind } from "./call-fields.js";
import { webhookBody } from "./webhook-body/webhook-body.js";

/**
 * The oracle: the path looked up in the body of the decoded call, as JSON (the alias's
 * "Previous ID" and "User ID" by their property names), keys going into objects only.
 */
function bodyLookup(call: Call, path: string): { found: false } | { found: true; value: unknown } {
  if (!call.payload) return { found: false };
  const body = JSON.parse(JSON.stringify(webhookBody(call))) as Record<string, unknown>;
  if (call.payload.$case === "alias") {
    body.previousId = body["Previous ID"];
    body.userId = body["User ID"];
  }
  // The call's own texts the body leaves out (a field added to calls.proto) are there when set.
  const own = call as unknown as Record<string, string>;
  for (const key of CLIENT_TEXT_KEYS) if (!Object.hasOwn(body, key) && own[key] !== "") body[key] = own[key];
  let value: unknown = body;
  for (const key of path.split(".")) {
    if (typeof value !== "object" || value === null || Array.isArray(value) || !Object.hasOwn(value, key)) return { found: false };
    value = (value as Record<string, unknown>)[key];
  }
  return { found: true, value };
}

/** Every path worth trying on a call: each first name, and every key path below its objects (and some that are not there). */
function pathsOf(call: Call): string[] {
  const paths = [...FILTER_FIELD_NAMES, ...FILTER_OBJECT_NAMES];
  const below = (prefix: string, value: unknown, depth: number) => {
    paths.push(`${prefix}.missing`);
    if (typeof value !== "object" || value === null || depth > 4) return;
    for (const [key, member] of Object.entries(value)) {
      if (key === "" || key.split(".").includes("")) continue;
      paths.push(`${prefix}.${key}`);
      below(`${prefix}.${key}`, member, depth + 1);
    }
  };
  const payload = call.payload?.value as Record<string, unknown> | undefined;
  below("properties", payload?.properties, 0);
  below("traits", payload?.traits, 0);
  below("context", call.context, 0);
  return paths;
}

/** What the finder found, in the oracle's terms. */
function found(finder: CallFieldFinder): { found: false } | { found: true; value: unknown } {
  switch (finder.kind) {
    case FieldKind.ABSENT:
      return { found: false };
    case FieldKind.NULL:
      return { found: true, value: null };
    case FieldKind.BOOLEAN:
      return { found: true, value: finder.boolean };
    case FieldKind.NUMBER:
      return { found: true, value: finder.number === 0 ? 0 : finder.number };
    case FieldKind.STRING:
      return { found: true, value: finder.text() };
    case FieldKind.OBJECT:
      return { found: true, value: "[object]" };
    case FieldKind.ARRAY:
      return { found: true, value: "[array]" };
    default:
      throw new Error(`unknown kind ${String(finder.kind)}`);
  }
}

function expected(lookup: { found: false } | { found: true; value: unknown }): { found: false } | { found: true; value: unknown } {
  if (!lookup.found) return lookup;
  const { value } = lookup;
  if (Array.isArray(value)) return { found: true, value: "[array]" };
  if (typeof value === "object" && value !== null) return { found: true, value: "[object]" };
  return lookup;
}

describe("CallFieldFinder", () => {
  it("finds every path as the decoded call's webhook body has it, in a call anywhere in a buffer", () => {
    fc.assert(
      fc.property(callArbitrary, fc.uint8Array({ maxLength: 8 }), (generated, padding) => {
        const bytes = Call.encode(generated).finish();
        const call = Call.decode(bytes);
        const buffer = Buffer.concat([padding, bytes, padding]);
        const finder = new CallFieldFinder();
        finder.read(buffer, padding.length, padding.length + bytes.length);
        for (const text of pathsOf(call)) {
          const path = callPath(text);
          expect(path, text).toBeDefined();
          finder.find(path!);
          expect(found(finder), text).toEqual(expected(bodyLookup(call, text)));
        }
      }),
      { numRuns: 400 },
    );
  });

  it("compares strings and looks into arrays as the body's JSON reads", () => {
    fc.assert(
      fc.property(callArbitrary, fc.string({ maxLength: 4 }), (generated, probe) => {
        const bytes = Call.encode(generated).finish();
        const call = Call.decode(bytes);
        const finder = new CallFieldFinder();
        finder.read(bytes);
        const probeBytes = Buffer.from(probe, "utf8");
        for (const text of pathsOf(call)) {
          const lookup = bodyLookup(call, text);
          finder.find(callPath(text)!);
          if (finder.kind === FieldKind.STRING) {
            expect(finder.textIs(probe, probeBytes), text).toBe(lookup.found && lookup.value === probe);
            const own = finder.text();
            expect(finder.textIs(own, Buffer.from(own, "utf8")), text).toBe(true);
          } else if (finder.kind === FieldKind.ARRAY) {
            const array = (lookup as { value: unknown[] }).value;
            expect(finder.arrayHoldsText(probe, probeBytes), text).toBe(array.includes(probe));
            for (const member of array) {
              if (typeof member !== "string") continue;
              finder.find(callPath(text)!);
              expect(finder.arrayHoldsText(member, Buffer.from(member, "utf8")), text).toBe(true);
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("shows what the body shows: empty texts, missing objects, alias names, screens' properties", () => {
    const finder = new CallFieldFinder();
    const kindOf = (call: Partial<Call>, path: string) => {
      finder.read(Call.encode(Call.fromPartial(call)).finish());
      return finder.find(callPath(path)!);
    };
    const track = { payload: { $case: "track" as const, value: { event: "", properties: undefined } } };
    expect(kindOf(track, "event")).toBe(FieldKind.STRING);
    expect(kindOf(track, "userId")).toBe(FieldKind.ABSENT);
    expect(kindOf(track, "messageId")).toBe(FieldKind.STRING);
    expect(kindOf(track, "properties")).toBe(FieldKind.OBJECT);
    expect(kindOf(track, "properties.revenue")).toBe(FieldKind.ABSENT);
    expect(kindOf(track, "context")).toBe(FieldKind.ABSENT);
    expect(kindOf(track, "name")).toBe(FieldKind.ABSENT);
    const alias = { userId: "u1", payload: { $case: "alias" as const, value: { previousId: "" } } };
    expect(kindOf(alias, "previousId")).toBe(FieldKind.STRING);
    expect(kindOf({ ...alias, userId: "" }, "userId")).toBe(FieldKind.STRING);
    const screen = { payload: { $case: "screen" as const, value: { name: "", category: "", properties: { a: 1 } } } };
    expect(kindOf(screen, "name")).toBe(FieldKind.STRING);
    expect(kindOf(screen, "properties.a")).toBe(FieldKind.ABSENT);
    expect(kindOf({ messageId: "m" }, "messageId")).toBe(FieldKind.ABSENT);
    expect(kindOf({ ...track, context: { n: Number.NaN } }, "context.n")).toBe(FieldKind.NULL);
  });

  it("takes only paths the body can have", () => {
    expect(callPath("properties.a.b")?.keys.map((key) => key.text)).toEqual(["a", "b"]);
    for (const bad of ["", "types", "userId.x", "properties.", "properties..a", "Previous ID", ".properties"])
      expect(callPath(bad), bad).toBeUndefined();
  });
});
