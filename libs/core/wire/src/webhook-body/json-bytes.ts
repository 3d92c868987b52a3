/**
 * A byte buffer that small JSON documents (webhook bodies) are written into
 * back to back, as UTF-8, for as long as the process runs. Each finished
 * document is a view of the buffer, so none is copied; when the buffer
 * fills, a new one (a slab) takes over and the views of the old one stay
 * valid. A slab is freed once no document in it is referenced.
 *
 * The writers produce exactly what JSON.stringify would for the same value:
 * the same escapes, the same number format.
 */
export class JsonBytes {
  private bytes: Buffer;
  private pos = 0;
  private documentStart = 0;

  constructor(private readonly slabBytes: number) {
    this.bytes = Buffer.allocUnsafe(slabBytes);
  }

  /** Starts a document; `finish` returns everything written since. */
  start(): void {
    this.documentStart = this.pos;
  }

  finish(): Buffer {
    return this.bytes.subarray(this.documentStart, this.pos);
  }

  /** A place in the current document to `rewind` to, dropping what was written after it. */
  mark(): number {
    return this.pos - this.documentStart;
  }

  rewind(mark: number): void {
    this.pos = this.documentStart + mark;
  }

  /** Bytes as they are: pre-encoded JSON fragments. */
  raw(fragment: Uint8Array): void {
    this.reserve(fragment.length);
    // A loop: fragments are a few bytes, for which TypedArray.set costs more than the copy.
    const bytes = this.bytes;
    let pos = this.pos;
    for (let i = 0; i < fragment.length; i++) bytes[pos++] = fragment[i]!;
    this.pos = pos;
  }

  byte(value: number): void {
    this.reserve(1);
    this.bytes[this.pos++] = value;
  }

  /**
   * The JSON string of UTF-8 text `source[start, end)`. Printable ASCII
   * without quote or backslash (nearly all text in calls) is copied as it is;
   * anything else goes through a JS string and JSON.stringify, so escapes,
   * non-ASCII text and invalid UTF-8 (decoded to U+FFFD) come out exactly as
   * they would from a decoded call.
   */
  utf8String(source: Uint8Array, start: number, end: number): void {
    this.reserve(end - start + 2);
    const bytes = this.bytes;
    const from = this.pos;
    let pos = from;
    bytes[pos++] = 0x22;
    for (let i = start; i < end; i++) {
      const byte = source[i]!;
      if (byte < 0x20 || byte === 0x22 || byte === 0x5c || byte > 0x7e) {
        this.pos = from;
        this.utf8Text(JSON.stringify(Buffer.from(source.buffer, source.byteOffset, source.byteLength).toString("utf8", start, end)));
        return;
      }
      bytes[pos++] = byte;
    }
    bytes[pos++] = 0x22;
    this.pos = pos;
  }

  /** A JSON string of text known to need no escapes (ISO dates, names from code). */
  plainString(text: string): void {
    this.reserve(text.length + 2);
    const bytes = this.bytes;
    let pos = this.pos;
    bytes[pos++] = 0x22;
    for (let i = 0; i < text.length; i++) bytes[pos++] = text.charCodeAt(i);
    bytes[pos++] = 0x22;
    this.pos = pos;
  }

  /** As JSON.stringify writes a number: NaN and infinities become null. */
  number(value: number): void {
    const text = Number.isFinite(value) ? String(value) : "null";
    this.reserve(text.length);
    const bytes = this.bytes;
    let pos = this.pos;
    for (let i = 0; i < text.length; i++) bytes[pos++] = text.charCodeAt(i);
    this.pos = pos;
  }

  /** Text that is already JSON (any characters), as UTF-8. */
  jsonText(text: string): void {
    this.utf8Text(text);
  }

  private utf8Text(text: string): void {
    this.reserve(text.length * 3);
    this.pos += this.bytes.write(text, this.pos, "utf8");
  }

  private reserve(count: number): void {
    if (this.pos + count <= this.bytes.length) return;
    // The document under way moves to the new slab; the finished ones stay where they are.
    const partial = this.bytes.subarray(this.documentStart, this.pos);
    const next = Buffer.allocUnsafe(Math.max(this.slabBytes, 2 * (partial.length + count)));
    next.set(partial, 0);
    this.bytes = next;
    this.pos = partial.length;
    this.documentStart = 0;
  }
}
