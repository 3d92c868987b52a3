import { isServiceError } from "@switchyard/platform";
import { describe, expect, it } from "vitest";
import { IngestRateLimiter, TokenBucket } from "./rate-limit.js";

/** A clock the test moves by hand. */
function fakeClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe("TokenBucket", () => {
  it("lets a burst through, then refuses until it refilled, and says how long", () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 5 }, clock.now);
    for (let i = 0; i < 5; i++) expect(bucket.take(1)).toBe(0);
    expect(bucket.take(1)).toBe(100);
    clock.advance(99);
    expect(bucket.take(1)).toBe(1);
    clock.advance(1);
    expect(bucket.take(1)).toBe(0);
    expect(bucket.take(1)).toBe(100);
  });

  it("counts calls: a request costs its number of calls", () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 5 }, clock.now);
    expect(bucket.take(3)).toBe(0);
    expect(bucket.take(3)).toBe(100); // 2 left, 3 needed: 1 more token, 100 ms
    expect(bucket.take(2)).toBe(0);
  });

  it("never holds more than the burst, however long it was idle", () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 5 }, clock.now);
    clock.advance(3_600_000);
    expect(bucket.take(5)).toBe(0);
    expect(bucket.take(1)).toBe(100);
  });

  it("lets a request larger than the burst through when full, and later ones wait out the debt", () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 5 }, clock.now);
    expect(bucket.take(25)).toBe(0); // 20 tokens of debt
    expect(bucket.take(25)).toBe(2_500); // needs a full bucket: 25 tokens, 2.5 s
    expect(bucket.take(1)).toBe(2_100);
    clock.advance(2_100);
    expect(bucket.take(1)).toBe(0);
  });

  it("refills at fractional rates", () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 0.5, burst: 1 }, clock.now);
    expect(bucket.take(1)).toBe(0);
    expect(bucket.take(1)).toBe(2_000);
    clock.advance(2_000);
    expect(bucket.take(1)).toBe(0);
  });

  it("is full again only when nothing was taken for long enough", () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 5 }, clock.now);
    expect(bucket.full).toBe(true);
    bucket.take(1);
    expect(bucket.full).toBe(false);
    clock.advance(100);
    expect(bucket.full).toBe(true);
  });
});

describe("IngestRateLimiter", () => {
  it("keeps one bucket per source", () => {
    const clock = fakeClock();
    const limiter = new IngestRateLimiter({ perSecond: 1, burst: 2 }, clock.now);
    limiter.admit("web", 2);
    expect(() => limiter.admit("web", 1)).toThrow();
    expect(() => limiter.admit("mobile", 2)).not.toThrow();
  });

  it("refuses with RESOURCE_EXHAUSTED, a message naming the limit, and a retry delay", () => {
    const clock = fakeClock();
    const limiter = new IngestRateLimiter({ perSecond: 4, burst: 8 }, clock.now);
    limiter.admit("web", 8);
    let thrown: unknown;
    try {
      limiter.admit("web", 2);
    } catch (error) {
      thrown = error;
    }
    if (!isServiceError(thrown)) throw new Error("expected a ServiceError");
    expect(thrown.code).toBe("RESOURCE_EXHAUSTED");
    expect(thrown.message).toBe("rate limit: this source may send 4 calls per second (bursts of 8); retry in 1 s");
    expect(thrown.retryAfterMs).toBe(500);
    expect(thrown.retryAfterSeconds).toBe(1);
    clock.advance(500);
    expect(() => limiter.admit("web", 2)).not.toThrow();
  });
});
