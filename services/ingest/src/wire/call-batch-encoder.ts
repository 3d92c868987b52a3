import { lengthDelimitedSize, textFieldSize, TimestampField, writeLengthDelimitedHeader, writeTextField } from "./wire-writer.js";

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

export interface CallBatchHeader {
  batchId: string;
  sourceId: string;
  receivedAt: Date;
}

// Field numbers of CallBatch.
const BATCH_ID = 1;
const SOURCE_ID = 2;
const RECEIVED_AT = 3;
const CALLS = 4;

/** The CallBatch's bytes, fields in number order like the generated encoder writes them. */
export function encodeCallBatch(header: CallBatchHeader, calls: readonly EncodedCall[]): Buffer {
  let size = 0;
  if (header.batchId !== "") size += textFieldSize(BATCH_ID, header.batchId);
  if (header.sourceId !== "") size += textFieldSize(SOURCE_ID, header.sourceId);
  const receivedAt = new TimestampField(RECEIVED_AT, header.receivedAt);
  size += receivedAt.byteLength;
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
