import { describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { isRetryable, retryDelay, type RetryPolicy } from "./retry.js";

describe("isRetryable", () => {
  it("retries unavailable, deadline exceeded, resource exhausted and connection failures", () => {
    for (const code of [status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED, undefined])
      expect(isRetryable(code)).toBe(true);
  });

  it("does not retry anything else", () => {
    const others = Object.values(status).filter(
      (code): code is number =>
        typeof code === "number" && ![status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED].includes(code),
    );
    expect(others).toContain(status.UNAUTHENTICATED);
    expect(others).toContain(status.INVALID_ARGUMENT);
    for (const code of others) expect(isRetryable(code)).toBe(false);
  });
});

describe("retryDelay", () => {
  const policy: RetryPolicy = { initialDelayMs: 100, maxDelayMs: 1_000, maxElapsedMs: 10_000 };

  it("doubles from the initial delay up to the maximum, half of it jittered", () => {
    const low = () => 0;
    const high = () => 1;
    expect([1, 2, 3, 4, 5, 6].map((retry) => retryDelay(policy, retry, 0, low))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3, 4, 5, 6].map((retry) => retryDelay(policy, retry, 0, high))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it("spreads retries across the jitter range", () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const delays = new Set(Array.from({ length: 50 }, () => retryDelay(policy, 3, 0, random)));
    expect(delays.size).toBeGreaterThan(20);
    for (const delay of delays) expect(delay).toBeGreaterThanOrEqual(200);
  });

  it("stops at the total retry time, cutting the last delay to fit", () => {
    expect(retryDelay(policy, 10, 9_900, () => 1)).toBe(100);
    expect(retryDelay(policy, 10, 10_000, () => 1)).toBeUndefined();
    expect(retryDelay({ ...policy, maxElapsedMs: 0 }, 1, 0, () => 1)).toBeUndefined();
  });
});
