import { asciiHash, compareKeys, HASH_BITS, MAX_SNAPSHOT_ENTRIES, sortedOrder, userHash } from "./sort-key.js";

/**
 * The stored state of one audience or computed trait: every user with a value
 * (audience members have the value `true`), in (hash, userId) order, encoded
 * compactly so a million members take tens of megabytes, not hundreds. Two
 * layouts, both read:
 *
 *  - "SYS1" (computed traits; audiences stored before SYS2): u32 count, then
 *    per entry u32 hash, u16 id length, id (UTF-8), u32 value length, value
 *    (JSON).
 *  - "SYS2" (audiences, whose entries all have one value): u32 count, u32
 *    value length, the value, then per entry u16 id length, id. The hash is
 *    worked out from the id when it is needed. A million members of 12-byte
 *    ids take 14 MB instead of 26 MB to store, load and digest.
 *
 * A snapshot is collected as bytes and, once sorted, is itself the new state
 * blob. A sync walks the old and the new blob side by side comparing bytes,
 * and makes strings only for the users whose value changes.
 */
const SYS1 = Buffer.from("SYS1");
const SYS2 = Buffer.from("SYS2");
/** A snapshot is collected in 2^8 buckets by the top bits of the hash: at a million entries, about 70 KB each. */
const BUCKET_BITS = 8;
const BUCKETS = 1 << BUCKET_BITS;
const BUCKET_SHIFT = HASH_BITS - BUCKET_BITS;
/** Buckets grow by chunks of this size, carved out of slabs of SLAB_BYTES. */
const CHUNK_BYTES = 16 * 1024;
const SLAB_BYTES = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/** Walks the records of a state in order; until `done`, the other fields describe the current one. */
export interface RecordCursor {
  readonly done: boolean;
  readonly hash: number;
  /** Holds the id and the value of the current record (a shared value sits in the blob's header). */
  readonly buffer: Buffer;
  readonly idStart: number;
  readonly idLength: number;
  readonly valueStart: number;
  readonly valueLength: number;
  next(): void;
}

// ---------------------------------------------------------------- bytes

// Big-endian reads and writes by hand: these run several times per record,
// millions of times per sync, and plain indexing is cheaper than Buffer's
// checked methods.
function u16(buffer: Buffer, offset: number): number {
  return (buffer[offset]! << 8) | buffer[offset + 1]!;
}

function u32(buffer: Buffer, offset: number): number {
  return ((buffer[offset]! << 24) | (buffer[offset + 1]! << 16) | (buffer[offset + 2]! << 8) | buffer[offset + 3]!) >>> 0;
}

function putU16(buffer: Buffer, offset: number, value: number): void {
  buffer[offset] = value >>> 8;
  buffer[offset + 1] = value;
}

function putU32(buffer: Buffer, offset: number, value: number): void {
  buffer[offset] = value >>> 24;
  buffer[offset + 1] = value >>> 16;
  buffer[offset + 2] = value >>> 8;
  buffer[offset + 3] = value;
}

function sameBytes(a: Buffer, aStart: number, b: Buffer, bStart: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (a[aStart + i] !== b[bStart + i]) return false;
  return true;
}

/** Copies bytes; short runs (nearly all) in a plain loop, cheaper than a Buffer.copy call each. */
function copyBytes(source: Buffer, start: number, length: number, target: Buffer, targetStart: number): void {
  if (length > 64) {
    source.copy(target, targetStart, start, start + length);
    return;
  }
  for (let i = 0; i < length; i++) target[targetStart + i] = source[start + i]!;
}

function dataView(buffer: Buffer): DataView {
  return new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/** Copies bytes four at a time where it can: for the short runs of a record, far fewer operations than byte by byte. */
function copyWords(source: DataView, start: number, length: number, target: DataView, targetStart: number): void {
  let i = 0;
  for (; i + 4 <= length; i += 4) target.setUint32(targetStart + i, source.getUint32(start + i));
  for (; i < length; i++) target.setUint8(targetStart + i, source.getUint8(start + i));
}

/**
 * Writes `text` as UTF-8 at `offset` and returns the byte count. ASCII (what
 * user ids almost always are) is copied in a plain loop, which is much
 * cheaper than a call into Buffer.write per short string. The caller makes
 * room for 3 bytes per UTF-16 code unit, UTF-8's most.
 */
function writeUtf8(buffer: Buffer, offset: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) return buffer.write(text, offset, "utf8");
    buffer[offset + i] = code;
  }
  return text.length;
}

