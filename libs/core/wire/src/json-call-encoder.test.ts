import { checkCall, MAX_CALL_BYTES, tooDeeplyNestedField, validCallToProto, type Rejection } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EncodedCall } from "./call-batch-encoder.js";
import { encodeJsonCall } from "./json-call-encoder.js";
import { AcceptTime } from "./pass-through-call.js";

/** The id ingest gives a call that came without one. */
const INGEST_ID = "6f1c2d3e-0000-4000-8000-00000000beef";

/** The straightforward path: the rules (zod), the nesting rule, then the generated encoder. */
function straightforward(
  call: unknown,
  acceptTime: AcceptTime,
  jsonBytes?: number,
): { ok: true; messageId: string | undefined; bytes: Buffer } | { ok: false; rejection: Rejection } {
  const check = checkCall(call, 0, jsonBytes);
  if (!check.ok) return check;
  const field = tooDeeplyNestedField(check.call);
  if (field !== undefined) return { ok: false, rejection: { index: 0, messageId: "", field, rule: "max_depth", message: "" } };
  const messageId = check.call.messageId ?? INGEST_ID;
  const bytes = Buffer.from(Call.encode(validCallToProto(check.call, { messageId, receivedAt: acceptTime.date })).finish());
  return { ok: true, messageId: check.call.messageId, bytes };
}

function bytesOf(call: EncodedCall): Buffer {
  const target = Buffer.alloc(call.byteLength);
  expect(call.writeTo(target, 0)).toBe(call.byteLength);
  return target;
}

const jsonBytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8");

/** Object keys where readers and encoders differ: integer-like, empty, `__proto__`, non-ASCII, escaped. */
const key = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom("1", "10", "2", "__proto__", "constructor", "", "é", 'a"b', "\n", "\ud800", "😀") },
);

/** Free-form values as JSON.parse makes them, plus what it cannot (NaN, ±Infinity, lone surrogates, -0). */
const freeForm: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ object: Record<string, unknown>; value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.double(),
    fc.integer(),
    fc.constantFrom(0.1, 12.5, -3.125, 1e21, 123456789012, -0, 5e-7),
    fc.string({ maxLength: 12 }),
    fc.constantFrom("é", "\u0000", "\ud800", "ü\udc00", 'a"\\b', "😀"),
    // Long enough for the writer's native copy: non-ASCII at either end, characters whose low byte is ASCII.
    fc
      .tuple(fc.constantFrom("", "é", "Ā", "\u0122", "😀", "\ud800", "\n", '"'), fc.nat(40), fc.boolean())
      .map(([odd, pad, first]) => (first ? odd + "x".repeat(pad) : "x".repeat(pad) + odd)),
    fc.boolean(),
    tie("object"),
    fc.array(tie("value"), { maxLength: 4 }),
  ),
  object: fc.dictionary(key, tie("value"), { maxKeys: 5 }),
})).object;

/** Nested too deeply to store (tooDeeplyNestedField) at some depths, or just within. */
const deep = fc.integer({ min: 45, max: 52 }).map((depth) => {
  let value: unknown = { leaf: 1 };
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? { a: value } : [value];
  return value as Record<string, unknown>;
});

