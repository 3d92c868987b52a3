/** The key, the object name and the Map entry: a rough figure, so that many tiny entries still count. */
const ENTRY_OVERHEAD_BYTES = 256;

/**
 * The state blobs this process committed most recently, so that the next sync
 * of the same audience or trait diffs against the blob in memory instead of
 * reading it back from the object store (a read that would otherwise be a
 * large part of a re-sync).
 *
 * An entry is tied to the KV revision its commit produced and to the object it
 * made current. A lookup names both as the state record has them now, so a
 * state that anything else changed since (another audience-sync instance, a
 * later sync, a bucket deleted and made again) is never served from here: the
 * caller reads the object as before.
 *
 * Bounded by bytes, least recently used first out: a process keeping a
 * thousand audiences must not keep every member list in memory. A blob is
 * counted by the memory it keeps alive (a small one is a slice of Node's
 * shared 8 KiB pool) plus the entry's own overhead.
 */
export class CommittedStateCache {
  /** In least recently used first order (a Map iterates in insertion order). */
  private readonly entries = new Map<string, { revision: number; object: string; blob: Buffer; bytes: number }>();
  private bytes = 0;

  constructor(readonly budgetBytes: number) {}

  /** The blob committed as `revision` of `key`, making `object` current; or undefined. */
  get(key: string, revision: number, object: string): Buffer | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.revision !== revision || entry.object !== object) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.blob;
  }

  /** Remembers the blob a commit made current (`object`, as `revision`); replaces what `key` had. The blob must not change afterwards. */
  set(key: string, revision: number, object: string, blob: Buffer): void {
    this.delete(key);
    const bytes = Math.max(blob.length, blob.buffer.byteLength) + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.budgetBytes) return;
    this.entries.set(key, { revision, object, blob, bytes });
    this.bytes += bytes;
    for (const [oldestKey] of this.entries) {
      if (this.bytes <= this.budgetBytes) break;
      this.delete(oldestKey);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
