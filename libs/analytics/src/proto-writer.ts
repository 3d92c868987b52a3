import { isWellFormedText } from "@switchyard/calls";

/**
 * A value the bus could not carry as it is: a number that is not finite, or
 * text with a lone surrogate. prepareCall turns it into a ValidationError
 * naming the field (the writer does not know the field).
 */
export class Unrepresentable extends Error {
  constructor(readonly rule: "finite_number" | "unicode") {
    super(rule === "finite_number" ? "a number is not finite" : "a string has a lone surrogate");
  }
}

/** Control characters JSON.stringify writes as two characters (\b \t \n \f \r); the others take six (\u00XX). */
const JSON_SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

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

  /** Makes room for `extra` more bytes: a new chunk when needed, with the message so far moved to its start. */
  private ensure(extra: number): void {
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

  varint(value: number): void {
    this.ensure(10);
    let rest = value;
    while (rest > 0xffff_ffff) {
      this.buf[this.pos++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    while (rest >= 0x80) {
      this.buf[this.pos++] = (rest & 0x7f) | 0x80;
      rest >>>= 7;
    }
    this.buf[this.pos++] = rest;
  }

  /** An int64 varint; negative values take ten bytes (two's complement), as protobuf requires. */
  int64(value: number): void {
    if (value >= 0) return this.varint(value);
    this.ensure(10);
    let bits = BigInt.asUintN(64, BigInt(value));
    for (let index = 0; index < 9; index++) {
      this.buf[this.pos++] = Number(bits & 0x7fn) | 0x80;
      bits >>= 7n;
    }
    this.buf[this.pos++] = Number(bits);
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
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
    this.tag(field, 2);
    // Relative to the message's start, which moves when a new chunk is taken.
    const lengthMark = this.pos - this.start;
    const length = text.length;
    this.varint(length);
    this.ensure(length);
    const buf = this.buf;
    const start = this.pos;
    let escapes = 0;
    for (let index = 0; index < length; index++) {
      const code = text.charCodeAt(index);
      if (code < 0x20 || code === 0x22 || code === 0x5c || code >= 0x80) {
        if (code >= 0x80) return this.utf8String(text, lengthMark);
        escapes += code >= 0x20 ? 1 : JSON_SHORT_ESCAPES.has(code) ? 1 : 5;
      }
      buf[start + index] = code;
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
    this.tag(field, 1);
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** Opens a length-delimited field; returns the mark to pass to `end`. */
  begin(field: number): number {
    this.tag(field, 2);
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
    this.tag(field, 2);
    this.varint(length);
    this.ensure(length);
    source.copy(this.buf, this.pos, offset, offset + length);
    this.pos += length;
  }
}
