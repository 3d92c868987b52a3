import { Call } from "@switchyard/contracts";
import { callArbitrary, referenceWebhookBody, makeCall } from "@switchyard/testkit";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WireReader } from "../reader.js";
import { JsonBytes } from "./json-bytes.js";
import { webhookBodyBytes } from "./webhook-body.js";
import { writeWebhookBody } from "./webhook-body-writer.js";

/** The body written straight from a call's bytes (plain mode); throws where the writer leaves the call to the decoder. */
function writtenBody(call: Call): string {
  const bytes = Call.encode(call).finish();
  const out = new JsonBytes(16);
  out.start();
  writeWebhookBody(new WireReader(bytes), 0, bytes.length, out);
  return out.finish().toString("utf8");
}

/** The body of a decoded call (exact mode), as delivery makes it for retries and unusual batches. */
function exactBody(call: Call): string {
  return webhookBodyBytes(call).toString("utf8");
}

/**
 * Free-form objects as ingest stores them: keys that are not integer-like and ASCII, among them the
 * names of Object.prototype's members, which are data like any other key.
 */
const ordinaryKey = fc.oneof(
  fc.stringMatching(/^[A-Za-z_$ -][\x20-\x7e]{0,8}$/),
  fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty"),
);
const ordinaryObject: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ object: Record<string, unknown>; value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.double(),
    fc.string({ maxLength: 12, unit: "binary" }),
    fc.boolean(),
    tie("object"),
    fc.array(tie("value"), { maxLength: 4 }),
  ),
  object: fc.dictionary(ordinaryKey, tie("value"), { maxKeys: 5 }),
})).object;

// A call with neither timestamp nor receivedAt is stamped "now": the writer and the reference must see the same now.
beforeEach(() => {
  vi.useFakeTimers({ now: new Date("2026-11-23T12:00:00.000Z"), toFake: ["Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("writeWebhookBody (plain mode)", () => {
  it("writes calls as ingest stores them itself, the same bytes as JSON.stringify of the decoded call's body", () => {
    const ordinaryCall = fc
      .tuple(callArbitrary, fc.option(ordinaryObject, { nil: undefined }), fc.option(ordinaryObject, { nil: undefined }))
      .filter(([call]) => call.payload !== undefined)
      .map(([call, context, object]): Call => {
        const payload = call.payload!;
        if (payload.$case === "track" || payload.$case === "page" || payload.$case === "screen") payload.value.properties = object;
        if (payload.$case === "identify" || payload.$case === "group") payload.value.traits = object;
        // Times since 1970, as ingest stamps them (earlier ones are left to the decoder).
        const since1970 = (date: Date | undefined) => date && new Date(Math.abs(date.getTime()));
        return { ...call, context, integrations: undefined, timestamp: since1970(call.timestamp), receivedAt: since1970(call.receivedAt) };
      });
    fc.assert(
      fc.property(ordinaryCall, (call) => {
        expect(writtenBody(call)).toBe(JSON.stringify(referenceWebhookBody(call)));
      }),
      { numRuns: 1_000 },
    );
  });

  it("leaves objects whose JSON follows JavaScript's key rules to the decoder: integer-like, repeated or non-ASCII keys", () => {
    const call = (context: Record<string, unknown>): Call =>
      makeCall({
        messageId: "m",
        userId: "u",
        context,
        receivedAt: new Date(0),
        payload: { $case: "identify", value: { traits: undefined } },
      });
    expect(() => writtenBody(call({ b: 1, 2: "first in JSON" }))).toThrow(/left to the full decoder/);
    expect(() => writtenBody(call({ größe: 1 }))).toThrow(/left to the full decoder/);
    expect(writtenBody(call({ b: 1, a: [1, "x", null, true] }))).toBe(
      JSON.stringify(referenceWebhookBody(call({ b: 1, a: [1, "x", null, true] }))),
    );
    // The exact mode (decoded calls) writes them as JSON.stringify does.
    expect(exactBody(call({ b: 1, 2: "first in JSON" }))).toBe(JSON.stringify(referenceWebhookBody(call({ b: 1, 2: "first in JSON" }))));
    expect(exactBody(call({ größe: 1 }))).toBe(JSON.stringify(referenceWebhookBody(call({ größe: 1 }))));
  });
});

describe("webhookBodyBytes (exact mode)", () => {
  it("writes any decoded call's body as JSON.stringify of the reference body: any keys, any times", () => {
    // Decoded, as delivery has them: text is what UTF-8 can carry.
    const decodedCall = callArbitrary.filter((call) => call.payload !== undefined).map((call) => Call.decode(Call.encode(call).finish()));
    fc.assert(
      fc.property(decodedCall, (call) => {
        let expected: string;
        try {
          expected = JSON.stringify(referenceWebhookBody(call));
        } catch (error) {
          expect(() => exactBody(call)).toThrow((error as Error).message);
          return;
        }
        expect(exactBody(call)).toBe(expected);
      }),
      { numRuns: 1_000 },
    );
  });

  it("refuses a shown time no Date can format, as toISOString does, and ignores an accept time it does not show", () => {
    const call: Call = makeCall({
      messageId: "m",
      userId: "u",
      timestamp: new Date(Number.NaN),
      receivedAt: new Date(0),
      payload: { $case: "track", value: { event: "E", properties: undefined } },
    });
    expect(() => exactBody(call)).toThrow(/Invalid time value/);
    const shown = { ...call, timestamp: new Date(0), receivedAt: new Date(Number.NaN) };
    expect(exactBody(shown)).toBe(JSON.stringify(referenceWebhookBody(shown)));
  });

  it("refuses a call without a payload, naming it", () => {
    const call = Call.fromPartial({ messageId: "m-9" });
    expect(() => exactBody(call)).toThrow(/m-9 has no payload/);
  });
});
