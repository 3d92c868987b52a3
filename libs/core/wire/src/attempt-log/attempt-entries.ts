import { DeliveryAttempt, DeliveryAttemptField, DeliveryAttemptsField } from "@switchyard/contracts";
import { WireReader } from "../reader.js";
import { lengthTag } from "../tags.js";

/*
 * Reading the attempt log's messages from their bytes, so that a page decodes only the entries it
 * keeps: where each entry of a DeliveryAttempts lies, an attempt without its exchange, and the
 * facts a page filters on.
 */

const ATTEMPTS_TAG = lengthTag(DeliveryAttemptsField.ATTEMPTS);
const EXCHANGE_TAG = lengthTag(DeliveryAttemptField.EXCHANGE);

/**
 * An attempt without its exchange: the exchange (bodies, headers) is most of its bytes, and is
 * written last, so the fields before it are decoded and the rest is not.
 */
export function attemptWithoutExchange(bytes: Uint8Array): DeliveryAttempt {
  const reader = new WireReader(bytes);
  const end = bytes.length;
  while (reader.pos < end) {
    const fieldStart = reader.pos;
    const tag = reader.tag(end);
    reader.skipField(tag, end);
    if (tag === EXCHANGE_TAG && reader.pos === end) return DeliveryAttempt.decode(bytes.subarray(0, fieldStart));
  }
  return { ...DeliveryAttempt.decode(bytes), exchange: undefined };
}

/** Where each attempt of a DeliveryAttempts message lies: [start, end, start, end, …], in order. */
export function attemptEntryRanges(bytes: Uint8Array): number[] {
  const reader = new WireReader(bytes);
  const end = bytes.length;
  const ranges: number[] = [];
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag !== ATTEMPTS_TAG) {
      reader.skipField(tag, end);
      continue;
    }
    const entryEnd = reader.delimitedEnd(end);
    ranges.push(reader.pos, entryEnd);
    reader.pos = entryEnd;
  }
  return ranges;
}

/** Length-delimited fields of DeliveryAttempt up to `outcome`, as WireReader.fieldRanges records them. */
const FACT_SLOTS = 2 * (DeliveryAttemptField.OUTCOME + 1);
const { AT, OUTCOME, MESSAGE_ID } = DeliveryAttemptField;

/** What a page filters an attempt on, read from its bytes without decoding it. One instance reads attempt after attempt. */
export class AttemptFacts {
  private readonly slots = new Int32Array(FACT_SLOTS);
  private bytes: Buffer = Buffer.alloc(0);
  private start = 0;
  private end = 0;
  /** When the attempt was made (0 when unset). */
  atMs = 0;

  /**
   * Reads the attempt at [start, end) of the reader's bytes; false when its encoding is one the
   * plain reads leave to the decoder (none the log's writers make).
   */
  read(reader: WireReader, start: number, end: number): boolean {
    const { slots } = this;
    this.start = start;
    this.end = end;
    try {
      reader.pos = start;
      reader.fieldRanges(end, slots);
      this.atMs = slots[2 * AT]! < 0 ? 0 : reader.timestampMillis(slots[2 * AT]!, slots[2 * AT + 1]!);
    } catch {
      return false;
    }
    this.bytes = reader.buf;
    return true;
  }

  /** Whether the attempt's outcome is these bytes. */
  outcomeIs(expected: Uint8Array): boolean {
    return this.fieldIs(OUTCOME, expected);
  }

  /** Whether the attempt's messageId is these bytes, or, for a batch's request, one of its calls' is. */
  messageIdIs(expected: Uint8Array): boolean {
    if (this.fieldIs(MESSAGE_ID, expected)) return true;
    // A batch's ids come after the fields the slots hold: looked for only when the messageId differs.
    const reader = new WireReader(this.bytes, this.start);
    while (reader.pos < this.end) {
      const tag = reader.varint32();
      if (tag !== BATCH_IDS_TAG) {
        reader.skip(tag, this.end);
        continue;
      }
      const idEnd = reader.fieldEnd(this.end);
      if (bytesAre(this.bytes, reader.pos, idEnd, expected)) return true;
      reader.pos = idEnd;
    }
    return false;
  }

  /** Whether a field's bytes are `expected`; an absent field is empty. */
  private fieldIs(field: number, expected: Uint8Array): boolean {
    const start = this.slots[2 * field]!;
    if (start < 0) return expected.length === 0;
    return bytesAre(this.bytes, start, this.slots[2 * field + 1]!, expected);
  }
}

const BATCH_IDS_TAG = lengthTag(DeliveryAttemptField.BATCH_MESSAGE_IDS);

function bytesAre(bytes: Uint8Array, start: number, end: number, expected: Uint8Array): boolean {
  if (end - start !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (bytes[start + i] !== expected[i]) return false;
  return true;
}
