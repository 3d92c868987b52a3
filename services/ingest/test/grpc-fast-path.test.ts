import { callSchema, checkCall, MAX_BATCH_BYTES, protoCallToJson, validCallToProto, type Rejection } from "@switchyard/calls";
import { Call, CallBatch, IngestBatchRequest } from "@switchyard/contracts";
import { createLogger, isServiceError, Registry } from "@switchyard/platform";
import { type SourceRecord } from "@switchyard/workspace";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallAcceptor } from "../src/acceptor.js";
import { deterministicId } from "@switchyard/bus";
import { IngestMetrics } from "../src/metrics.js";
import { grpcBatchCalls, WireCall } from "../src/grpc-calls.js";
import type { BatchPublisher, EncodedBatch } from "@switchyard/bus";
import { anyCall, callBytes, callNearSize, deeplyNestedCall, lengthDelimited } from "@switchyard/testkit";

/**
 * The gRPC fast path against the exact path (decode, check, re-encode): for the
 * same call bytes it must make the same decisions (accept, or refuse with the
 * same index, field, rule and message; refuse the batch as a whole over 500 KB)
 * and publish calls that decode to exactly what the exact path publishes.
 */

const SOURCE: SourceRecord = { id: "web", writeKeyHashes: [`sha256:${"0".repeat(64)}`] };
const BATCH_ID = "batch-1";
const logger = createLogger({ service: "ingest-test", level: "silent" });

class CapturingPublisher {
  readonly published: EncodedBatch[] = [];

  publish(batch: EncodedBatch): Promise<{ duplicate: boolean; sequence: number }> {
    this.published.push(batch);
    return Promise.resolve({ duplicate: false, sequence: this.published.length });
  }

  /** Every batch here in one message, so the comparison sees it whole (splitting is tested on its own). */
  maxPayloadBytes(): number {
    return Number.MAX_SAFE_INTEGER;
  }
}

type Outcome =
  | { refused: string }
  | { messageIds: string[]; rejections: Rejection[]; calls: Call[]; receivedAt: Date | undefined }
  | { malformedAt: number[]; notUtf8At: number[]; messageIds: string[]; rejections: Rejection[]; calls: Call[] };

/** The fast path as ingest runs it: scan, check, pass through, encode one CallBatch. */
async function fastPath(bytes: Buffer[]): Promise<Exclude<Outcome, { malformedAt: number[] }>> {
  const publisher = new CapturingPublisher();
  const acceptor = new CallAcceptor(publisher as unknown as BatchPublisher, new IngestMetrics(new Registry()), logger);
  let calls;
  try {
    calls = grpcBatchCalls(bytes);
  } catch (error) {
    if (isServiceError(error)) return { refused: error.message };
    throw error;
  }
  const result = await acceptor.accept({ source: SOURCE, transport: "grpc", batchId: BATCH_ID, calls });
  const published = publisher.published[0];
  const batch = published ? CallBatch.decode(published.payload) : undefined;
  if (batch) expect([batch.batchId, batch.sourceId, published?.batchId]).toEqual([BATCH_ID, SOURCE.id, BATCH_ID]);
  return { messageIds: result.messageIds, rejections: result.rejections, calls: batch?.calls ?? [], receivedAt: batch?.receivedAt };
}