/** userHash of an id given as UTF-8 bytes. */
function bytesHash(buffer: Buffer, start: number, length: number): number {
  const hash = asciiHash(buffer, start, length);
  return hash >= 0 ? hash : userHash(buffer.toString("utf8", start, start + length));
}

// ---------------------------------------------------------------- records

export function userIdOf(record: RecordCursor): string {
  return record.buffer.toString("utf8", record.idStart, record.idStart + record.idLength);
}

/** The value as JSON text. */
export function valueOf(record: RecordCursor): string {
  return record.buffer.toString("utf8", record.valueStart, record.valueStart + record.valueLength);
}

/**
 * Whether two records are of the same user. Equal ids have equal UTF-8 bytes
 * and, for the well-formed strings protobuf decoding yields, only they do.
 */
export function sameUserId(a: RecordCursor, b: RecordCursor): boolean {
  return a.idLength === b.idLength && sameBytes(a.buffer, a.idStart, b.buffer, b.idStart, a.idLength);
}

export function sameValue(a: RecordCursor, b: RecordCursor): boolean {
  return a.valueLength === b.valueLength && sameBytes(a.buffer, a.valueStart, b.buffer, b.valueStart, a.valueLength);
}

/** -1, 0 or 1: two records in state order, by (hash, userId) with ids compared as strings. */
export function compareRecords(a: RecordCursor, b: RecordCursor): number {
  if (a.hash !== b.hash) return a.hash < b.hash ? -1 : 1;
  if (sameUserId(a, b)) return 0;
  return compareKeys(a.hash, userIdOf(a), b.hash, userIdOf(b));
}

// ---------------------------------------------------------------- blobs

/** The records of a state blob (none for undefined). */
export function stateRecords(blob: Buffer | undefined): BlobRecords {
  return new BlobRecords(blob ?? EMPTY);
}

export function stateCount(blob: Uint8Array | undefined): number {
  if (!blob || blob.length < 8) return 0;
  return Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength).readUInt32BE(4);
}

export class BlobRecords implements RecordCursor {
  done: boolean;
  hash = 0;
  idStart = 0;
  idLength = 0;
  valueStart = 0;
  valueLength = 0;
  /** Where the current record starts, and where the next one does. */
  private start: number;
  private end = 0;
  private remaining: number;
  /** SYS2: every record has the value in the header. */
  private readonly sharedValue: boolean;

  constructor(readonly buffer: Buffer) {
    const magic = buffer.subarray(0, 4);
    this.sharedValue = magic.equals(SYS2);
    if (buffer.length > 0 && !this.sharedValue && !magic.equals(SYS1)) throw new Error("unknown audience state format");
    this.remaining = buffer.length > 0 ? u32(buffer, 4) : 0;
    this.start = 8;
    if (this.sharedValue) {
      this.valueStart = 12;
      this.valueLength = u32(buffer, 8);
      this.start = this.valueStart + this.valueLength;
    }
    this.done = this.remaining === 0;
    if (!this.done) this.read();
  }

  next(): void {
    this.moveTo(this.end, 1);
  }

  /**
   * If the next `bytes` bytes here and in `other` (a blob of the same layout)
   * are the same, skips the records that lie wholly within them in both
   * (identical bytes from record boundaries on hold identical records) and
   * returns true: one native comparison instead of one per record. Returns
   * false if nothing was skipped.
   */
  skipSame(other: BlobRecords, bytes: number): boolean {
    if (!this.sameLayout(other)) return false;
    const span = Math.min(bytes, this.buffer.length - this.start, other.buffer.length - other.start);
    if (span <= 0 || this.buffer.compare(other.buffer, other.start, other.start + span, this.start, this.start + span) !== 0) return false;
    let records = 0;
    let end = this.start;
    while (records < this.remaining && records < other.remaining) {
      const next = this.recordEnd(end);
      if (next > this.start + span) break;
      end = next;
      records++;
    }
    if (records === 0) return false;
    const skipped = end - this.start;
    other.moveTo(other.start + skipped, records);
    this.moveTo(end, records);
    return true;
  }

