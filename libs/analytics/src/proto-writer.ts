/**
 * A minimal protobuf writer into one reusable, growing buffer. Nested
 * messages reserve one byte for their length and move their body only in the
 * rare case it is 128 bytes or longer, so a call is written in one pass
 * without measuring it first.
 */
export class ProtoWriter {
  buf: Buffer;
  pos = 0;

  constructor(initialSize = 4096) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  reset(): void {
    this.pos = 0;
  }

  /** A copy of what was written, in its own small buffer (Buffer.allocUnsafe pools small ones). */
  copy(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    return out;
  }

  private ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + extra) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
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

  /** A string field (wire type 2). */
  string(field: number, text: string): void {
    this.tag(field, 2);
    // Up to 42 UTF-16 units need at most 126 UTF-8 bytes: a one-byte length, known after writing.
    if (text.length <= 42) {
      this.ensure(1 + text.length * 3);
      const start = this.pos + 1;
      // Short ASCII text (most keys and ids) is copied byte by byte: cheaper than a native call.
      let at = start;
      for (let index = 0; index < text.length; index++) {
        const code = text.charCodeAt(index);
        if (code >= 0x80) {
          at = start + this.buf.write(text, start, "utf8");
          break;
        }
        this.buf[at++] = code;
      }
      this.buf[this.pos] = at - start;
      this.pos = at;
      return;
    }
    const length = Buffer.byteLength(text, "utf8");
    this.varint(length);
    this.ensure(length);
    this.pos += this.buf.write(text, this.pos, length, "utf8");
  }

  /** A double field (wire type 1). */
  double(field: number, value: number): void {
    this.tag(field, 1);
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** Opens a length-delimited field; returns the mark to pass to `end`. */
  begin(field: number): number {
    this.tag(field, 2);
    this.ensure(1);
    return this.pos++;
  }

  /** Closes a field opened by `begin`, writing its length (moving the body when the length needs more than a byte). */
  end(mark: number): void {
    const length = this.pos - mark - 1;
    if (length < 0x80) {
      this.buf[mark] = length;
      return;
    }
    let extra = 0;
    for (let rest = length >>> 7; rest > 0; rest >>>= 7) extra++;
    this.ensure(extra);
    this.buf.copy(this.buf, mark + 1 + extra, mark + 1, this.pos);
    const bodyEnd = this.pos + extra;
    this.pos = mark;
    this.varint(length);
    this.pos = bodyEnd;
  }

  /** Raw bytes as a length-delimited field. */
  bytes(field: number, bytes: Uint8Array): void {
    this.tag(field, 2);
    this.varint(bytes.length);
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }
}