/** The generated decoder's reading of one call, inside its request as ingest decoded it (nesting levels count); undefined when it throws. */
function decodeAsBefore(bytes: Buffer): Call | undefined {
  try {
    return IngestBatchRequest.decode(lengthDelimited(2, bytes)).calls[0];
  } catch {
    return undefined;
  }
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Whether the generated decoder meets text that is not UTF-8 (which it would replace with U+FFFD) in a call it can read. */
function hasTextNotUtf8(bytes: Buffer): boolean {
  try {
    IngestBatchRequest.decode(new BinaryReader(lengthDelimited(2, bytes), (text) => strictUtf8.decode(text)));
    return false;
  } catch (error) {
    if (error instanceof TypeError) return true;
    throw error;
  }
}

/**
 * The path every gRPC call took before: decode, Segment JSON, JSON size,
 * batch limit, checkCall, then validCallToProto for the bus. Calls the
 * decoder throws on are listed in malformedAt (before, they failed the whole
 * request with INTERNAL); calls with text that is not UTF-8 in notUtf8At
 * (before, stored with U+FFFD; now refused, rule utf8).
 */
function slowPath(bytes: Buffer[], receivedAt: Date): Outcome {
  const decoded = bytes.map(decodeAsBefore);
  const jsons = decoded.map((value) => value && protoCallToJson(value));
  const sizes = jsons.map((json) => (json ? Buffer.byteLength(JSON.stringify(json), "utf8") : 0));
  const total = sizes.reduce((sum, size) => sum + size, 0);
  if (total > MAX_BATCH_BYTES)
    return { refused: `batch is ${total} bytes of JSON; the limit is ${MAX_BATCH_BYTES} bytes (500 KB): split it` };
  const malformedAt: number[] = [];
  const notUtf8At: number[] = [];
  const rejections: Rejection[] = [];
  const messageIds: string[] = [];
  const calls: Call[] = [];
  jsons.forEach((json, index) => {
    if (!json) return malformedAt.push(index);
    if (hasTextNotUtf8(bytes[index]!)) return notUtf8At.push(index);
    const check = checkCall(json, index, sizes[index]);
    if (!check.ok) return rejections.push(check.rejection);
    const messageId = check.call.messageId ?? deterministicId(SOURCE.id, BATCH_ID, String(index));
    messageIds.push(messageId);
    // Through the wire and back, as delivery reads it.
    calls.push(Call.decode(Call.encode(validCallToProto(kindlessListValuesAsNull(check.call), { messageId, receivedAt })).finish()));
  });
  return { malformedAt, notUtf8At, messageIds, rejections, calls };
}

/**
 * A list element whose Value has no kind (it held only fields the decoder
 * skips) decodes as undefined. The exact path stores it so; the fast path writes
 * it as JSON does, null, which is what every reader of the call shows anyway.
 */
function kindlessListValuesAsNull<T>(value: T): T {
  if (Array.isArray(value)) return value.map((member: unknown) => (member === undefined ? null : kindlessListValuesAsNull(member))) as T;
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, kindlessListValuesAsNull(member)])) as T;
}

/** Same decisions and same published calls; a call the decoder could not read must be refused as malformed. */
async function expectSameOutcome(bytes: Buffer[]): Promise<void> {
  const fast = await fastPath(bytes);
  const slow = slowPath(bytes, "receivedAt" in fast && fast.receivedAt ? fast.receivedAt : new Date());
  if ("refused" in slow || "refused" in fast) {
    expect(fast).toEqual(slow);
    return;
  }
  const malformedAt = "malformedAt" in slow ? slow.malformedAt : [];
  const fastMalformed = fast.rejections.filter((rejection) => rejection.rule === "malformed");
  expect(fastMalformed.map((rejection) => rejection.index)).toEqual(malformedAt);
  const notUtf8At = "notUtf8At" in slow ? slow.notUtf8At : [];
  const fastNotUtf8 = fast.rejections.filter((rejection) => rejection.rule === "utf8");
  expect(fastNotUtf8.map((rejection) => rejection.index)).toEqual(notUtf8At);
  for (const rejection of fastNotUtf8) expect(rejection.message).toMatch(/^[\w.]+: (keys )?must be valid UTF-8$/);
  expect(fast.rejections.filter((rejection) => rejection.rule !== "malformed" && rejection.rule !== "utf8")).toEqual(slow.rejections);
  expect(fast.messageIds).toEqual(slow.messageIds);
  expect(fast.calls).toEqual(slow.calls);
}

function acceptedIndices(count: number, rejections: Rejection[], alsoRefused: number[] = []): number[] {
  const refused = new Set([...rejections.map((rejection) => rejection.index), ...alsoRefused]);
  return Array.from({ length: count }, (_, index) => index).filter((index) => !refused.has(index));
}

const batchOf = (calls: fc.Arbitrary<Buffer>, maxLength = 5) => fc.array(calls, { minLength: 1, maxLength });

