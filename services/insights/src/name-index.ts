import type { KvRecords } from "./kv-records.js";
import { nameDigest, namesKey, type NamesRecord, type SchemaType } from "./records.js";

/** Where a call's name is counted. */
export type Admission =
  /** In the source's index: its own entry. */
  | "admitted"
  /** The index is full without it: the type's overflow entry. */
  | "overflow"
  /** Not yet in the index, which has room: its own entry for now, settled at the next commit. */
  | "tentative";

/** What insights knows of one source's index. */
class SourceNames {
  /** Digests in the index (as last read or written here; other replicas may have added more). */
  readonly admitted = new Set<string>();
  /** Names read and not in the index when last looked: digest → type and name, in the order read. */
  readonly tentative = new Map<string, { type: SchemaType; name: string }>();
  full = false;

  take(digests: readonly string[], limit: number): void {
    for (const digest of digests) this.admitted.add(digest);
    this.full = this.admitted.size >= limit;
  }
}

/**
 * The names (track events, page and screen names) each source's schema has its own entries for:
 * at most `limit` per source, in a KV record per source that only ever grows, shared by every
 * replica. A name read while the index has room is tentative until the next commit adds it, in
 * the order names were read, or finds the index full (another replica filled it): its counts then
 * go to the overflow entry, and so do those of every name read after the index is full. Since the
 * index only grows, a name is in its own entry on every replica or on none, so no call is counted
 * in two entries.
 */
export class NameIndex {
  private readonly sources = new Map<string, SourceNames>();
  private readonly loading = new Map<string, Promise<void>>();
  /** Digests of names seen, by "<type>\n<name>" (bounded: cleared when it grows past a few limits). */
  private readonly digests = new Map<string, string>();

  constructor(
    private readonly records: KvRecords<NamesRecord>,
    readonly limit: number,
  ) {}

  isLoaded(sourceId: string): boolean {
    return this.sources.has(sourceId);
  }

  /** Reads a source's index, once. */
  load(sourceId: string): Promise<void> {
    let loading = this.loading.get(sourceId);
    if (!loading) {
      loading = this.records.get(namesKey(sourceId)).then(
        (record) => {
          const names = new SourceNames();
          names.take(record?.digests ?? [], this.limit);
          this.sources.set(sourceId, names);
          this.loading.delete(sourceId);
        },
        (error: unknown) => {
          this.loading.delete(sourceId);
          throw error;
        },
      );
      this.loading.set(sourceId, loading);
    }
    return loading;
  }

  digest(type: SchemaType, name: string): string {
    const id = `${type}\n${name}`;
    let digest = this.digests.get(id);
    if (digest === undefined) {
      if (this.digests.size >= 4 * this.limit + 1_000) this.digests.clear();
      digest = nameDigest(type, name);
      this.digests.set(id, digest);
    }
    return digest;
  }

  /** Where a call of this source, type and name counts. The source's index must be loaded. */
  admit(sourceId: string, type: SchemaType, name: string, digest: string): Admission {
    const names = this.sources.get(sourceId)!;
    if (names.admitted.has(digest)) return "admitted";
    if (names.full) return "overflow";
    if (!names.tentative.has(digest)) names.tentative.set(digest, { type, name });
    return "tentative";
  }

  isTentative(sourceId: string, digest: string): boolean {
    return this.sources.get(sourceId)?.tentative.has(digest) ?? false;
  }

  tentativeCount(sourceId: string): number {
    return this.sources.get(sourceId)?.tentative.size ?? 0;
  }

  /**
   * Adds every tentative name to its source's index while it has room, by compare-and-set.
   * Returns, per source, the digests that did not make it (their counts belong in the overflow
   * entries). Names read while this runs stay tentative for the next commit. Throws when a
   * source's index could not be written; its names stay tentative.
   */
  async commit(): Promise<Map<string, Set<string>>> {
    const rejected = new Map<string, Set<string>>();
    for (const [sourceId, names] of this.sources) {
      if (names.tentative.size === 0) continue;
      const candidates = [...names.tentative.keys()];
      let stored: string[] = [];
      await this.records.modify<undefined>(namesKey(sourceId), (current) => {
        const digests = [...(current?.digests ?? [])];
        const known = new Set(digests);
        let added = false;
        for (const digest of candidates) {
          if (known.has(digest) || known.size >= this.limit) continue;
          known.add(digest);
          digests.push(digest);
          added = true;
        }
        stored = digests;
        return added ? { value: { digests }, result: undefined } : undefined;
      });
      names.take(stored, this.limit);
      const left = new Set<string>();
      for (const digest of candidates) {
        names.tentative.delete(digest);
        if (!names.admitted.has(digest)) left.add(digest);
      }
      if (left.size > 0) rejected.set(sourceId, left);
    }
    return rejected;
  }
}
