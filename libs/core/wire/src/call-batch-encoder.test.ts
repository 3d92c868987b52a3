import { Call, CallBatch } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anyCall, anyText, makeCall } from "@switchyard/testkit";
import { EncodedCallBytes, encodeCallBatch, encodeCallBatchParts } from "./call-batch-encoder.js";
import { scanCall } from "./call-scanner.js";
import { AcceptTime, PassThroughCall } from "./pass-through-call.js";
import { WireReader } from "./reader.js";

function topLevelTags(bytes: Buffer): number[] {
  const reader = new WireReader(bytes);
  const tags: number[] = [];
  while (reader.pos < bytes.length) {
    const tag = reader.tag(bytes.length);
    tags.push(tag);
    reader.skipField(tag, bytes.length);
  }
  return tags;
}

/** Any instant a Date holds, and a few edges: the epoch, just before it, year 0 and 9999. */
const anyDate = fc.oneof(
  fc.date({ noInvalidDate: true }),
  fc.constantFrom(
    new Date(0),
    new Date(-1),
    new Date(-999),
    new Date(1),
    new Date("0000-01-01T00:00:00Z"),
    new Date("9999-12-31T23:59:59.999Z"),
  ),
);

describe("CallBatch encoder", () => {
  it("writes exactly the bytes the generated encoder writes", () => {
    fc.assert(
      fc.property(anyText(30), anyText(10), anyDate, fc.array(anyCall, { maxLength: 4 }), (batchId, sourceId, receivedAt, calls) => {
        const ours = encodeCallBatch(
          { batchId, sourceId, receivedAt },
          calls.map((value) => new EncodedCallBytes(Call.encode(value).finish())),
        );
        expect(ours).toEqual(Buffer.from(CallBatch.encode({ batchId, sourceId, receivedAt, calls }).finish()));
      }),
      { numRuns: 500 },
    );
  });

  it("passes a call through with the fields ingest sets, as the generated encoder would write them", () => {
    fc.assert(
      fc.property(anyCall, anyText(40), fc.option(anyDate, { nil: undefined }), anyDate, (value, messageId, timestamp, receivedAt) => {
        const client = { ...value, timestamp, receivedAt: new Date(123) };
        const scanned = scanCall(Buffer.from(Call.encode(client).finish()));
        const passed = new PassThroughCall(scanned, messageId, new AcceptTime(receivedAt));
        const batch = CallBatch.decode(encodeCallBatch({ batchId: "b", sourceId: "s", receivedAt }, [passed]));
        const expected = Call.decode(
          Call.encode({
            ...client,
            messageId: client.messageId || messageId,
            timestamp: client.timestamp ?? receivedAt,
            receivedAt,
          }).finish(),
        );
        expect(batch.calls).toEqual([expected]);
      }),
      { numRuns: 500 },
    );
  });

  it("drops a client's received_at rather than appending to it (protobuf would merge the two)", () => {
    const client = Buffer.from(
      Call.encode(
        makeCall({
          messageId: "m",
          userId: "u", // Nanos only: merged with ours (seconds only) it would read as a different time.
          receivedAt: new Date(7),
          payload: { $case: "alias", value: { previousId: "p" } },
        }),
      ).finish(),
    );
    const receivedAt = new Date(1_700_000_000_000);
    const passed = new PassThroughCall(scanCall(client), "unused", new AcceptTime(receivedAt));
    const bytes = Buffer.alloc(passed.byteLength);
    passed.writeTo(bytes, 0);
    expect(topLevelTags(bytes).filter((tag) => tag >>> 3 === 7)).toHaveLength(1);
    const [stored] = CallBatch.decode(encodeCallBatch({ batchId: "b", sourceId: "s", receivedAt }, [passed])).calls;
    expect(stored?.receivedAt).toEqual(receivedAt);
    expect(stored?.messageId).toBe("m");
  });

  it("splits a batch too large for one message into runs of calls that each fit, in order, and keeps one that fits whole", () => {
    fc.assert(
      fc.property(fc.array(anyCall, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 4_000 }), (calls, maxBytes) => {
        const header = { batchId: "b", sourceId: "s", receivedAt: new Date(1_700_000_000_000) };
        const encoded = calls.map((value) => new EncodedCallBytes(Call.encode(value).finish()));
        const parts = encodeCallBatchParts(header, encoded, maxBytes);
        const whole = encodeCallBatch(header, encoded);
        if (whole.length <= maxBytes) expect(parts.map((part) => part.payload)).toEqual([whole]);
        // Consecutive runs covering every call once; each over the limit only when it is a single call.
        expect(parts.map(({ first, last }) => [first, last]).flat()).toEqual(
          parts.flatMap((_, index) => [index === 0 ? 0 : parts[index - 1]!.last + 1, parts[index]!.last]),
        );
        expect(parts.at(-1)!.last).toBe(calls.length - 1);
        for (const part of parts) if (part.last > part.first) expect(part.payload.length).toBeLessThanOrEqual(maxBytes);
        const decoded = parts.flatMap((part) => CallBatch.decode(part.payload));
        expect(decoded.flatMap((batch) => batch.calls)).toEqual(CallBatch.decode(whole).calls);
        expect(new Set(decoded.map((batch) => batch.batchId))).toEqual(new Set(["b"]));
      }),
      { numRuns: 300 },
    );
  });
});
