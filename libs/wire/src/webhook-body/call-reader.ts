/**
 * Thrown by the wire readers of this folder when the bytes hold something
 * they leave to the generated decoder: malformed or unusual encodings, and
 * values whose JSON form needs JavaScript's object rules (see struct-json.ts).
 * One shared instance: it only ever means "take the slow path".
 */
export const UNUSUAL = new Error("unusual protobuf encoding: left to the full decoder");

/** The latest time a Date can hold (ECMAScript's time value range). */
const MAX_DATE_MILLIS = 8.64e15;

/**
 * A cursor over protobuf bytes for fast paths that accept only the plain
 * encodings protobuf writers produce: tags and lengths in at most five bytes
 * below 2^31, no groups, no zero tags, no field running past its message.
 * Anything else throws UNUSUAL, so a fast path never has to match the
 * generated decoder on strange input, only fall back to it.
 */
export class WireReader {
  pos = 0;
  private readonly view: DataView;
  private readonly buffer: Buffer;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** The UTF-8 text at [start, end), invalid sequences as U+FFFD (as the decoder reads strings). */
  text(start: number, end: number): string {
    return this.buffer.toString("utf8", start, end);
  }

  /**
   * The google.protobuf.Timestamp at [start, end) in milliseconds, as the
   * generated decoder computes them for its Date (seconds × 1000 + nanos /
   * 10^6). Negative, huge and out-of-range values are left to the decoder.
   */
  timestampMillis(start: number, end: number): number {
    let seconds = 0;
    let nanos = 0;
    this.pos = start;
    while (this.pos < end) {
      const tag = this.varint32();
      if (tag === 8) seconds = this.varint49();
      else if (tag === 16) nanos = this.varint32();
      else this.skip(tag, end);
    }
    if (this.pos !== end) throw UNUSUAL;
    let millis = seconds * 1_000;
    millis += nanos / 1_000_000;
    if (millis > MAX_DATE_MILLIS) throw UNUSUAL; // an Invalid Date
    return millis;
  }

  /** A tag, a length or another varint below 2^31. */
  varint32(): number {
    const bytes = this.bytes;
    let byte = bytes[this.pos++]!;
    if (byte < 0x80) return byte;
    let value = byte & 0x7f;
    for (let shift = 7; shift < 35; shift += 7) {
      byte = bytes[this.pos++]!;
      if (shift === 28 && byte > 0x07) throw UNUSUAL;
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
    throw UNUSUAL;
  }

  /** A non-negative varint below 2^49, read exactly (int64 seconds of a timestamp). */
  varint49(): number {
    let value = 0;
    for (let factor = 1; factor < 2 ** 49; factor *= 128) {
      const byte = this.bytes[this.pos++];
      if (byte === undefined) throw UNUSUAL;
      value += (byte & 0x7f) * factor;
      if (byte < 0x80) return value;
    }
    throw UNUSUAL;
  }

  /** Whether a varint of at most nine bytes (a bool) is non-zero. */
  nonZeroVarint(): boolean {
    let nonZero = false;
    for (let count = 0; count < 9; count++) {
      const byte = this.bytes[this.pos++];
      if (byte === undefined) throw UNUSUAL;
      if ((byte & 0x7f) !== 0) nonZero = true;
      if (byte < 0x80) return nonZero;
    }
    throw UNUSUAL;
  }

  double(at: number): number {
    return this.view.getFloat64(at, true);
  }

  /** Reads a length-delimited field's length; returns where the field ends, which must be within `limit`. */
  fieldEnd(limit: number): number {
    const length = this.varint32();
    const end = this.pos + length;
    if (end > limit) throw UNUSUAL;
    return end;
  }

  /** Skips the value of a field not read (its tag just read). */
  skip(tag: number, limit: number): void {
    switch (tag & 7) {
      case 0:
        this.nonZeroVarint();
        break;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.fieldEnd(limit);
        break;
      case 5:
        this.pos += 4;
        break;
      default:
        throw UNUSUAL; // groups and invalid wire types
    }
    if (tag < 8 || this.pos > limit) throw UNUSUAL; // field number 0, or past the message's end
  }

  /**
   * Records where the length-delimited fields 1 to `slots.length / 2 - 1`
   * of the message at [pos, end) begin and end, -1 for absent ones; other
   * fields are skipped. A field that occurs twice is left to the decoder: it
   * reads every occurrence, so an earlier one could make it throw, or run past
   * its end into the next field. Leaves the cursor at `end`.
   */
  fieldRanges(end: number, slots: Int32Array): void {
    slots.fill(-1);
    const fields = slots.length / 2;
    while (this.pos < end) {
      const tag = this.varint32();
      const field = tag >>> 3;
      if ((tag & 7) === 2 && field > 0 && field < fields) {
        if (slots[2 * field] !== -1) throw UNUSUAL;
        const fieldEnd = this.fieldEnd(end);
        slots[2 * field] = this.pos;
        slots[2 * field + 1] = fieldEnd;
        this.pos = fieldEnd;
      } else {
        this.skip(tag, end);
      }
    }
    if (this.pos !== end) throw UNUSUAL;
  }
}