const ids = fc.oneof(
  { weight: 5, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<unknown>(
      undefined,
      "",
      null,
      "u-1",
      "ü-1",
      "x".repeat(128),
      "x".repeat(129),
      5,
      {},
      "m\r\n",
      "\u0085",
      "\ud800",
    ),
  },
);
const texts = fc.constantFrom<unknown>(undefined, "", "Home", "Signed Up", "é\ud800", 5, null);
const timestamps = fc.constantFrom<unknown>(
  undefined,
  "2026-11-21T10:00:00.000Z",
  "2026-11-21T10:00:00Z",
  "2026-11-21T10:00:00.1Z",
  "2026-11-21T10:00:00.123456Z",
  "2026-11-21T10:00:00.123456+00:00",
  "2026-11-21T10:00:00+02:00",
  "2026-11-21T10:00:00-0530",
  "2026-11-21 10:00:00",
  "2026-11-21",
  "1969-12-31T23:59:59.999Z",
  "0001-01-01T00:00:00Z",
  "2026-13-45T10:00:00.000Z",
  "2026-02-30T10:00:00Z",
  "2026-11-21T24:00:00Z",
  "yesterday",
  "",
  1_700_000_000,
  null,
);
const library = fc.constantFrom(
  { name: "analytics.js", version: "next-1.70.0" },
  { name: "analytics-node", version: "2.1.0" },
  { name: "analytics-python", version: "2.3.2" },
  { name: "com.segment.analytics.kotlin", version: "1.16.0" },
);
const context = fc.oneof(
  freeForm,
  fc.tuple(library, freeForm).map(([lib, rest]) => ({ ...rest, library: lib })),
  deep,
  fc.constantFrom<unknown>(undefined, null, [], "x", { ip: "203.0.113.7", locale: "de-DE", userAgent: "Mozilla/5.0" }),
);
const integrations = fc.oneof(
  fc.dictionary(key, fc.oneof(fc.boolean(), freeForm), { maxKeys: 3 }),
  fc.constantFrom<unknown>(undefined, {}, { All: false, Webhooks: true }, { A: "no" }, { A: null }, [], null),
);
const freeFormField = fc.oneof(
  { weight: 4, arbitrary: freeForm },
  { weight: 1, arbitrary: deep },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(undefined, null, [], "x"),
  },
);

/** Calls as the HTTP front door hands them over, valid and invalid: every field optional, many of the wrong type. */
const jsonCall = fc
  .record(
    {
      type: fc.oneof(
        { weight: 9, arbitrary: fc.constantFrom("identify", "track", "page", "screen", "group", "alias") },
        { weight: 1, arbitrary: fc.constantFrom<unknown>("delete", "Track", undefined, 5) },
      ),
      messageId: ids,
      userId: ids,
      anonymousId: ids,
      timestamp: timestamps,
      context,
      integrations,
      event: fc.oneof(texts, fc.string({ maxLength: 10 })),
      name: texts,
      category: texts,
      groupId: ids,
      previousId: ids,
      properties: freeFormField,
      traits: freeFormField,
      sentAt: fc.constantFrom<unknown>(undefined, "2026-11-21T10:00:01.000Z"),
      writeKey: fc.constantFrom<unknown>(undefined, "wk_1"),
      _metadata: fc.constantFrom<unknown>(undefined, { bundled: ["Segment.io"], unbundled: [] }),
      channel: fc.constantFrom<unknown>(undefined, "server", "client"),
      __proto__: fc.constantFrom<unknown>(undefined, { a: 1 }, "x"),
    },
    { requiredKeys: [] },
  )
  .map((call) => {
    // As JSON.parse makes it: no undefined members, `__proto__` an own member.
    const copy: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(call))
      if (value !== undefined) Object.defineProperty(copy, name, { value, enumerable: true, writable: true, configurable: true });
    return copy;
  });

/** Calls that are valid in the usual way, as Segment SDKs send them (the fast path must take nearly all). */
const sdkCall = fc
  .record({
    type: fc.constantFrom("identify", "track", "page", "screen", "group"),
    messageId: fc.option(fc.uuid(), { nil: undefined }),
    userId: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: undefined }),
    anonymousId: fc.uuid(),
    timestamp: fc.option(
      fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((date) => date.toISOString()),
      {
        nil: undefined,
      },
    ),
    context: fc.tuple(
      library,
      fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string(), fc.integer(), fc.boolean()), { maxKeys: 4 }),
    ),
    integrations: fc.option(fc.constant({ All: true, Mixpanel: false }), { nil: undefined }),
    event: fc.string({ minLength: 1, maxLength: 20 }),
    groupId: fc.string({ minLength: 1, maxLength: 20 }),
    properties: fc.dictionary(
      fc.string({ maxLength: 8 }),
      fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)),
      {
        maxKeys: 6,
      },
    ),
    sentAt: fc.constant("2026-11-21T10:00:01.000Z"),
  })
  .map(
    ({ context: [lib, rest], ...call }) =>
      JSON.parse(JSON.stringify({ ...call, context: { ...rest, library: lib } })) as Record<string, unknown>,
  );