  private sameLayout(other: BlobRecords): boolean {
    if (this.sharedValue !== other.sharedValue) return false;
    return !this.sharedValue || (this.valueLength === other.valueLength && sameValue(this, other));
  }

  private recordEnd(start: number): number {
    const idEnd = start + (this.sharedValue ? 2 : 6) + u16(this.buffer, start + (this.sharedValue ? 0 : 4));
    return this.sharedValue ? idEnd : idEnd + 4 + u32(this.buffer, idEnd);
  }

  private moveTo(start: number, records: number): void {
    this.start = start;
    this.remaining -= records;
    this.done = this.remaining === 0;
    if (!this.done) this.read();
  }

  /** Reads the record at `start` into the fields. */
  private read(): void {
    const { buffer, start } = this;
    if (this.sharedValue) {
      this.idLength = u16(buffer, start);
      this.idStart = start + 2;
      this.end = this.idStart + this.idLength;
      if (this.end > buffer.length) throw new Error("audience state is damaged: its records run past its end");
      this.hash = bytesHash(buffer, this.idStart, this.idLength);
    } else {
      this.hash = u32(buffer, start);
      this.idLength = u16(buffer, start + 4);
      this.idStart = start + 6;
      this.valueLength = u32(buffer, this.idStart + this.idLength);
      this.valueStart = this.idStart + this.idLength + 4;
      this.end = this.valueStart + this.valueLength;
      if (this.end > buffer.length) throw new Error("audience state is damaged: its records run past its end");
    }
  }
}

/**
 * A blob of the records `records()` yields (called twice: to size the blob,
 * then to fill it). With `sharedValue` it is SYS2, and every record must have
 * that value; otherwise SYS1.
 */
export function stateBlob(records: () => RecordCursor, sharedValue: Buffer | undefined): Buffer {
  let count = 0;
  let size = sharedValue ? 12 + sharedValue.length : 8;
  for (const record = records(); !record.done; record.next()) {
    count++;
    size += sharedValue ? 2 + record.idLength : 10 + record.idLength + record.valueLength;
  }
  const blob = Buffer.allocUnsafe(size);
  (sharedValue ? SYS2 : SYS1).copy(blob);
  putU32(blob, 4, count);
  let at = 8;
  if (sharedValue) {
    putU32(blob, at, sharedValue.length);
    sharedValue.copy(blob, at + 4);
    at += 4 + sharedValue.length;
  }
  for (const record = records(); !record.done; record.next()) {
    if (sharedValue) {
      if (record.valueLength !== sharedValue.length || !sameBytes(record.buffer, record.valueStart, sharedValue, 0, sharedValue.length)) {
        throw new Error(`"${userIdOf(record)}" has the value ${valueOf(record)}, not the value all entries share`);
      }
    } else {
      putU32(blob, at, record.hash);
      at += 4;
    }
    putU16(blob, at, record.idLength);
    copyBytes(record.buffer, record.idStart, record.idLength, blob, at + 2);
    at += 2 + record.idLength;
    if (!sharedValue) {
      putU32(blob, at, record.valueLength);
      copyBytes(record.buffer, record.valueStart, record.valueLength, blob, at + 4);
      at += 4 + record.valueLength;
    }
  }
  return blob;
}

// ---------------------------------------------------------------- snapshots

export class DuplicateUserError extends Error {
  override readonly name = "DuplicateUserError";
  constructor(readonly userId: string) {
    super(`duplicate user id "${userId}": each user may appear once`);
  }
}

/**
 * Collects the entries of a snapshot as they stream in, then sorts them into
 * a state blob (SYS2 when all entries share `sharedValue`, else SYS1).
 * Entries are kept as bytes in buckets by the top bits of their hash: the
 * order of the buckets is already state order, and each bucket is small, so
 * sorting and copying touch one small region of memory at a time (picking a
 * million small entries out of one big region in sorted order would wait on a
 * cache miss for nearly every one).
 *
 * An entry is u32 hash, u16 id length, id, and (unless the value is shared)
 * u32 value length, value. A bucket is a list of chunks, which are carved out
 * of larger slabs, so that growing copies nothing and a million entries make
 * a few dozen buffers.
 */
