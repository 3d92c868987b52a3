import { ManualClock } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { ConcurrencyLimit } from "./concurrency-limit.js";

/** A limit of `concurrency` whose receiver has answered (`answered.usualMs` set) or not yet. */
function limitOf(concurrency: number, answeredMs?: number) {
  const clock = new ManualClock();
  const answers = { usualMs: answeredMs };
  return { limit: new ConcurrencyLimit<string>(concurrency, answers, clock.now), answers, clock };
}

/** Follows a promise so a test can ask whether (and with what) it has resolved. */
function track<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

/** Lets every queued promise callback run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("ConcurrencyLimit", () => {
  it("has `concurrency` slots; a waiter gets one only when a freed slot is handed over", async () => {
    const { limit } = limitOf(2, 5);
    limit.take();
    expect(limit.hasFreeSlot).toBe(true);
    limit.take();
    expect(limit.hasFreeSlot).toBe(false);
    const waiter = track(limit.wait());
    expect(limit.waiting).toBe(1);

    limit.free();
    await flush();
    expect(waiter.settled).toBe(false);
    limit.wake((takenAt) => `slot at ${takenAt}`);
    await flush();
    expect(waiter).toEqual({ settled: true, value: "slot at 1000000" });
    expect(limit.waiting).toBe(0);
    expect(limit.hasFreeSlot).toBe(false);
  });

  it("allows 4 until the receiver has answered, then `concurrency`, waking that many waiters at once", async () => {
    const { limit, answers } = limitOf(32);
    for (let i = 0; i < 4; i++) limit.take();
    expect(limit.limit).toBe(4);
    expect(limit.hasFreeSlot).toBe(false);
    const waiting = Array.from({ length: 30 }, () => track(limit.wait()));

    answers.usualMs = 5;
    limit.wake(() => "slot");
    await flush();
    expect(waiting.filter((state) => state.settled)).toHaveLength(28);
    expect(limit.waiting).toBe(2);
    expect(limit.hasFreeSlot).toBe(false);
    // A `concurrency` under 4 holds from the start.
    expect(limitOf(2).limit.limit).toBe(2);
  });

  it("hands slots to waiters first come, first served", async () => {
    const { limit } = limitOf(1, 5);
    limit.take();
    const order: string[] = [];
    for (const name of ["a", "b", "c"]) void limit.wait().then((grant) => order.push(`${name}:${grant}`));
    for (const round of [1, 2, 3]) {
      limit.free();
      limit.wake(() => String(round));
      await flush();
    }
    expect(order).toEqual(["a:1", "b:2", "c:3"]);
  });

  it("sends every waiter away without a slot when shed", async () => {
    const { limit } = limitOf(1, 5);
    limit.take();
    const waiters = [track(limit.wait()), track(limit.wait())];
    limit.shed();
    await flush();
    expect(waiters).toEqual([
      { settled: true, value: undefined },
      { settled: true, value: undefined },
    ]);
    expect(limit.waiting).toBe(0);
  });

  it("makes no progress once every slot is taken and none taken or freed for the time asked", () => {
    const { limit, clock } = limitOf(2, 5);
    limit.take();
    clock.advance(100);
    expect(limit.noProgressFor(50)).toBe(false); // a slot is free
    limit.take();
    expect(limit.lastActiveAt).toBe(clock.now());
    clock.advance(49);
    expect(limit.noProgressFor(50)).toBe(false);
    clock.advance(1);
    expect(limit.noProgressFor(50)).toBe(true);
    // Freeing a slot and taking it again is progress.
    limit.free();
    limit.take();
    expect(limit.noProgressFor(50)).toBe(false);
  });
});
