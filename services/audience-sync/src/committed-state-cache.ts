/**
 * The state blobs this process committed most recently, so that the next sync
 * of the same audience or trait diffs against the blob in memory instead of
 * reading it back from the object store (at 100,000 members that read was
 * about half a re-sync's time).
 *
 * An entry is tied to the KV revision its commit produced. A lookup names the
 * revision the state record has now, so a state that anything else changed
 * since (another audience-sync instance, a later sync) is never served from
 * here: its revision differs, and the caller reads the object as before.
 *
 * Bounded by bytes, least recently used first out: a process keeping a
 * thousand audiences must not keep every member list in memory.
 */
export class CommittedStateCache {
  /** In least recently used first order (a Map iterates in insertion order). */
  private readonly entries = new Map<string, { revision: number; blob: Buffer }>();
  private bytes = 0;

  constructor(readonly budgetBytes: number) {}

  /** The blob committed as `revision` of `key`, or undefined. */
  get(key: string, revision: number): Buffer | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.revision !== revision) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.blob;
  }

  /** Remembers the blob a commit made current as `revision`; replaces what `key` had. The blob must not change afterwards. */
  set(key: string, revision: number, blob: Buffer): void {
    this.delete(key);
    if (blob.length > this.budgetBytes) return;
    this.entries.set(key, { revision, blob });
    this.bytes += blob.length;
    for (const [oldestKey] of this.entries) {
      if (this.bytes <= this.budgetBytes) break;
      this.delete(oldestKey);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.blob.length;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
