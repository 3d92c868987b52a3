import { isWellFormedText } from "@switchyard/calls";
import { TimestampField } from "@switchyard/contracts";
import { WireType, fieldTag } from "./tags.js";

/**
 * The protobuf writer, in two forms sharing the varint encoding:
 *
 * - Sized writes (`…Size` and `write…` functions) for the few fields ingest
 *   adds to a call or a CallBatch, straight into a pre-sized buffer: each
 *   `…Size` function tells how many bytes its `write…` counterpart will write,
 *   so a whole CallBatch is measured first and allocated once.
 * - ProtoWriter, a growing buffer that writes whole messages in one pass
 *   without measuring first (the client library's call encoder).
 *
 * The encodings match what the generated encoder writes.
 */

/** Bytes of a varint. Negative numbers (int32 and int64 fields) take ten: they are sign-extended to 64 bits. */
export function varintSize(value: number): number {
  if (value < 0) return 10;
  if (value < 0x80) return 1;
  let size = 1;
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

/** Writes a varint for a safe integer; returns the offset after it. */
export function writeVarint(target: Buffer, offset: number, value: number): number {
  if (value < 0) return writeNegativeVarint(target, offset, value);
  let rest = value;
  // Above 32 bits (seconds after 2106, lengths never), shifts would wrap: divide instead.
  while (rest > 0xffff_ffff) {
    target[offset++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  while (rest >= 0x80) {
    target[offset++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  target[offset++] = rest;
  return offset;
}

/** Two's complement in 64 bits, seven bits a byte: always ten bytes. Rare (times before 1970), so BigInt is fine. */
function writeNegativeVarint(target: Buffer, offset: number, value: number): number {
  let bits = BigInt.asUintN(64, BigInt(value));
  for (let index = 0; index < 9; index++) {
    target[offset++] = Number(bits & 0x7fn) | 0x80;
    bits >>= 7n;
  }
  target[offset++] = Number(bits);
  return offset;
}

const tag = fieldTag;

/** Size of a length-delimited field with a body of `bodySize` bytes. */
export function lengthDelimitedSize(fieldNumber: number, bodySize: number): number {
  return varintSize(tag(fieldNumber, WireType.LEN)) + varintSize(bodySize) + bodySize;
}

/** Writes the tag and length of a length-delimited field; the caller writes the body next. */
export function writeLengthDelimitedHeader(target: Buffer, offset: number, fieldNumber: number, bodySize: number): number {
  return writeVarint(target, writeVarint(target, offset, tag(fieldNumber, WireType.LEN)), bodySize);
}

/** Size of a string field holding `text`. */
export function textFieldSize(fieldNumber: number, text: string): number {
  return lengthDelimitedSize(fieldNumber, Buffer.byteLength(text, "utf8"));
}

/** Writes a string field; returns the offset after it. */
export function writeTextField(target: Buffer, offset: number, fieldNumber: number, text: string): number {
  const at = writeLengthDelimitedHeader(target, offset, fieldNumber, Buffer.byteLength(text, "utf8"));
  return at + target.write(text, at, "utf8");
}

/**
 * A google.protobuf.Timestamp field, measured once and written as often as
 * needed (the accept time goes into every call of a batch). Stores what the
 * generated code stores for a Date: whole milliseconds, seconds and nanos
 * both rounded toward zero, so a time before 1970 has negative nanos, and
 * proto3 leaves zeros out.
 */
export class EncodedTimestamp {
  readonly byteLength: number;
  private readonly seconds: number;
  private readonly nanos: number;
  private readonly bodySize: number;

  constructor(
    private readonly fieldNumber: number,
    date: Date,
  ) {
    const millis = date.getTime();
    this.seconds = Math.trunc(millis / 1_000);
    this.nanos = (millis % 1_000) * 1_000_000;
    this.bodySize = (this.seconds !== 0 ? 1 + varintSize(this.seconds) : 0) + (this.nanos !== 0 ? 1 + varintSize(this.nanos) : 0);
    this.byteLength = lengthDelimitedSize(fieldNumber, this.bodySize);
  }

  /** Writes the field at `offset`; returns the offset after it. */
  writeTo(target: Buffer, offset: number): number {
    let at = writeLengthDelimitedHeader(target, offset, this.fieldNumber, this.bodySize);
    if (this.seconds !== 0) at = writeVarint(target, writeVarint(target, at, tag(TimestampField.SECONDS, WireType.VARINT)), this.seconds);
    if (this.nanos !== 0) at = writeVarint(target, writeVarint(target, at, tag(TimestampField.NANOS, WireType.VARINT)), this.nanos);
    return at;
  }
}

/**
 * A value the bus could not carry as it is: a number that is not finite, text
 * with a lone surrogate, or (from the call encoder) a BigInt, which JSON has
 * no form for. The client library turns it into its ValidationError naming the
 * field (the writer does not know the field).
 */
export class Unrepresentable extends Error {
  override readonly name = "Unrepresentable";
  constructor(readonly rule: "finite_number" | "unicode" | "bigint") {
    super(
      rule === "finite_number"
        ? "a number is not finite"
        : rule === "unicode"
          ? "a string has a lone surrogate"
          : "BigInt values are not JSON",
    );
  }
}

/** Control characters JSON.stringify writes as two characters (\b \t \n \f \r); the others take six (\u00XX). */
const JSON_SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

/** Extra bytes JSON.stringify writes for an ASCII byte it escapes: `"` and `\\` one, control characters one or five. */
const ESCAPE_EXTRA = new Uint8Array(256);
for (let byte = 0; byte < 0x20; byte++) ESCAPE_EXTRA[byte] = JSON_SHORT_ESCAPES.has(byte) ? 1 : 5;
ESCAPE_EXTRA[0x22] = 1;
ESCAPE_EXTRA[0x5c] = 1;

/** From this length on, text is copied natively and checked as bytes; shorter text is copied by hand, which costs less. */
const NATIVE_COPY_LENGTH = 32;

/**
 * A minimal protobuf writer into a growing buffer. Nested messages reserve
 * one byte for their length and move their body only in the rare case it is
 * 128 bytes or longer, so a message is written in one pass without measuring
 * it first.
 *
 * Two ways to use it: reset() and copy() for one message at a time, or
 * take() to keep each message where it was written, one after the other in
 * large chunks (a slab): the queue keeps calls that way, so a queued call
 * costs its bytes and no buffer object of its own.
 */
export class ProtoWriter {
  buf: Buffer;
  /** Where the message being written starts. */
  start = 0;
  pos = 0;

  constructor(private readonly chunkSize = 4096) {
    this.buf = Buffer.allocUnsafeSlow(chunkSize);
  }

  reset(): void {
    this.start = 0;
    this.pos = 0;
  }

  /** Drops what was written since the last take(). */
  discard(): void {
    this.pos = this.start;
  }

  /** A copy of the message, in its own small buffer (Buffer.allocUnsafe pools small ones). */
  copy(): Buffer {
    const out = Buffer.allocUnsafe(this.pos - this.start);
    this.buf.copy(out, 0, this.start, this.pos);
    return out;
  }

  /** Leaves the message where it is and starts the next one after it: returns where it lies. */
  take(): { chunk: Buffer; offset: number; length: number } {
    const taken = { chunk: this.buf, offset: this.start, length: this.pos - this.start };
    this.start = this.pos;
    return taken;
  }

  /**
   * Makes room for `extra` more bytes: a new chunk when needed, with the message so far moved to its
   * start (a writer writing into `buf` itself, as the batch body transcoder does, calls it first).
   */
  ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    const written = this.pos - this.start;
    let size = this.chunkSize;
    while (size < (written + extra) * 2) size *= 2;
    const next = Buffer.allocUnsafeSlow(size);
    this.buf.copy(next, 0, this.start, this.pos);
    this.buf = next;
    this.start = 0;
    this.pos = written;
  }

  /** A varint of a non-negative safe integer. */
  varint(value: number): void {
    this.ensure(10);
    this.pos = writeVarint(this.buf, this.pos, value);
  }

  /** An int64 varint; negative values take ten bytes (two's complement), as protobuf requires. */
  int64(value: number): void {
    this.ensure(10);
    this.pos = writeVarint(this.buf, this.pos, value);
  }

  /** A field's tag. */
  tag(field: number, wireType: number): void {
    this.varint(tag(field, wireType));
  }

  /**
   * A string field (wire type 2). Returns the size of the string in JSON (quotes and escapes
   * included, in UTF-8 bytes), which the call's size limit is measured on.
   *
   * One pass for the usual ASCII text: each character is checked (for JSON's escapes) and copied
   * as it is read, with the length written first as if the text were ASCII. The first character
   * at or above 0x80 sends the text back to be written again as UTF-8.
   */
  string(field: number, text: string): number {
    this.tag(field, WireType.LEN);
    // Relative to the message's start, which moves when a new chunk is taken.
    const lengthMark = this.pos - this.start;
    const length = text.length;
    this.varint(length);
    this.ensure(length);
    const buf = this.buf;
    const start = this.pos;
    let escapes = 0;
    if (length < NATIVE_COPY_LENGTH) {
      for (let index = 0; index < length; index++) {
        const code = text.charCodeAt(index);
        if (code < 0x20 || code === 0x22 || code === 0x5c || code >= 0x80) {
          if (code >= 0x80) return this.utf8String(text, lengthMark);
          escapes += code >= 0x20 ? 1 : JSON_SHORT_ESCAPES.has(code) ? 1 : 5;
        }
        buf[start + index] = code;
      }
    } else {
      // Copied natively as UTF-8 into room for ASCII, then its bytes checked: text with any other
      // character either fills the room only in part (the character that does not fit is left
      // out whole) or puts a byte of 0x80 or more in it.
      let high = buf.write(text, start, length, "utf8") === length ? 0 : 0x80;
      for (let index = start, end = start + length; index < end; index++) {
        const byte = buf[index]!;
        escapes += ESCAPE_EXTRA[byte]!;
        high |= byte;
      }
      if (high >= 0x80) return this.utf8String(text, lengthMark);
    }
    this.pos = start + length;
    return length + 2 + escapes;
  }

  /** Writes the text again as UTF-8, from its length (at `lengthMark`) on; returns its JSON size. */
  private utf8String(text: string, lengthMark: number): number {
    // UTF-8 has no lone surrogates: Buffer would write U+FFFD in their place. Only non-ASCII text gets here.
    if (!isWellFormedText(text)) throw new Unrepresentable("unicode");
    this.pos = this.start + lengthMark;
    const length = Buffer.byteLength(text, "utf8");
    this.varint(length);
    this.ensure(length);
    this.pos += this.buf.write(text, this.pos, length, "utf8");
    return Buffer.byteLength(JSON.stringify(text), "utf8");
  }

  /** A double field (wire type 1); NaN and ±Infinity, which the call rules refuse, throw Unrepresentable. */
  double(field: number, value: number): void {
    if (!Number.isFinite(value)) throw new Unrepresentable("finite_number");
    this.tag(field, WireType.I64);
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** Opens a length-delimited field; returns the mark to pass to `end`. */
  begin(field: number): number {
    this.tag(field, WireType.LEN);
    this.ensure(1);
    // Relative to the message's start, which moves when a new chunk is taken.
    return this.pos++ - this.start;
  }

  /** Closes a field opened by `begin`, writing its length (moving the body when the length needs more than a byte). */
  end(relativeMark: number): void {
    let mark = this.start + relativeMark;
    const length = this.pos - mark - 1;
    if (length < 0x80) {
      this.buf[mark] = length;
      return;
    }
    let extra = 0;
    for (let rest = length >>> 7; rest > 0; rest >>>= 7) extra++;
    this.ensure(extra);
    mark = this.start + relativeMark;
    // copyWithin (a memmove in V8) rather than Buffer#copy, whose argument handling costs more
    // than moving the few hundred bytes of a call's context or properties.
    this.buf.copyWithin(mark + 1 + extra, mark + 1, this.pos);
    const bodyEnd = this.pos + extra;
    this.pos = mark;
    this.varint(length);
    this.pos = bodyEnd;
  }

  /** Bytes source[offset, offset + length) as a length-delimited field. */
  bytes(field: number, source: Buffer, offset = 0, length = source.length - offset): void {
    this.tag(field, WireType.LEN);
    this.varint(length);
    this.ensure(length);
    const buf = this.buf;
    // Short ranges (keys, ids, most values) are copied by hand: a native copy's call costs more.
    if (length < NATIVE_COPY_LENGTH) {
      for (let index = 0, at = this.pos; index < length; index++) buf[at + index] = source[offset + index]!;
    } else source.copy(buf, this.pos, offset, offset + length);
    this.pos += length;
  }
}
