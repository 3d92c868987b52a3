import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CallKind } from "./call-rules.js";
import { quickAccept, quickAcceptJson } from "./quick-accept.js";
import { CHECK_RULES, checkCall, type CallCheck } from "./validate.js";

/**
 * The call the client library makes of a caller's message before the rules check it: its own
 * properties, with the type, a messageId when it has none, and a Date timestamp as ISO 8601 text.
 */
function clientCall(type: CallKind, fields: Record<string, unknown>): Record<string, unknown> {
  const raw: Record<string, unknown> = { ...fields, type, messageId: fields.messageId ?? "m-1" };
  if (fields.timestamp instanceof Date && !Number.isNaN(fields.timestamp.getTime())) raw.timestamp = fields.timestamp.toISOString();
  return raw;
}

/** The slow path's refusal names the field (or the call) and a known rule. */
function expectNamedRefusal(check: CallCheck): void {
  if (check.ok) throw new Error("expected a refusal");
  const { field, rule, message } = check.rejection;
  expect(CHECK_RULES.has(rule) && rule !== "invalid", `rule ${rule}`).toBe(true);
  expect(message.startsWith(`${field || "call"}: `), message).toBe(true);
}

const ids = fc.constantFrom<unknown>(undefined, "", "u", "ü-1", "x".repeat(128), "x".repeat(129), 5, null, {}, "m\r\n", "\u0085", "😀");
const texts = fc.constantFrom<unknown>(undefined, "", "Home", 5, null);
const timestamps = fc.constantFrom<unknown>(
  undefined,
  "2026-11-21T10:00:00.000Z",
  "2026-11-21T10:00:00Z",
  "2026-11-21",
  "2026-11-21T10:00:00+02:00",
  "2026-13-45T10:00:00.000Z",
  "2026-02-30T10:00:00Z",
  "2026-11-21T24:00:00Z",
  "yesterday",
  1_700_000_000,
  null,
  new Date("2026-11-21T10:00:00.123Z"),
  new Date("0000-01-01T00:00:00.000Z"),
  new Date(253_402_300_800_000), // year 10000: its ISO text has six digits and a sign
  new Date(Number.NaN),
);
const objects = fc.constantFrom<unknown>(undefined, {}, { a: 1, b: [1, "x"] }, Object.create(null), [], null, "x", new Date(0), new Map());
const integrationMaps = fc.constantFrom<unknown>(
  undefined,
  {},
  { All: false, Webhooks: true },
  { A: {} },
  { A: "no" },
  { A: null },
  { A: 1 },
  [],
);

const types = fc.constantFrom<CallKind>("identify", "track", "page", "screen", "group", "alias");

/** Messages as callers pass them: a type of their own is overridden by the method's. */
const messages = fc.record(
  {
    type: fc.constantFrom<unknown>("identify", "delete", undefined),
    messageId: ids,
    userId: ids,
    anonymousId: ids,
    timestamp: timestamps,
    context: objects,
    integrations: integrationMaps,
    traits: objects,
    properties: objects,
    event: texts,
    name: texts,
    category: texts,
    groupId: ids,
    previousId: ids,
  },
  { requiredKeys: [] },
);

/** The same members, inherited from a prototype (a spread copies none of them) or on a class instance. */
class Message {
  constructor(fields: object) {
    Object.assign(this, fields);
  }
}
const notPlain = fc.oneof(
  messages.map((fields) => Object.create(fields) as Record<string, unknown>),
  messages.map((fields) => new Message(fields) as unknown as Record<string, unknown>),
);

describe("quickAccept", () => {
  it("accepts only what the call rules accept, as the client hands the message to them; their refusals name field and rule", () => {
    let quick = 0;
    fc.assert(
      fc.property(types, fc.oneof({ weight: 9, arbitrary: messages }, { weight: 1, arbitrary: notPlain }), (type, fields) => {
        const accepted = quickAccept(type, fields as Record<string, unknown>);
        const check = checkCall(clientCall(type, fields as Record<string, unknown>), 0, 0);
        if (accepted) {
          quick++;
          expect(check.ok).toBe(true);
        } else if (!check.ok) expectNamedRefusal(check);
      }),
      { numRuns: 20_000 },
    );
    // It must also be a shortcut worth having: it takes a fair share of the valid messages.
    expect(quick).toBeGreaterThan(50);
  });

  it("takes the usual calls of every type, with the timestamp as text or a Date", () => {
    for (const timestamp of ["2026-11-21T10:00:00.000Z", "2026-11-21T10:00:00Z", new Date("2026-11-21T10:00:00.000Z")]) {
      const common = { messageId: "m1", timestamp, context: { ip: "1.2.3.4" }, integrations: { All: true } };
      for (const [type, fields] of [
        ["identify", { userId: "u", traits: { a: 1 } }],
        ["track", { anonymousId: "a", event: "E", properties: {} }],
        ["page", { userId: "u", name: "Home", category: "Docs", properties: {} }],
        ["screen", { userId: "u", name: "Home" }],
        ["group", { userId: "u", groupId: "g", traits: {} }],
        ["alias", { userId: "u", previousId: "p" }],
      ] as const) {
        expect(quickAccept(type, { ...common, ...fields })).toBe(true);
      }
    }
  });

  it("leaves a message that is not a plain object to the rules", () => {
    const fields = { userId: "u", event: "E" };
    expect(quickAccept("track", fields)).toBe(true);
    expect(quickAccept("track", Object.create(fields) as Record<string, unknown>)).toBe(false);
    expect(quickAccept("track", new Message(fields) as unknown as Record<string, unknown>)).toBe(false);
  });
});

describe("quickAcceptJson", () => {
  const jsonTypes = fc.constantFrom<unknown>("identify", "track", "page", "screen", "group", "alias", "delete", "Track", undefined, 5);

  it("accepts only what the call rules accept, the call as the HTTP front door parsed it", () => {
    let quick = 0;
    fc.assert(
      fc.property(jsonTypes, messages, (type, fields) => {
        const call: Record<string, unknown> = { ...(fields as Record<string, unknown>), type };
        if (call.type === undefined) delete call.type;
        // No Date in JSON: a Date stands for its ISO text here.
        if (call.timestamp instanceof Date) call.timestamp = Number.isNaN(call.timestamp.getTime()) ? "x" : call.timestamp.toISOString();
        const check = checkCall(call, 0, 0);
        if (quickAcceptJson(call)) {
          quick++;
          expect(check.ok).toBe(true);
        } else if (!check.ok) expectNamedRefusal(check);
      }),
      { numRuns: 20_000 },
    );
    expect(quick).toBeGreaterThan(50);
  });

  it("takes the timestamps SDKs send, with offsets and microseconds, and leaves invalid ones to the rules", () => {
    const call = { type: "track", userId: "u", event: "E" };
    for (const timestamp of ["2026-11-21T10:00:00.123Z", "2026-11-21T10:00:00.123456+00:00", "2026-11-21T12:00:00+02:00", "2026-11-21"]) {
      expect(quickAcceptJson({ ...call, timestamp })).toBe(true);
    }
    for (const timestamp of ["2026-02-30T10:00:00Z", "2026-11-21T24:00:00Z", "yesterday", "", 5, null]) {
      expect(quickAcceptJson({ ...call, timestamp })).toBe(false);
    }
  });
});
