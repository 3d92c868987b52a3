/** Width of one bucket: the resolution of every window the overview reports. */
export const BUCKET_MS = 10_000;
/** The longest window: an hour (plus the bucket being filled). */
export const HOUR_MS = 3600_000;
const BUCKETS = HOUR_MS / BUCKET_MS + 1;

/**
 * Counts of one thing over the last hour, in 10-second buckets: adding is O(1), a window's sum
 * O(buckets), and memory fixed (361 numbers) however much is counted.
 */
export class RollingCounts {
  private readonly counts = new Float64Array(BUCKETS);
  /** The bucket number (time / BUCKET_MS) each slot holds now. */
  private readonly slots = new Float64Array(BUCKETS).fill(-1);

  add(atMs: number, count = 1): void {
    const bucket = Math.floor(atMs / BUCKET_MS);
    const slot = bucket % BUCKETS;
    if (this.slots[slot] !== bucket) {
      // Older than the slot's current bucket: outside the hour already.
      if (this.slots[slot]! > bucket) return;
      this.slots[slot] = bucket;
      this.counts[slot] = 0;
    }
    this.counts[slot]! += count;
  }

  /** The count from `fromMs` (its bucket included) up to now. */
  sumSince(fromMs: number, nowMs: number): number {
    const first = Math.floor(fromMs / BUCKET_MS);
    const last = Math.floor(nowMs / BUCKET_MS);
    let sum = 0;
    for (let slot = 0; slot < BUCKETS; slot++) {
      const bucket = this.slots[slot]!;
      if (bucket >= first && bucket <= last) sum += this.counts[slot]!;
    }
    return sum;
  }
}

/** RollingCounts by key (a source or destination id), made on first use. */
export class CountsByKey {
  private readonly byKey = new Map<string, RollingCounts>();

  add(key: string, atMs: number, count = 1): void {
    let counts = this.byKey.get(key);
    if (!counts) this.byKey.set(key, (counts = new RollingCounts()));
    counts.add(atMs, count);
  }

  sumSince(key: string, fromMs: number, nowMs: number): number {
    return this.byKey.get(key)?.sumSince(fromMs, nowMs) ?? 0;
  }
}
