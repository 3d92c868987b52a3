import { OVERFLOW, PendingSchemaEntry, PendingUsageDay, schemaKey, usageKey, type SchemaType } from "./records.js";
import type { StreamIndex } from "./pending-counts.js";

/**
 * The counts read since the last flush, by record: schema entries and usage days. A flush takes
 * the whole tally and starts a new one; what it could not write goes back into the new one.
 */
export class Tally {
  readonly schema = new Map<string, PendingSchemaEntry>();
  readonly usage = new Map<string, PendingUsageDay>();
  /**
   * Entries by source, type and name in nested maps: a call finds its entry with lookups of strings
   * it already holds (the reader hands out the same string for the same bytes, so their hashes are
   * cached), rather than by a key built and hashed anew for every call.
   */
  private readonly byName = new Map<string, Map<SchemaType, Map<string, PendingSchemaEntry>>>();
  /** Digests of the named entries (not overflow), by entry key, for rerouting. */
  private readonly digests = new Map<string, string>();
  /** Counts added (an upper bound of the entries held: entries of one message and counter add up). */
  added = 0;

  /** The entry a call of this source, type and name was last counted in since this tally began. */
  entryByName(sourceId: string, type: SchemaType, name: string): PendingSchemaEntry | undefined {
    return this.byName.get(sourceId)?.get(type)?.get(name);
  }

  /**
   * The entry of this key, made when missing; remembered under the call's source, type and name.
   * `digest` is set for an entry of its own name (so a commit that leaves the name out can move it
   * to the overflow).
   */
  entry(key: string, sourceId: string, type: SchemaType, name: string, overflow: boolean, digest?: string): PendingSchemaEntry {
    let entry = this.schema.get(key);
    if (!entry) {
      entry = new PendingSchemaEntry(key, sourceId, type, name, overflow);
      this.schema.set(key, entry);
      if (digest !== undefined) this.digests.set(key, digest);
    }
    let types = this.byName.get(sourceId);
    if (!types) this.byName.set(sourceId, (types = new Map()));
    let names = types.get(type);
    if (!names) types.set(type, (names = new Map()));
    names.set(name, entry);
    return entry;
  }

  overflowEntry(sourceId: string, type: SchemaType): PendingSchemaEntry {
    const key = schemaKey(sourceId, type, OVERFLOW);
    let entry = this.schema.get(key);
    if (!entry) {
      entry = new PendingSchemaEntry(key, sourceId, type, "", true);
      this.schema.set(key, entry);
    }
    return entry;
  }

  usageDay(day: string, sourceId: string): PendingUsageDay {
    const key = usageKey(day, sourceId);
    let entry = this.usage.get(key);
    if (!entry) {
      entry = new PendingUsageDay(key, sourceId, day);
      this.usage.set(key, entry);
    }
    return entry;
  }

  /** Moves the entries of names a commit left out (digests, per source) into their type's overflow entry. */
  reroute(rejected: Map<string, Set<string>>): void {
    if (rejected.size === 0) return;
    for (const [key, entry] of this.schema) {
      const digest = this.digests.get(key);
      if (digest === undefined || !rejected.get(entry.sourceId)?.has(digest)) continue;
      this.schema.delete(key);
      this.digests.delete(key);
      this.overflowEntry(entry.sourceId, entry.type).merge(entry);
    }
    // Calls of those names must find the overflow entry from now on.
    this.byName.clear();
  }

  /** Moves out the entries `keep` holds back (names still tentative), into `into`. */
  holdBack(into: Tally, keep: (entry: PendingSchemaEntry, digest: string) => boolean): void {
    for (const [key, entry] of this.schema) {
      const digest = this.digests.get(key);
      if (digest === undefined || !keep(entry, digest)) continue;
      this.schema.delete(key);
      this.digests.delete(key);
      into.takeBackSchema(entry, digest);
    }
  }

  /** Takes back an entry a flush did not write (or held back), adding to one read since. */
  takeBackSchema(entry: PendingSchemaEntry, digest?: string): void {
    const current = this.schema.get(entry.key);
    if (current) current.merge(entry);
    else {
      this.schema.set(entry.key, entry);
      if (digest !== undefined) this.digests.set(entry.key, digest);
    }
    this.added += entry.counts.size;
  }

  takeBackUsage(entry: PendingUsageDay): void {
    const current = this.usage.get(entry.key);
    if (current) current.counts.merge(entry.counts);
    else this.usage.set(entry.key, entry);
    this.added += entry.counts.size;
  }

  digestOf(key: string): string | undefined {
    return this.digests.get(key);
  }

  /** The lowest sequence of a stream with counts here; Infinity when none. */
  lowestSequence(stream: StreamIndex): number {
    let lowest = Number.POSITIVE_INFINITY;
    for (const entry of this.schema.values()) lowest = Math.min(lowest, entry.counts.lowestSequence(stream));
    for (const entry of this.usage.values()) lowest = Math.min(lowest, entry.counts.lowestSequence(stream));
    return lowest;
  }

  get empty(): boolean {
    return this.schema.size === 0 && this.usage.size === 0;
  }
}
