import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";

/** Tries of one compare-and-set before a write gives up (and keeps its counts for the next flush). */
const MAX_TRIES = 10;

/**
 * JSON records in a KV bucket, changed by compare-and-set, so replicas writing the same record
 * never lose each other's writes. The last value and revision of each record written are kept
 * (up to `maxCached`), so a record written every second is not read back before each write; a
 * stale one fails the compare-and-set and is read again.
 */
export class KvRecords<Value> {
  private readonly cache = new Map<string, { value: Value; revision: number }>();

  constructor(
    private readonly kv: KV,
    private readonly maxCached: number,
  ) {}

  /** The current value (undefined when there is none), read from the bucket. */
  async get(key: string): Promise<Value | undefined> {
    const entry = await this.kv.get(key);
    return entry && entry.operation === "PUT" ? entry.json<Value>() : undefined;
  }

  /**
   * Writes `change(current)` in place of the current value, retrying with a fresh read when
   * another writer came first. `change` must be a pure function of its argument: it may run
   * several times. Returns what it returned on the write that succeeded (undefined: nothing
   * to write). Throws when the bucket cannot be reached or the record keeps changing.
   */
  async modify<Result>(
    key: string,
    change: (current: Value | undefined) => { value: Value; result: Result } | undefined,
  ): Promise<Result | undefined> {
    let lastError: unknown;
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      let known = this.cache.get(key);
      if (!known || tries > 0) {
        const entry = await this.kv.get(key);
        known = entry && entry.operation === "PUT" ? { value: entry.json<Value>(), revision: entry.revision } : undefined;
        // A deleted record is created anew: its revision is what create must follow.
        if (!known && entry) known = { value: undefined as Value, revision: entry.revision };
      }
      const next = change(known?.value);
      if (next === undefined) return undefined;
      const text = JSON.stringify(next.value);
      try {
        const revision = known ? await this.kv.update(key, text, known.revision) : await this.kv.create(key, text);
        this.remember(key, next.value, revision);
        return next.result;
      } catch (error) {
        this.cache.delete(key);
        // Anything but another writer coming first (or a stale cached revision) is for the caller.
        if (!isConflict(error)) throw error;
        lastError = error;
      }
    }
    throw new Error(`could not write ${key}`, { cause: lastError });
  }

  private remember(key: string, value: Value, revision: number): void {
    // Re-inserted at the end: the oldest written record is the first to go.
    this.cache.delete(key);
    this.cache.set(key, { value, revision });
    if (this.cache.size > this.maxCached) this.cache.delete(this.cache.keys().next().value!);
  }
}

/** The compare-and-set failed: the record is not at the revision written against. */
function isConflict(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}
