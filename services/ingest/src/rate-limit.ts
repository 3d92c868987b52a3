import { ServiceError } from "@switchyard/platform";

export interface RateLimit {
  /** Calls per second a source may send on average. */
  perSecond: number;
  /** Calls a source may send at once after a quiet period (the bucket's size). */
  burst: number;
}

/**
 * A token bucket: refills at `perSecond`, holds at most `burst`. A request
 * costs one token per call. It is let through when the bucket holds its cost,
 * or, for a request larger than the whole bucket, when the bucket is full; it
 * then takes its whole cost, leaving a debt that later requests wait out. So
 * the average rate holds whatever the batch sizes, and a batch larger than the
 * burst is slowed rather than refused forever. Pure: time comes from `now`.
 */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly limit: RateLimit,
    private readonly now: () => number,
  ) {
    this.tokens = limit.burst;
    this.updatedAt = now();
  }

  /** Takes `cost` tokens and returns 0, or takes nothing and returns how many ms until the request would pass. */
  take(cost: number): number {
    this.refill();
    const needed = Math.min(cost, this.limit.burst);
    if (this.tokens >= needed) {
      this.tokens -= cost;
      return 0;
    }
    // The small allowance keeps floating-point dust (1.0000000001 ms) from adding a whole millisecond.
    return Math.max(1, Math.ceil(((needed - this.tokens) / this.limit.perSecond) * 1000 - 1e-6));
  }

  /** Full again: nothing taken since it last filled up. */
  get full(): boolean {
    this.refill();
    return this.tokens >= this.limit.burst;
  }

  private refill(): void {
    const now = this.now();
    const elapsedMs = Math.max(0, now - this.updatedAt);
    this.updatedAt = now;
    this.tokens = Math.min(this.limit.burst, this.tokens + (elapsedMs / 1000) * this.limit.perSecond);
  }
}

/** Buckets kept before full (idle) ones are dropped; a full bucket is the same as a new one. */
const PRUNE_AT = 10_000;

/**
 * Per-source rate limiting of ingest, counted in calls (a batch of 100 calls
 * costs 100), so a client cannot get around the limit by packing calls into
 * big batches, nor is one that sends calls one by one punished for it. All
 * write keys of a source (during a key rotation) share its bucket.
 */
export class IngestRateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly limit: RateLimit,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Throws RESOURCE_EXHAUSTED (with a retry delay) when the source is over its limit; takes the calls' tokens otherwise. */
  admit(sourceId: string, calls: number): void {
    let bucket = this.buckets.get(sourceId);
    if (!bucket) {
      if (this.buckets.size >= PRUNE_AT) this.prune();
      bucket = new TokenBucket(this.limit, this.now);
      this.buckets.set(sourceId, bucket);
    }
    const waitMs = bucket.take(calls);
    if (waitMs > 0) {
      throw new ServiceError(
        "RESOURCE_EXHAUSTED",
        `rate limit: this source may send ${this.limit.perSecond} calls per second (bursts of ${this.limit.burst}); retry in ${Math.ceil(waitMs / 1000)} s`,
        { retryAfterMs: waitMs },
      );
    }
  }

  private prune(): void {
    for (const [sourceId, bucket] of this.buckets) if (bucket.full) this.buckets.delete(sourceId);
  }
}
