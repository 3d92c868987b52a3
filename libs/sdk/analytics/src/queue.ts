import { MAX_BATCH_BYTES } from "@switchyard/calls";
import type { OutcomeCallback } from "./outcomes.js";
import { IngestBatchRequestField } from "@switchyard/contracts";
import { ProtoWriter } from "@switchyard/wire";

/**
 * One queued call: where its encoded bytes lie and little else, so a queued
 * call costs its protobuf size plus a few dozen bytes (the messageId is read
 * back from the bytes when an outcome is reported).
 */
export class QueuedCall {
  constructor(
    /** The switchyard.v1.Call is chunk[offset, offset + length). */
    readonly chunk: Buffer,
    readonly offset: number,
    readonly length: number,
    readonly jsonBytes: number,
    /** Order of arrival, for flush(): it waits for the calls queued before it. */
    readonly seq: number,
    readonly callback: OutcomeCallback | undefined,
  ) {}
}

/** A FIFO of calls with O(1) push and shift (Array#shift is linear on long arrays). */
export class CallQueue {
  private items: (QueuedCall | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(call: QueuedCall): void {
    this.items.push(call);
  }

  peek(): QueuedCall | undefined {
    return this.items[this.head];
  }

  shift(): QueuedCall | undefined {
    const call = this.items[this.head];
    if (call === undefined) return undefined;
    this.items[this.head++] = undefined;
    // Drop the consumed prefix once it is most of the array.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return call;
  }

  /** Removes and returns everything. */
  drain(): QueuedCall[] {
    const calls = this.items.slice(this.head) as QueuedCall[];
    this.items = [];
    this.head = 0;
    return calls;
  }
}

/**
 * The JSON size a batch may reach: ingest refuses batches over 500 KB (the
 * sum of its calls' JSON sizes), and measures a call a little differently
 * from JSON.stringify on the message (its own field order, the fields it
 * knows), so 4 KB are kept in reserve.
 */
export const BATCH_JSON_BUDGET = MAX_BATCH_BYTES - 4 * 1024;

/** Takes the calls of the next batch: up to `maxCalls`, within `maxJsonBytes`, at least one. */
export function takeBatch(queue: CallQueue, maxCalls: number, maxJsonBytes: number = BATCH_JSON_BUDGET): QueuedCall[] {
  const calls: QueuedCall[] = [];
  let jsonBytes = 0;
  for (let next = queue.peek(); next !== undefined && calls.length < maxCalls; next = queue.peek()) {
    if (calls.length > 0 && jsonBytes + next.jsonBytes > maxJsonBytes) break;
    jsonBytes += next.jsonBytes;
    calls.push(queue.shift()!);
  }
  return calls;
}

const requestWriter = new ProtoWriter(64 * 1024);

/** The bytes of a switchyard.v1.IngestBatchRequest: batch_id (1), then each call (2). Built once, re-sent as is. */
export function encodeBatchRequest(batchId: string, calls: readonly QueuedCall[]): Buffer {
  requestWriter.reset();
  requestWriter.string(IngestBatchRequestField.BATCH_ID, batchId);
  for (const call of calls) requestWriter.bytes(IngestBatchRequestField.CALLS, call.chunk, call.offset, call.length);
  return requestWriter.copy();
}
