import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Analytics } from "./analytics.js";
import { IngestTransport } from "./transport.js";

/**
 * flushAfter as docs/contract.md §11.2 words it: the interval since the last flush, not since the first
 * queued call. A unit test of the timer logic: fake timers, and the transport's send replaced
 * by a recorder (requests stay unanswered; nothing here is about the wire).
 */
let sends: number[];
let clients: Analytics[];

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
  vi.setSystemTime(0);
  sends = [];
  clients = [];
  vi.spyOn(IngestTransport.prototype, "send").mockImplementation(() => {
    sends.push(Date.now());
    return { cancel: () => {} } as unknown as ReturnType<IngestTransport["send"]>;
  });
});
afterEach(async () => {
  for (const client of clients) void client.close(0);
  await vi.advanceTimersByTimeAsync(1);
  vi.useRealTimers();
  vi.restoreAllMocks();
});

function client(options: { flushAt: number; flushAfter: number }): Analytics {
  const analytics = new Analytics("wk_flush_timing_0001", { endpoint: "127.0.0.1:9", ...options });
  clients.push(analytics);
  return analytics;
}

describe("flushAfter", () => {
  it("counts from the last flush: a call made 3 s after a flush waits 2 s, not 5 s", async () => {
    const analytics = client({ flushAt: 100, flushAfter: 5_000 });
    analytics.track({ userId: "u1", event: "First" });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sends).toEqual([5_000]);

    await vi.advanceTimersByTimeAsync(3_000);
    analytics.track({ userId: "u1", event: "Second" });
    await vi.advanceTimersByTimeAsync(1_999);
    expect(sends).toEqual([5_000]);
    await vi.advanceTimersByTimeAsync(1);
    expect(sends).toEqual([5_000, 10_000]);
  });

  it("counts from a flush that flushAt caused too", async () => {
    const analytics = client({ flushAt: 2, flushAfter: 5_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    analytics.track({ userId: "u1", event: "A" });
    analytics.track({ userId: "u1", event: "B" });
    expect(sends).toEqual([1_000]);
    await vi.advanceTimersByTimeAsync(1_000);
    analytics.track({ userId: "u1", event: "C" });
    await vi.advanceTimersByTimeAsync(3_999);
    expect(sends).toEqual([1_000]);
    await vi.advanceTimersByTimeAsync(1);
    expect(sends).toEqual([1_000, 6_000]);
  });

  it("after an idle spell, waits for the next interval (at most flushAfter), so calls still travel together", async () => {
    const analytics = client({ flushAt: 100, flushAfter: 5_000 });
    await vi.advanceTimersByTimeAsync(12_000);
    analytics.track({ userId: "u1", event: "A" });
    await vi.advanceTimersByTimeAsync(1_000);
    analytics.track({ userId: "u1", event: "B" });
    await vi.advanceTimersByTimeAsync(2_000);
    expect(sends).toEqual([15_000]);
  });
});
