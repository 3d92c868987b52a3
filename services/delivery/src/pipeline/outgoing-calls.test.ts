import { Call, CallBatch } from "@switchyard/contracts";
import { JsonBytes, readCallBatch, WireReader, writeWebhookBody } from "@switchyard/wire";
import { callArbitrary, callBatchArbitrary, canonical, damagedBatchBytes, referenceWebhookBody, makeCall } from "@switchyard/testkit";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { outgoingCall, readOutgoingBatch, type OutgoingBatch } from "./outgoing-calls.js";

/** Everything a reader of the batch could get wrong, as text: Dates by time, bodies as their bytes, objects with key order. */
function describeBatch(batch: OutgoingBatch): string {
  return JSON.stringify({
    sourceId: batch.sourceId,
    receivedAt: batch.receivedAt?.getTime(),
    calls: batch.calls.map((call) => ({
      messageId: call.messageId,
      receivedAt: call.receivedAt?.getTime(),
      integrations: call.integrations === undefined ? "none" : canonical(call.integrations),
      body: call.body?.toString("base64") ?? "none",
      call: canonical(call.call()),
    })),
  });
}

/** What decoding the batch gives (or that it throws), the reference the wire path must match. */
function decoded(bytes: Uint8Array): string {
  try {
    const batch = readCallBatch(bytes);
    return describeBatch({ sourceId: batch.sourceId, receivedAt: batch.receivedAt, calls: batch.calls.map(outgoingCall) });
  } catch {
    return "throws";
  }
}

function fromWire(bytes: Uint8Array): string {
  try {
    return describeBatch(readOutgoingBatch(bytes));
  } catch {
    return "throws";
  }
}

const encodeBatch = (batch: CallBatch) => CallBatch.encode(batch).finish();

function varint(value: number): Buffer {
  const bytes: number[] = [];
  for (; value >= 0x80; value = Math.floor(value / 0x80)) bytes.push((value % 0x80) | 0x80);
  bytes.push(value);
  return Buffer.from(bytes);
}

/** The body written straight from a call's bytes; throws where the writer leaves the call to the decoder. */
function writtenBody(call: Call): string {
  const bytes = Call.encode(call).finish();
  const out = new JsonBytes(16);
  out.start();
  writeWebhookBody(new WireReader(bytes), 0, bytes.length, out);
  return out.finish().toString("utf8");
}

