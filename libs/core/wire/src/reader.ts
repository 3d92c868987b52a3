import { TIMESTAMP_NANOS, TIMESTAMP_SECONDS, WireType } from "./tags.js";

/**
 * The one cursor over protobuf wire data, with two kinds of read for the two
 * kinds of fast path:
 *
 * - Checked reads (tag, length, int32, int64, skipField, ...), for the gRPC
 *   fast path: every read stays inside an explicit end, and every way the
 *   bytes can be wrong becomes a MalformedWireError instead of a misreading.
 *   They are deliberately stricter than the generated (ts-proto) decoder,
 *   which silently stops at a zero tag or a stray end-group tag and then reads
 *   on from the middle of the enclosing message: such bytes are refused.
 * - Plain reads (varint32, fieldEnd, skip, fieldRanges, timestampMillis), for
 *   the webhook body writer: they accept only the plain encodings protobuf
 *   writers produce (tags and lengths in at most five bytes below 2^31, no
 *   groups, no zero tags, no field running past its message) and throw UNUSUAL
 *   for anything else, so that path never has to match the generated decoder
 *   on strange input, only fall back to it.
 *
 * One reader walks nested messages without allocating.
 */

/** The bytes are not valid protobuf wire data for the message being read. */
export class MalformedWireError extends Error {
  override readonly name = "MalformedWireError";
}

/**
 * Thrown by the plain reads (and the body writer built on them) when the bytes
 * hold something they leave to the generated decoder: malformed or unusual
 * encodings, and values whose JSON form needs JavaScript's object rules (see
 * webhook-body/struct-json.ts). One shared instance: it only ever means "take
 * the slow path".
 */
export const UNUSUAL = new Error("unusual protobuf encoding: left to the full decoder");

/** How deeply groups inside unknown fields may nest (the limit @bufbuild/protobuf's skip uses). */
const MAX_GROUP_NESTING = 100;

const TWO_POW_32 = 0x1_0000_0000;

/** The latest time a Date can hold (ECMAScript's time value range). */
const MAX_DATE_MILLIS = 8.64e15;

export class WireReader {
  pos: number;
  /** The bytes, as a Buffer (a view of them, not a copy, when they are another Uint8Array). */
  readonly buf: Buffer;
  /** For doubles; made on the first one (the gRPC fast path reads its doubles from `buf`). */
  private view: DataView | undefined;

  constructor(bytes: Uint8Array, start = 0) {
    this.buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
  }

  // Checked reads: MalformedWireError for anything that is not valid wire data.

  /**
   * The next tag (field number << 3 | wire type). Refuses field number 0, wire
   * types 6 and 7, tags that do not fit 32 bits, and an end-group tag outside
   * a group.
   */
  tag(end: number): number {
    const first = this.byte(end);
    // Fast path: field numbers 1-15 fit one byte.
    const tag = first < 0x80 ? first : this.varintRest(first, end, 5);
    if (tag > 0xffff_ffff) throw new MalformedWireError("tag does not fit 32 bits");
    const wireType = tag & 7;
    if (tag >>> 3 === 0) throw new MalformedWireError("field number 0");
    if (wireType > WireType.I32) throw new MalformedWireError(`invalid wire type ${wireType}`);
    if (wireType === WireType.END_GROUP) throw new MalformedWireError("end-group tag outside a group");
    return tag;
  }

  /** The length prefix of a length-delimited field; it must fit inside `end`. Returns the length. */
  length(end: number): number {
    const first = this.byte(end);
    const length = first < 0x80 ? first : this.varintRest(first, end, 10);
    if (length > end - this.pos) throw new MalformedWireError("length runs past the end of the message");
    return length;
  }

  /**
   * A varint read as int32, the way protobuf does: the low 32 bits of up to
   * ten bytes, as a signed number.
   */
  int32(end: number): number {
    let result = 0;
    for (let index = 0; index < 10; index++) {
      const byte = this.byte(end);
      if (index < 5) result |= (byte & 0x7f) << (7 * index);
      if (byte < 0x80) return result | 0;
    }
    throw new MalformedWireError("varint longer than ten bytes");
  }

  /**
   * A varint read as int64, as a number. Like the generated decoder, refuses
   * values outside Number's safe integer range.
   */
  int64(end: number): number {
    let low = 0;
    let high = 0;
    for (let index = 0; index < 10; index++) {
      const byte = this.byte(end);
      const bits = byte & 0x7f;
      if (index < 4) low |= bits << (7 * index);
      else if (index === 4) {
        low |= (bits & 0x0f) << 28;
        high = bits >>> 4;
      } else high |= bits << (7 * index - 32);
      if (byte < 0x80) {
        // high is the signed upper half (two's complement), low the unsigned lower half.
        const value = (high | 0) * TWO_POW_32 + (low >>> 0);
        if (!Number.isSafeInteger(value)) throw new MalformedWireError("int64 outside the safe integer range");
        return value;
      }
    }
    throw new MalformedWireError("varint longer than ten bytes");
  }