export class SnapshotCollector {
  /** Per bucket, its filled chunks (each cut to the bytes used) and the chunk being filled. */
  private readonly chunks: Buffer[][] = Array.from({ length: BUCKETS }, () => []);
  private readonly tails: Buffer[] = new Array<Buffer>(BUCKETS).fill(EMPTY);
  private readonly tailBytes = new Uint32Array(BUCKETS);
  private readonly bucketEntries = new Uint32Array(BUCKETS);
  private slab: Buffer = EMPTY;
  private slabBytes = 0;
  private count = 0;
  /** The bytes of all ids (with their u16 lengths) and values (with their u32 lengths). */
  private entryBytes = 0;
  private finished = false;
  /** The value every entry has (audiences: "true"), if they share one. */
  readonly sharedValue: Buffer | undefined;

  /** With `sharedValue` (audiences: "true") every entry has that value. */
  constructor(sharedValue?: string) {
    this.sharedValue = sharedValue === undefined ? undefined : Buffer.from(sharedValue);
  }

  get size(): number {
    return this.count;
  }

  add(userId: string, value?: string): void {
    const hash = userHash(userId);
    const valueText = this.sharedValue ? undefined : (value ?? "null");
    const chunk = this.chunkWithRoom(hash, 3 * userId.length, valueText);
    const start = this.tailBytes[hash >>> BUCKET_SHIFT]!;
    this.completeEntry(chunk, start, hash, writeUtf8(chunk, start + 6, userId), valueText);
  }

  /**
   * add() for an id given as UTF-8 bytes, as a snapshot stream carries it,
   * without making a string of it, if the id is ASCII (nearly every id is).
   * Returns false, adding nothing, if it is not.
   */
  addAscii(bytes: Buffer, idStart: number, idLength: number): boolean {
    const hash = asciiHash(bytes, idStart, idLength);
    if (hash < 0) return false;
    const valueText = this.sharedValue ? undefined : "null";
    const chunk = this.chunkWithRoom(hash, idLength, valueText);
    const start = this.tailBytes[hash >>> BUCKET_SHIFT]!;
    copyBytes(bytes, idStart, idLength, chunk, start + 6);
    this.completeEntry(chunk, start, hash, idLength, valueText);
    return true;
  }

  /** The chunk the entry of `hash` goes into, with room for an id of up to `idBytes` and `valueText`. */
  private chunkWithRoom(hash: number, idBytes: number, valueText: string | undefined): Buffer {
    if (this.finished) throw new Error("the snapshot is already finished");
    if (this.count >= MAX_SNAPSHOT_ENTRIES) throw new RangeError(`a snapshot holds at most ${MAX_SNAPSHOT_ENTRIES} entries`);
    const bucket = hash >>> BUCKET_SHIFT;
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    const room = 6 + idBytes + (valueText === undefined ? 0 : 4 + 3 * valueText.length);
    const tail = this.tails[bucket]!;
    const used = this.tailBytes[bucket]!;
    if (used + room <= tail.length) return tail;
    if (used > 0) this.chunks[bucket]!.push(tail.subarray(0, used));
    const chunk = this.carve(Math.max(CHUNK_BYTES, room));
    this.tails[bucket] = chunk;
    this.tailBytes[bucket] = 0;
    return chunk;
  }

  private carve(bytes: number): Buffer {
    if (bytes > SLAB_BYTES) return Buffer.allocUnsafe(bytes);
    if (this.slabBytes + bytes > this.slab.length) {
      this.slab = Buffer.allocUnsafe(SLAB_BYTES);
      this.slabBytes = 0;
    }
    this.slabBytes += bytes;
    return this.slab.subarray(this.slabBytes - bytes, this.slabBytes);
  }

