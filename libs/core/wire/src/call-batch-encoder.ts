import { CallBatchField } from "@switchyard/contracts";
import { EncodedTimestamp, lengthDelimitedSize, textFieldSize, writeLengthDelimitedHeader, writeTextField } from "./writer.js";

/**
 * Writes the switchyard.v1.CallBatch that ingest publishes, from calls that
 * are already encoded (by the generated encoder, or passed through from the
 * client's bytes), measuring first so the message is allocated once.
 */

/** One Call's encoded bytes (the message body, without tag and length). */
export interface EncodedCall {
  readonly byteLength: number;
  /** Writes the bytes at `offset`; returns the offset after them. */
  writeTo(target: Buffer, offset: number): number;
}

/** A call already encoded as a whole, e.g. by the generated encoder. */
export class EncodedCallBytes implements EncodedCall {
  constructor(private readonly bytes: Uint8Array) {}

  get byteLength(): number {
    return this.bytes.byteLength;
  }

  writeTo(target: Buffer, offset: number): number {
    target.set(this.bytes, offset);
    return offset + this.bytes.byteLength;
  }
}

/** The CallBatch's own fields. */
export interface CallBatchHeader {
  batchId: string;
  sourceId: string;
  receivedAt: Date;
}

const { BATCH_ID, SOURCE_ID, RECEIVED_AT, CALLS } = CallBatchField;

/** The CallBatch's bytes, fields in number order like the generated encoder writes them. */
export function encodeCallBatch(header: CallBatchHeader, calls: readonly EncodedCall[]): Buffer {
  const receivedAt = new EncodedTimestamp(RECEIVED_AT, header.receivedAt);
  let size = headerSize(header, receivedAt);
  for (const call of calls) size += lengthDelimitedSize(CALLS, call.byteLength);

  const target = Buffer.allocUnsafe(size);
  let offset = 0;
  if (header.batchId !== "") offset = writeTextField(target, offset, BATCH_ID, header.batchId);
  if (header.sourceId !== "") offset = writeTextField(target, offset, SOURCE_ID, header.sourceId);
  offset = receivedAt.writeTo(target, offset);
  for (const call of calls) {
    const bodyStart = writeLengthDelimitedHeader(target, offset, CALLS, call.byteLength);
    offset = call.writeTo(target, bodyStart);
    if (offset - bodyStart !== call.byteLength)
      throw new Error(`a call wrote ${offset - bodyStart} bytes, not the ${call.byteLength} it announced`);
  }
  if (offset !== size) throw new Error(`CallBatch encoding wrote ${offset} bytes, not the ${size} it measured`);
  return target;
}

function headerSize(header: CallBatchHeader, receivedAt: EncodedTimestamp): number {
  let size = receivedAt.byteLength;
  if (header.batchId !== "") size += textFieldSize(BATCH_ID, header.batchId);
  if (header.sourceId !== "") size += textFieldSize(SOURCE_ID, header.sourceId);
  return size;
}

/** One CallBatch of a batch that is published in parts: calls [first, last] of the accepted calls, in order. */
export interface CallBatchPart {
  payload: Buffer;
  first: number;
  last: number;
}

/**
 * The batch as CallBatch messages of at most `maxBytes` each: one message
 * when it fits, as nearly every batch does, otherwise consecutive runs of
 * calls, each as large as fits. The 500 KB batch limit is on the calls' JSON,
 * and protobuf can take several times the JSON's bytes (a list of small
 * numbers: 2 bytes a number in JSON, 11 in a google.protobuf.Value), so a
 * valid batch can outgrow the bus's largest message. A call alone always fits
 * (at most 32 KB of JSON).
 */
export function encodeCallBatchParts(header: CallBatchHeader, calls: readonly EncodedCall[], maxBytes: number): CallBatchPart[] {
  const base = headerSize(header, new EncodedTimestamp(RECEIVED_AT, header.receivedAt));
  const parts: CallBatchPart[] = [];
  let first = 0;
  let size = base;
  const close = (end: number) => {
    parts.push({ payload: encodeCallBatch(header, calls.slice(first, end)), first, last: end - 1 });
    first = end;
    size = base;
  };
  for (let index = 0; index < calls.length; index++) {
    const callSize = lengthDelimitedSize(CALLS, calls[index]!.byteLength);
    if (index > first && size + callSize > maxBytes) close(index);
    size += callSize;
  }
  close(calls.length);
  return parts;
}