  /**
   * A varint that is valid but whose value is not needed. Returns true when it
   * is the single byte 0 or 1 (the canonical encoding of a bool or of NULL_VALUE).
   */
  skipVarint(end: number): boolean {
    const first = this.byte(end);
    if (first < 0x80) return first <= 1;
    this.varintRest(first, end, 10);
    return false;
  }

  /** Reads the length prefix of a length-delimited value and returns where the value ends (it starts at `pos`). */
  delimitedEnd(end: number): number {
    const length = this.length(end);
    return this.pos + length;
  }

  /** Moves past `count` bytes that must lie inside `end`. */
  skipBytes(count: number, end: number): void {
    if (count > end - this.pos) throw new MalformedWireError("field runs past the end of the message");
    this.pos += count;
  }

  /** Moves past the value of a field whose tag was just read, checking it is well-formed. */
  skipField(tag: number, end: number, groupNesting = 0): void {
    switch (tag & 7) {
      case WireType.VARINT:
        this.skipVarint(end);
        return;
      case WireType.I64:
        this.skipBytes(8, end);
        return;
      case WireType.LEN:
        this.pos = this.delimitedEnd(end);
        return;
      case WireType.I32:
        this.skipBytes(4, end);
        return;
      case WireType.START_GROUP:
        this.skipGroup(tag >>> 3, end, groupNesting + 1);
        return;
      default:
        throw new MalformedWireError(`invalid wire type ${tag & 7}`);
    }
  }

  // Plain reads: UNUSUAL for anything but the plain encodings.

  /** The UTF-8 text at [start, end), invalid sequences as U+FFFD (as the decoder reads strings). */
  text(start: number, end: number): string {
    return this.buf.toString("utf8", start, end);
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
      if (tag === TIMESTAMP_SECONDS) seconds = this.varint49();
      else if (tag === TIMESTAMP_NANOS) nanos = this.varint32();
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
    const bytes = this.buf;
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
      const byte = this.buf[this.pos++];
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
      const byte = this.buf[this.pos++];
      if (byte === undefined) throw UNUSUAL;
      if ((byte & 0x7f) !== 0) nonZero = true;
      if (byte < 0x80) return nonZero;
    }
    throw UNUSUAL;
  }

  /** The little-endian double at `at` (the caller checked that its eight bytes lie inside the message). */
  double(at: number): number {
    const view = (this.view ??= new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength));
    return view.getFloat64(at, true);
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
      case WireType.VARINT:
        this.nonZeroVarint();
        break;
      case WireType.I64:
        this.pos += 8;
        break;
      case WireType.LEN:
        this.pos = this.fieldEnd(limit);
        break;
      case WireType.I32:
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
      if ((tag & 7) === WireType.LEN && field > 0 && field < fields) {
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

  private skipGroup(fieldNumber: number, end: number, nesting: number): void {
    if (nesting > MAX_GROUP_NESTING) throw new MalformedWireError("groups nested too deeply");
    for (;;) {
      const first = this.byte(end);
      const tag = first < 0x80 ? first : this.varintRest(first, end, 5);
      if (tag > 0xffff_ffff || tag >>> 3 === 0 || (tag & 7) > WireType.I32) throw new MalformedWireError("invalid tag in a group");
      if ((tag & 7) === WireType.END_GROUP) {
        if (tag >>> 3 !== fieldNumber) throw new MalformedWireError("end-group tag does not match its group");
        return;
      }
      this.skipField(tag, end, nesting);
    }
  }

  private byte(end: number): number {
    if (this.pos >= end) throw new MalformedWireError("message ends in the middle of a field");
    return this.buf[this.pos++]!;
  }

  /**
   * The rest of a varint whose first byte (with its continuation bit set) was
   * already read, at most `maxBytes` long in all. Computed in floating point:
   * exact up to 2^53, and any larger value is refused by the callers anyway.
   */
  private varintRest(first: number, end: number, maxBytes: number): number {
    let value = first & 0x7f;
    let scale = 0x80;
    for (let index = 1; index < maxBytes; index++) {
      const byte = this.byte(end);
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
    throw new MalformedWireError(`varint longer than ${maxBytes} bytes`);
  }
}

const textDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Decodes UTF-8 text exactly as the generated decoder does (invalid bytes
 * become U+FFFD, a leading U+FEFF is kept), with a fast path for ASCII.
 */
export function decodeText(buf: Buffer, start: number, end: number): string {
  for (let index = start; index < end; index++) {
    if (buf[index]! >= 0x80) return textDecoder.decode(buf.subarray(start, end));
  }
  return buf.toString("latin1", start, end);
}
