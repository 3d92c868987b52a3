import { describe, expect, it } from "vitest";
import { BUCKET_MS, HOUR_MS, RollingCounts } from "./rolling-counts.js";

describe("RollingCounts", () => {
  it("sums what was added within a window, at 10-second resolution, and forgets what is over an hour old", () => {
    const counts = new RollingCounts();
    const start = 1_700_000_000_000;
    counts.add(start, 5);
    counts.add(start + 30_000, 2);
    counts.add(start + HOUR_MS - BUCKET_MS, 1);
    const now = start + HOUR_MS - 1;
    expect(counts.sumSince(start, now)).toBe(8);
    expect(counts.sumSince(start + 20_000, now)).toBe(3);
    // An hour and a bucket later, the first bucket's slot holds a new bucket.
    counts.add(start + HOUR_MS + BUCKET_MS, 4);
    expect(counts.sumSince(start + HOUR_MS + BUCKET_MS - HOUR_MS, start + HOUR_MS + BUCKET_MS)).toBe(7);
    // Something older than what a slot holds now is outside the hour: not counted.
    counts.add(start, 100);
    expect(counts.sumSince(start, start + HOUR_MS + BUCKET_MS)).toBe(7);
  });
});
