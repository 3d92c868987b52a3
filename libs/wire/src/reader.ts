/**
 * A checking cursor over protobuf wire data, for the gRPC fast path. Every read
 * stays inside an explicit end, so one reader walks nested messages without
 * allocating, and every way the bytes can be wrong becomes a MalformedWireError
 * instead of a misreading.
 *
 * It is deliberately stricter than the generated (ts-proto) decoder, which
 * silently stops at a zero tag or a stray end-group tag and then reads on from
 * the middle of the enclosing message: such bytes are refused here.
 */

/** The bytes are not valid protobuf wire data for the message being read. */
export class MalformedWireError extends Error {
  override readonly name = "MalformedWireError";
}

export const WireType = { VARINT: 0, I64: 1, LEN: 2, START_GROUP: 3, END_GROUP: 4, I32: 5 } as const;

/** How deeply groups inside unknown fields may nest (the limit @bufbuild/protobuf's skip uses). */
const MAX_GROUP_NESTING = 100;

const TWO_POW_32 = 0x1_0000_0000;

export class WireReader {
  pos: number;

  constructor(
    readonly buf: Buffer,
    start = 0,
  ) {
    this.pos = start;
  }

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