/** Valid calls with every oddity the free-form values may hold (key order, empty and `__proto__` keys, -0, escapes). */
const nearlyValid = fc
  .tuple(
    sdkCall,
    fc.record(
      {
        properties: freeForm,
        traits: freeForm,
        context: freeForm,
        name: fc.constantFrom("", "Home", "é"),
        timestamp: timestamps,
        extra: fc.dictionary(key, freeForm, { maxKeys: 2 }),
      },
      { requiredKeys: [] },
    ),
  )
  .map(([call, { extra, ...odd }]) => Object.assign(call, extra, odd) as Record<string, unknown>);

const acceptTimes = fc.date({ min: new Date(-1e12), max: new Date(4e12), noInvalidDate: true }).map((date) => new AcceptTime(date));

describe("encodeJsonCall", () => {
  it("takes a call only when the straightforward path accepts it, and writes the same bytes", () => {
    let fast = 0;
    fc.assert(
      fc.property(fc.oneof(jsonCall, nearlyValid), acceptTimes, fc.boolean(), (call, acceptTime, sized) => {
        const jsonBytes = sized ? jsonBytesOf(call) : undefined;
        const slow = straightforward(call, acceptTime, jsonBytes);
        const quick = encodeJsonCall(call, acceptTime, jsonBytes);
        if (!quick) return;
        fast++;
        expect(slow.ok, JSON.stringify(slow)).toBe(true);
        if (!slow.ok) return;
        expect(quick.clientMessageId).toBe(slow.messageId);
        expect(bytesOf(quick.encoded(INGEST_ID)).toString("hex")).toBe(slow.bytes.toString("hex"));
      }),
      { numRuns: 3_000 },
    );
    // Half the calls are nearly all invalid, half nearly all valid: both must have been tried.
    expect(fast).toBeGreaterThan(500);
  });

  it("takes every usual SDK call, with the same bytes as the straightforward path", () => {
    fc.assert(
      fc.property(sdkCall, acceptTimes, (call, acceptTime) => {
        const slow = straightforward(call, acceptTime);
        expect(slow.ok).toBe(true);
        const quick = encodeJsonCall(call, acceptTime);
        expect(quick).toBeDefined();
        if (!slow.ok || !quick) return;
        expect(bytesOf(quick.encoded(INGEST_ID)).toString("hex")).toBe(slow.bytes.toString("hex"));
      }),
      { numRuns: 1_000 },
    );
  });

  it("counts the call's JSON size exactly: it takes a call up to the margin below the limit and leaves the rest", () => {
    // The margin is the fast path's own (NEAR_LIMIT_BYTES); the size must match to the byte around it.
    const edge = MAX_CALL_BYTES - 1024;
    fc.assert(
      fc.property(
        sdkCall,
        acceptTimes,
        fc.integer({ min: -2, max: 2 }),
        fc.constantFrom("a", "é", "\n", "😀"),
        (call, acceptTime, offset, pad) => {
          const padded = { ...call, padding: "" };
          const free = edge + offset - jsonBytesOf(padded);
          const unit = jsonBytesOf(pad) - 2;
          padded.padding = pad.repeat(Math.floor(free / unit)) + "a".repeat(free % unit);
          expect(jsonBytesOf(padded)).toBe(edge + offset);
          expect(encodeJsonCall(padded, acceptTime) !== undefined).toBe(offset <= 0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
