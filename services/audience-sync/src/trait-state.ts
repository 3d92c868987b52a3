import { MAX_SNAPSHOT_ENTRIES, sortedOrder, userHash } from "./sort-key.js";

/**
 * The stored state of one audience or computed trait: every user with a value
 * (audience members have the value `true`), in (hash, userId) order, encoded
 * compactly so a million members take tens of megabytes, not hundreds.
 *
 * Blob layout: "SYS1", u32 count, then per entry u32 hash, u16 id length,
 * id bytes (UTF-8), u32 value length, value bytes (JSON).
 */
const MAGIC = Buffer.from("SYS1");

export interface StateEntry {
  hash: number;
  userId: string;
  /** The value as JSON text. */
  value: string;
}

/** Reads entries one after the other without building them all at once. */
export function* readState(blob: Uint8Array | undefined): Generator<StateEntry> {
  if (!blob || blob.length === 0) return;
  const buffer = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  if (!buffer.subarray(0, 4).equals(MAGIC)) throw new Error("unknown audience state format");
  const count = buffer.readUInt32BE(4);
  let offset = 8;
  for (let i = 0; i < count; i++) {
    const hash = buffer.readUInt32BE(offset);
    const idLength = buffer.readUInt16BE(offset + 4);
    const userId = buffer.toString("utf8", offset + 6, offset + 6 + idLength);
    offset += 6 + idLength;
    const valueLength = buffer.readUInt32BE(offset);
    const value = buffer.toString("utf8", offset + 4, offset + 4 + valueLength);
    offset += 4 + valueLength;
    yield { hash, userId, value };
  }
}

export function stateCount(blob: Uint8Array | undefined): number {
  if (!blob || blob.length < 8) return 0;
  return Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength).readUInt32BE(4);
}

/** Writes entries (already in order) into a blob. */
export class StateWriter {
  private readonly chunks: Buffer[] = [];
  private chunk = Buffer.allocUnsafe(1 << 20);
  private offset = 0;
  private count = 0;

  add(entry: StateEntry): void {
    const idLength = Buffer.byteLength(entry.userId, "utf8");
    const valueLength = Buffer.byteLength(entry.value, "utf8");
    const size = 10 + idLength + valueLength;
    if (this.offset + size > this.chunk.length) {
      this.chunks.push(this.chunk.subarray(0, this.offset));
      this.chunk = Buffer.allocUnsafe(Math.max(1 << 20, size));
      this.offset = 0;
    }
    const c = this.chunk;
    c.writeUInt32BE(entry.hash, this.offset);
    c.writeUInt16BE(idLength, this.offset + 4);
    c.write(entry.userId, this.offset + 6, "utf8");
    c.writeUInt32BE(valueLength, this.offset + 6 + idLength);
    c.write(entry.value, this.offset + 10 + idLength, "utf8");
    this.offset += size;
    this.count++;
  }

  finish(): Buffer {
    const header = Buffer.alloc(8);
    MAGIC.copy(header);
    header.writeUInt32BE(this.count, 4);
    return Buffer.concat([header, ...this.chunks, this.chunk.subarray(0, this.offset)]);
  }
}

export class DuplicateUserError extends Error {
  override readonly name = "DuplicateUserError";
  constructor(readonly userId: string) {
    super(`duplicate user id "${userId}": each user may appear once`);
  }
}

/**
 * Collects the entries of a snapshot as they stream in, then yields them in
 * state order. Holds the ids and values, a hash per entry, and nothing more.
 */
export class SnapshotCollector {
  private readonly userIds: string[] = [];
  private readonly values: string[] | undefined;
  private hashes = new Uint32Array(1024);
  private order: Uint32Array | undefined;

  /** With `fixedValue` (audiences: "true") no per-entry values are kept. */
  constructor(private readonly fixedValue?: string) {
    this.values = fixedValue === undefined ? [] : undefined;
  }

  get size(): number {
    return this.userIds.length;
  }

  add(userId: string, value?: string): void {
    if (this.userIds.length >= MAX_SNAPSHOT_ENTRIES) throw new RangeError(`a snapshot holds at most ${MAX_SNAPSHOT_ENTRIES} entries`);
    if (this.userIds.length === this.hashes.length) {
      const grown = new Uint32Array(this.hashes.length * 2);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[this.userIds.length] = userHash(userId);
    this.userIds.push(userId);
    this.values?.push(value ?? "null");
  }

  /**
   * Sorts the entries into state order and checks them: throws
   * DuplicateUserError when an id appears twice. Call before entries(), so a
   * bad snapshot is refused before anything is emitted.
   */
  finish(): void {
    const hashes = this.hashes.subarray(0, this.userIds.length);
    this.order = sortedOrder(this.userIds, hashes);
    for (let i = 1; i < this.order.length; i++) {
      const a = this.order[i - 1]!;
      const b = this.order[i]!;
      if (hashes[a] === hashes[b] && this.userIds[a] === this.userIds[b]) throw new DuplicateUserError(this.userIds[b]!);
    }
  }

  /** The entries in state order (after finish()). */
  *entries(): Generator<StateEntry> {
    if (!this.order) throw new Error("finish() first");
    for (const position of this.order) {
      yield {
        hash: this.hashes[position]!,
        userId: this.userIds[position]!,
        value: this.values ? this.values[position]! : this.fixedValue!,
      };
    }
  }
}
