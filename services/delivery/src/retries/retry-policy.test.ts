import { describe, expect, it } from "vitest";
import { isCertificateError, nextStep, outcomeOfStatus, parseRetryAfter, type RetrySchedule } from "./retry-policy.js";

const HOUR = 3600_000;
/** The production defaults: 1 s base, 30 min cap, 4 h window. */
const SCHEDULE: RetrySchedule = { baseDelayMs: 1_000, maxDelayMs: 30 * 60_000, windowMs: 4 * HOUR };
const START = Date.UTC(2026, 10, 21, 10, 0, 0);

function delayOf(step: ReturnType<typeof nextStep>): number {
  if (step.kind !== "retry") throw new Error(`expected a retry, got ${step.kind}`);
  return step.delayMs;
}

describe("outcomeOfStatus", () => {
  it.each([200, 201, 202, 204, 299])("%i is delivered", (status) => {
    expect(outcomeOfStatus(status)).toBe("delivered");
  });

  it.each([300, 301, 302, 303, 304, 307, 308])("%i is permanent (redirects are never followed)", (status) => {
    expect(outcomeOfStatus(status)).toBe("permanent");
  });

  it.each([400, 401, 403, 404, 405, 409, 410, 413, 422])("%i is permanent", (status) => {
    expect(outcomeOfStatus(status)).toBe("permanent");
  });

  it.each([408, 429, 500, 501, 502, 503, 504, 599])("%i is retryable", (status) => {
    expect(outcomeOfStatus(status)).toBe("retryable");
  });
});

describe("isCertificateError", () => {
  it.each([
    "DEPTH_ZERO_SELF_SIGNED_CERT",
    "SELF_SIGNED_CERT_IN_CHAIN",
    "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "CERT_HAS_EXPIRED",
    "CERT_NOT_YET_VALID",
    "ERR_TLS_CERT_ALTNAME_INVALID",
  ])("%s is a certificate error (permanent)", (code) => {
    expect(isCertificateError(code)).toBe(true);
  });

  it.each(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EPROTO", ""])("%s is not", (code) => {
    expect(isCertificateError(code)).toBe(false);
  });

  it("is false without a code", () => {
    expect(isCertificateError(undefined)).toBe(false);
  });
});

describe("nextStep", () => {
  const step = (attempt: number, random: number, extra: Partial<Parameters<typeof nextStep>[0]> = {}) =>
    nextStep({ attempt, nowMs: START, windowStartMs: START, schedule: SCHEDULE, random: () => random, ...extra });

  it("doubles the delay with each failed attempt", () => {
    expect([1, 2, 3, 4, 5].map((attempt) => delayOf(step(attempt, 0.5)))).toEqual([750, 1_500, 3_000, 6_000, 12_000]);
  });

  it("uses equal jitter: half fixed, half random", () => {
    // Attempt 3: an exponential step of 4 s, so between 2 s and 4 s.
    expect(delayOf(step(3, 0))).toBe(2_000);
    expect(delayOf(step(3, 0.25))).toBe(2_500);
    expect(delayOf(step(3, 0.999_999))).toBe(4_000);
  });

  it("treats attempt 0 like attempt 1", () => {
    expect(delayOf(step(0, 0))).toBe(500);
  });

  it("never waits longer than the maximum delay", () => {
    // 1 s × 2^11 = 34 min is over the 30 min cap, and so is every later step.
    for (const attempt of [12, 20, 100, 5_000]) {
      expect(delayOf(step(attempt, 0))).toBe(15 * 60_000);
      expect(delayOf(step(attempt, 1))).toBe(30 * 60_000);
    }
  });

  it("honours a Retry-After longer than the backoff, even beyond the maximum delay", () => {
    expect(delayOf(step(1, 0.5, { retryAfterMs: 10_000 }))).toBe(10_000);
    expect(delayOf(step(1, 0.5, { retryAfterMs: HOUR }))).toBe(HOUR);
  });

  it("keeps the backoff when Retry-After asks for less", () => {
    expect(delayOf(step(4, 0.5, { retryAfterMs: 1_000 }))).toBe(6_000);
    expect(delayOf(step(4, 0.5, { retryAfterMs: 0 }))).toBe(6_000);
  });

  it("never schedules past the window's end", () => {
    const windowEnd = START + SCHEDULE.windowMs;
    // 300 ms before the end, a 500-1000 ms backoff lands exactly on the end.
    expect(delayOf(step(1, 0.5, { nowMs: windowEnd - 300 }))).toBe(300);
    // A Retry-After past the end is cut to the end too.
    expect(delayOf(step(1, 0.5, { nowMs: windowEnd - HOUR, retryAfterMs: 2 * HOUR }))).toBe(HOUR);
  });

  it("dead-letters once the window is over", () => {
    const windowEnd = START + SCHEDULE.windowMs;
    expect(step(7, 0.5, { nowMs: windowEnd })).toEqual({ kind: "dead_letter" });
    expect(step(7, 0.5, { nowMs: windowEnd + 1 })).toEqual({ kind: "dead_letter" });
    expect(step(1, 0.5, { nowMs: windowEnd + HOUR, retryAfterMs: 1_000 })).toEqual({ kind: "dead_letter" });
  });

  it("over a whole window of failures: delays grow, the last attempt lands on the end, then a dead letter", () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const windowEnd = START + SCHEDULE.windowMs;
    const delays: number[] = [];
    let now = START;
    for (let attempt = 1; ; attempt++) {
      const next = nextStep({ attempt, nowMs: now, windowStartMs: START, schedule: SCHEDULE, random });
      if (next.kind === "dead_letter") break;
      expect(next.delayMs).toBeGreaterThan(0);
      delays.push(next.delayMs);
      now += next.delayMs;
      expect(now).toBeLessThanOrEqual(windowEnd);
      expect(attempt).toBeLessThan(100);
    }
    expect(now).toBe(windowEnd);
    // Every uncapped delay is at least half its exponential step; the capped ones at least half the cap.
    delays.slice(0, -1).forEach((delay, i) => expect(delay).toBeGreaterThanOrEqual(Math.min(SCHEDULE.maxDelayMs, 1_000 * 2 ** i) / 2));
    // Enough attempts to matter, few enough not to hammer a dead receiver.
    expect(delays.length).toBeGreaterThan(10);
    expect(delays.length).toBeLessThan(40);
  });
});

describe("parseRetryAfter", () => {
  const now = Date.UTC(2026, 10, 21, 10, 0, 0);

  it("reads delay-seconds", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter("0", now)).toBe(0);
    expect(parseRetryAfter(" 5 ", now)).toBe(5_000);
  });

  it("reads an HTTP date, relative to now", () => {
    expect(parseRetryAfter(new Date(now + 30_000).toUTCString(), now)).toBe(30_000);
    expect(parseRetryAfter("Sat, 21 Nov 2026 10:01:00 GMT", now)).toBe(60_000);
  });

  it("turns a date in the past into no wait", () => {
    expect(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now)).toBe(0);
  });

  it.each([undefined, "", "   ", "soon", "12abc", "1.5", "-5", "3 days", "2030-01-01"])("ignores %j", (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});