  /** Writes the rest of an entry whose id is in place at `start` + 6, and counts it. */
  private completeEntry(chunk: Buffer, start: number, hash: number, idLength: number, valueText: string | undefined): void {
    putU32(chunk, start, hash);
    putU16(chunk, start + 4, idLength);
    let end = start + 6 + idLength;
    if (valueText !== undefined) {
      const valueLength = writeUtf8(chunk, end + 4, valueText);
      putU32(chunk, end, valueLength);
      end += 4 + valueLength;
    }
    const bucket = hash >>> BUCKET_SHIFT;
    this.tailBytes[bucket] = end;
    this.bucketEntries[bucket]!++;
    this.entryBytes += end - start - 4;
    this.count++;
  }

  /**
   * Sorts the entries into state order and returns them as a state blob,
   * checked: throws DuplicateUserError when an id appears twice, so a bad
   * snapshot is refused before anything is emitted. The buckets are let go;
   * call once.
   */
  finish(): Buffer {
    if (this.finished) throw new Error("the snapshot is already finished");
    this.finished = true;
    const shared = this.sharedValue;
    // SYS2 records are an entry without its hash; SYS1 records are the entry.
    const skip = shared ? 4 : 0;
    const blob = Buffer.allocUnsafe(shared ? 12 + shared.length + this.entryBytes : 8 + 4 * this.count + this.entryBytes);
    (shared ? SYS2 : SYS1).copy(blob);
    putU32(blob, 4, this.count);
    let at = 8;
    if (shared) {
      putU32(blob, at, shared.length);
      shared.copy(blob, at + 4);
      at += 4 + shared.length;
    }

    // Each bucket in turn is gathered into one buffer, sorted and copied out.
    const bucketBytes = (bucket: number) => this.chunks[bucket]!.reduce((sum, chunk) => sum + chunk.length, this.tailBytes[bucket]!);
    let largest = 0;
    for (let bucket = 0; bucket < BUCKETS; bucket++) largest = Math.max(largest, bucketBytes(bucket));
    const gathered = Buffer.allocUnsafe(largest);
    const most = Math.max(0, ...this.bucketEntries);
    const offsets = new Uint32Array(most);
    const lengths = new Uint32Array(most);
    const hashes = new Uint32Array(most);
    const sameId = (a: number, b: number) => {
      const length = u16(gathered, a + 4);
      return length === u16(gathered, b + 4) && sameBytes(gathered, a + 6, gathered, b + 6, length);
    };
    const idText = (offset: number) => gathered.toString("utf8", offset + 6, offset + 6 + u16(gathered, offset + 4));
    const compareIds = (a: number, b: number) => {
      if (sameId(offsets[a]!, offsets[b]!)) return 0;
      return compareKeys(0, idText(offsets[a]!), 0, idText(offsets[b]!));
    };
    const blobView = dataView(blob);
    const gatheredView = dataView(gathered);

    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      const entries = this.bucketEntries[bucket]!;
      if (entries === 0) continue;
      let filled = 0;
      for (const chunk of this.chunks[bucket]!) filled += chunk.copy(gathered, filled);
      this.tails[bucket]!.copy(gathered, filled, 0, this.tailBytes[bucket]);

      for (let i = 0, offset = 0; i < entries; i++) {
        const idEnd = offset + 6 + u16(gathered, offset + 4);
        const length = shared ? idEnd - offset : idEnd + 4 + u32(gathered, idEnd) - offset;
        offsets[i] = offset;
        lengths[i] = length;
        hashes[i] = u32(gathered, offset);
        offset += length;
      }
      // A bucket's hashes differ only below its top BUCKET_BITS; equal ids share a bucket.
      const order = sortedOrder(hashes.subarray(0, entries), compareIds, HASH_BITS - BUCKET_BITS);
      for (let k = 0; k < entries; k++) {
        const i = order[k]!;
        const offset = offsets[i]!;
        if (k > 0) {
          const previous = order[k - 1]!;
          if (hashes[previous] === hashes[i] && sameId(offsets[previous]!, offset)) throw new DuplicateUserError(idText(offset));
        }
        copyWords(gatheredView, offset + skip, lengths[i]! - skip, blobView, at);
        at += lengths[i]! - skip;
      }
      this.chunks[bucket] = [];
      this.tails[bucket] = EMPTY;
    }
    this.slab = EMPTY;
    return blob;
  }
}
