import { MalformedWireError, UNUSUAL, WireReader } from "./reader.js";
import { BATCH_CALLS, BATCH_RECEIVED_AT, BATCH_SOURCE_ID } from "./tags.js";

/**
 * The one walk over a switchyard.v1.CallBatch's own fields for the readers that work on its bytes
 * (delivery's outgoing calls, the schema's facts, the console's counts): each field it meets is
 * handed over as the range of the reader's bytes its value takes. readCallBatch, which decodes a
 * batch whole, has its own tighter loop.
 */

/** What walkCallBatch hands over; the reader is put at the field's end after each. */
export interface CallBatchVisitor {
  sourceId(reader: WireReader, start: number, end: number): void;
  receivedAt(reader: WireReader, start: number, end: number): void;
  /** One Call's bytes, [start, end). */
  call(reader: WireReader, start: number, end: number): void;
}

/**
 * Walks the batch in [reader.pos, end) with plain reads: anything but the plain encoding protobuf
 * writers produce throws UNUSUAL (the caller then decodes the batch). Other fields are skipped.
 */
export function walkCallBatch(reader: WireReader, end: number, visitor: CallBatchVisitor): void {
  while (reader.pos < end) {
    const tag = reader.varint32();
    if (tag !== BATCH_CALLS && tag !== BATCH_SOURCE_ID && tag !== BATCH_RECEIVED_AT) {
      reader.skip(tag, end);
      continue;
    }
    const fieldEnd = reader.fieldEnd(end);
    const start = reader.pos;
    if (tag === BATCH_CALLS) visitor.call(reader, start, fieldEnd);
    else if (tag === BATCH_SOURCE_ID) visitor.sourceId(reader, start, fieldEnd);
    else visitor.receivedAt(reader, start, fieldEnd);
    reader.pos = fieldEnd;
  }
  if (reader.pos !== end) throw UNUSUAL;
}

/**
 * How many calls a CallBatch's bytes hold, with checked reads, for a count that never decodes a
 * call: a damaged batch counts the calls before the damage.
 */
export function countBatchCalls(bytes: Uint8Array): number {
  const reader = new WireReader(bytes);
  const end = bytes.length;
  let count = 0;
  try {
    while (reader.pos < end) {
      const tag = reader.tag(end);
      if (tag === BATCH_CALLS) count++;
      reader.skipField(tag, end);
    }
  } catch (error) {
    if (!(error instanceof MalformedWireError)) throw error;
  }
  return count;
}
