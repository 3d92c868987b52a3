import { randomUUID } from "node:crypto";
import { protoCallToJson } from "@switchyard/calls";
import { IngestBatchRequest, type Call } from "@switchyard/contracts";
import { GrpcHttp2Sender } from "./grpc-http2-sender.js";
import { callJsonBytes, sampleCall } from "./sample-calls.js";

/** Segment's /v1/batch body for `calls`, as an SDK sends it (no write key in it: that goes in the Authorization header). */
export function segmentBatchJson(calls: Call[], sentAt = new Date()): string {
  return JSON.stringify({ batch: calls.map(protoCallToJson), sentAt: sentAt.toISOString() });
}

/** Digits stamped into the end of each id (the last 12 characters of a UUID). */
const STAMP_DIGITS = 12;

/**
 * A request body built once, whose ids (every call's messageId, and a gRPC
 * batchId) can be made new before each send by overwriting the last 12
 * characters of each in place with a counter: ingest derives an HTTP batch's
 * id from its messageIds and JetStream drops a repeated one as a duplicate,
 * so a body sent twice unchanged would be cheaper than a real one. Stamping
 * writes 100 short strings into a buffer (counted as the client's CPU);
 * everything else is built before the clock starts.
 * A body must not be stamped while it is in flight: each lane owns its own.
 */
export class StampableBody {
  private constructor(
    readonly bytes: Buffer,
    private readonly slots: number[],
  ) {}

  /** Finds each id's text in `bytes`; every id must occur exactly once. */
  static of(bytes: Buffer, ids: string[]): StampableBody {
    const slots = ids.map((id) => {
      const at = bytes.indexOf(id, 0, "latin1");
      if (at < 0 || bytes.indexOf(id, at + 1, "latin1") >= 0) throw new Error(`id ${id} is not in the body exactly once`);
      return at + id.length - STAMP_DIGITS;
    });
    return new StampableBody(bytes, slots);
  }

  get ids(): number {
    return this.slots.length;
  }

  /** Makes every id new: the counter's next values, so no two stamps in a process repeat one. */
  stamp(counter: { next: number }): Buffer {
    for (const slot of this.slots) this.bytes.write(String(counter.next++).padStart(STAMP_DIGITS, "0"), slot, "latin1");
    return this.bytes;
  }
}

/** One batch of realistic calls in each form the benchmarks send it, with its stampable ids. */
export interface BatchForms {
  /** Segment /v1/batch JSON. */
  json: StampableBody;
  /** A gRPC-framed IngestBatchRequest (batchId stamped too). */
  grpc: StampableBody;
  /** Mean Segment JSON bytes of a call in it. */
  meanCallJsonBytes: number;
}

/** `count` batches of `batchSize` realistic calls (sample-calls.ts), in JSON and gRPC form. */
export function batchForms(random: () => number, count: number, batchSize: number): BatchForms[] {
  return Array.from({ length: count }, () => {
    const calls = Array.from({ length: batchSize }, () => sampleCall(random));
    const ids = calls.map((call) => call.messageId);
    const batchId = randomUUID();
    const grpcBytes = GrpcHttp2Sender.frame(IngestBatchRequest.encode({ batchId, calls }).finish());
    return {
      json: StampableBody.of(Buffer.from(segmentBatchJson(calls)), ids),
      grpc: StampableBody.of(grpcBytes, [batchId, ...ids]),
      meanCallJsonBytes: calls.reduce((sum, call) => sum + callJsonBytes(call), 0) / batchSize,
    };
  });
}