describe("gRPC fast path", () => {
  it("decides and publishes like the decode-and-re-encode path, for any call", async () => {
    await fc.assert(fc.asyncProperty(batchOf(callBytes), expectSameOutcome), { numRuns: 1000 });
  });

  it("decides like the old path for calls around the 32 KB limit and batches around 500 KB", async () => {
    await fc.assert(fc.asyncProperty(batchOf(callNearSize(), 3), expectSameOutcome), { numRuns: 150 });
    // 16 calls of about 32,000 bytes each are about 512,000 bytes: the batch limit.
    await fc.assert(fc.asyncProperty(fc.array(callNearSize(32_000), { minLength: 16, maxLength: 16 }), expectSameOutcome), { numRuns: 40 });
  });

  it("decides like the old path around the decoder's nesting limit", async () => {
    await fc.assert(fc.asyncProperty(batchOf(deeplyNestedCall, 2), expectSameOutcome), { numRuns: 100 });
  });

  it("takes the fast path for every call the generated encoder writes, but those with numbers that are not finite", () => {
    fc.assert(
      fc.property(anyCall, (value) => {
        const calls = grpcBatchCalls([Buffer.from(Call.encode(value).finish())]);
        const json = protoCallToJson(value);
        // Those over the limit are measured exactly, by the exact path; so are those the rules refuse for a number
        // (NaN, ±Infinity), so that the refusal names its field.
        let finite = true;
        JSON.stringify(json, (_key, member: unknown) => {
          if (typeof member === "number" && !Number.isFinite(member)) finite = false;
          return member;
        });
        if (finite && Buffer.byteLength(JSON.stringify(json)) < 30_000) expect(calls[0]).toBeInstanceOf(WireCall);
      }),
      { numRuns: 500 },
    );
  });

  it("refuses random bytes as a call without ever crashing, and never accepts what the decoder could not read", async () => {
    const garbage = fc.oneof(
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
      // Valid calls with a few bytes changed, truncated or extended.
      fc
        .tuple(
          callBytes,
          fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
          fc.nat(),
          fc.uint8Array({ maxLength: 4 }),
        )
        .map(([bytes, flips, cut, tail]) => {
          const changed = Buffer.from(bytes);
          for (const [position, byte] of flips) if (changed.length > 0) changed[position % changed.length] = byte;
          return Buffer.concat([changed.subarray(0, changed.length - (cut % 3)), tail]);
        }),
    );
    await fc.assert(
      fc.asyncProperty(batchOf(garbage, 3), async (bytes) => {
        const fast = await fastPath(bytes);
        if ("refused" in fast) return;
        const slow = slowPath(bytes, fast.receivedAt ?? new Date());
        if ("refused" in slow) return;
        const malformed = new Set(
          fast.rejections.filter((rejection) => rejection.rule === "malformed").map((rejection) => rejection.index),
        );
        // What the decoder could not read is refused; the fast path may refuse more (a zero tag, a stray end-group
        // tag: bytes the decoder half-reads instead of refusing).
        for (const index of "malformedAt" in slow ? slow.malformedAt : []) expect(malformed.has(index)).toBe(true);
        // Whatever was accepted was accepted by the exact path too, and published the same.
        const fastAccepted = acceptedIndices(bytes.length, fast.rejections);
        const slowAccepted = acceptedIndices(
          bytes.length,
          slow.rejections,
          "malformedAt" in slow ? [...slow.malformedAt, ...slow.notUtf8At] : [],
        );
        fastAccepted.forEach((index, position) => {
          const before = slowAccepted.indexOf(index);
          expect(before).toBeGreaterThanOrEqual(0);
          expect([fast.messageIds[position], fast.calls[position]]).toEqual([slow.messageIds[before], slow.calls[before]]);
        });
      }),
      { numRuns: 1500 },
    );
  });

  it("publishes a list element that has no kind as null, as JSON writes it (a counterexample of the property above)", async () => {
    // A group call whose traits hold {"a": [<a Value holding only an unknown field>, null]}.
    const kindless = Buffer.from([0x38, 0x10]); // field 7, varint 16: not a field of Value
    const nullValue = Buffer.from([0x08, 0x00]);
    const list = Buffer.concat([lengthDelimited(1, kindless), lengthDelimited(1, nullValue)]);
    const struct = lengthDelimited(1, Buffer.concat([lengthDelimited(1, Buffer.from("a")), lengthDelimited(2, lengthDelimited(6, list))]));
    const group = Buffer.concat([lengthDelimited(1, Buffer.from("g")), lengthDelimited(2, struct)]);
    const call = Buffer.concat([lengthDelimited(2, Buffer.from("user-1")), lengthDelimited(14, group)]);
    expect(decodeAsBefore(call)?.payload).toEqual({ $case: "group", value: { groupId: "g", traits: { a: [undefined, null] } } });
    const fast = await fastPath([call]);
    expect("calls" in fast && fast.calls[0]?.payload).toEqual({ $case: "group", value: { groupId: "g", traits: { a: [null, null] } } });
  });

  it("checks calls with zod's compiled fast path exactly as with its ordinary parser", () => {
    fc.assert(
      fc.property(anyCall, (value) => {
        const json = protoCallToJson(value);
        const check = checkCall(json, 0, 0);
        const runtime = callSchema.safeParse(json);
        expect(check.ok).toBe(runtime.success);
        if (!check.ok) expect(check.rejection.field).toBe(runtime.error?.issues[0]?.path.join("."));
      }),
      { numRuns: 1000 },
    );
  });
});