// A call with neither timestamp nor receivedAt is stamped "now": both paths must see the same now.
beforeEach(() => {
  vi.useFakeTimers({ now: new Date("2026-11-23T12:00:00.000Z"), toFake: ["Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("readOutgoingBatch", () => {
  it("gives each call's body, id, receivedAt, integrations and decoded call exactly as decoding the batch does", () => {
    fc.assert(
      fc.property(callBatchArbitrary, (batch) => {
        const bytes = encodeBatch(batch);
        expect(fromWire(bytes)).toBe(decoded(bytes));
      }),
      { numRuns: 1_000 },
    );
  });

  it("agrees with decoding on damaged bytes: the same calls and bodies, or both throw", () => {
    fc.assert(
      fc.property(damagedBatchBytes(encodeBatch), (bytes) => {
        expect(fromWire(bytes)).toBe(decoded(bytes));
      }),
      { numRuns: 3_000 },
    );
  });

  it("agrees with decoding on calls whose fields repeat (the decoder reads every occurrence)", () => {
    // Two encoded calls back to back are one call to the decoder: every field of both is read, the last one kept.
    const merged = fc
      .tuple(callArbitrary, callArbitrary)
      .map(([first, second]) => Buffer.concat([Call.encode(first).finish(), Call.encode(second).finish()]));
    const batchBytes = fc
      .array(merged, { minLength: 1, maxLength: 3 })
      .map((calls) => Buffer.concat([...calls.map((call) => Buffer.concat([Buffer.from([0x22]), varint(call.length), call]))]));
    fc.assert(
      fc.property(batchBytes, (bytes) => {
        expect(fromWire(bytes)).toBe(decoded(bytes));
      }),
      { numRuns: 1_000 },
    );
    // Found in review: an earlier payload whose Struct runs past its end swallows the userId after it, and an
    // earlier context the decoder cannot skip past makes it throw; only the last of each is what the body shows.
    for (const hex of ["22120a026d315a02120412026162 5a040a026576", "220d0a026d312a011f2a005a020a00"]) {
      const bytes = Buffer.from(hex.replace(/ /g, ""), "hex");
      expect(fromWire(bytes)).toBe(decoded(bytes));
    }
  });

  it("leaves a call without a type without a body, and decodes a call's integrations when it has them", () => {
    const batch = readOutgoingBatch(
      encodeBatch({
        batchId: "b",
        sourceId: "s",
        receivedAt: undefined,
        calls: [
          makeCall({ messageId: "untyped", userId: "u", payload: undefined }),
          makeCall({
            messageId: "routed",
            userId: "u",
            timestamp: new Date("2026-11-21T10:00:00.000Z"),
            integrations: { All: false, Webhooks: true },
            payload: { $case: "alias", value: { previousId: "p" } },
          }),
        ],
      }),
    );
    expect(batch.calls.map((call) => call.body?.toString())).toEqual([
      undefined,
      '{"version":1,"type":"alias","Previous ID":"p","User ID":"u","timestamp":"2026-11-21T10:00:00.000Z","messageId":"routed"}',
    ]);
    expect(batch.calls[1]!.integrations).toEqual({ All: false, Webhooks: true });
  });

  it("keeps every body intact when the bodies outgrow the slab they are written into", () => {
    // Control characters take six bytes each in JSON: 40 bodies of 30 KB, more than one 1 MiB slab holds.
    const calls = Array.from({ length: 40 }, (_, index): Call =>
      makeCall({
        messageId: `m-${index}`,
        userId: "u",
        timestamp: new Date("2026-11-21T10:00:00.000Z"),
        context: { note: "\u0001".repeat(5_000 + index) },
        payload: { $case: "track", value: { event: "E", properties: { n: index } } },
      }),
    );
    const batch = readOutgoingBatch(encodeBatch({ batchId: "b", sourceId: "s", receivedAt: undefined, calls }));
    expect(batch.calls.map((call) => call.body?.toString())).toEqual(calls.map((call) => JSON.stringify(referenceWebhookBody(call))));
  });
});

describe("keys named like Object.prototype's members", () => {
  it("reach the webhook body as data, by the wire writer and by the decoder alike", () => {
    const properties = JSON.parse('{"__proto__":{"a":1},"constructor":"c","prototype":[1],"x":{"__proto__":null}}') as Record<
      string,
      unknown
    >;
    const context = JSON.parse('{"__proto__":"ctx","toString":1}') as Record<string, unknown>;
    const integrations = JSON.parse('{"__proto__":true,"Webhooks":{"__proto__":1}}') as Record<string, unknown>;
    const call: Call = makeCall({
      messageId: "m",
      userId: "u",
      timestamp: new Date(0),
      context,
      integrations,
      receivedAt: new Date(0),
      payload: { $case: "track", value: { event: "E", properties } },
    });
    const bytes = encodeBatch({ batchId: "b", sourceId: "s", receivedAt: undefined, calls: [call] });
    const expected =
      '{"version":1,"type":"track","userId":"u","event":"E",' +
      '"properties":{"__proto__":{"a":1},"constructor":"c","prototype":[1],"x":{"__proto__":null}},' +
      '"timestamp":"1970-01-01T00:00:00.000Z","messageId":"m","context":{"__proto__":"ctx","toString":1}}';
    expect(writtenBody(call)).toBe(expected);
    expect(JSON.stringify(referenceWebhookBody(readCallBatch(bytes).calls[0]!))).toBe(expected);
    expect(JSON.stringify(referenceWebhookBody(CallBatch.decode(bytes).calls[0]!))).toBe(expected);
    const outgoing = readOutgoingBatch(bytes).calls[0]!;
    expect(outgoing.body?.toString()).toBe(expected);
    expect(JSON.stringify(outgoing.integrations)).toBe('{"__proto__":true,"Webhooks":{"__proto__":1}}');
    expect(({} as Record<string, unknown>).a).toBeUndefined();
  });
});
