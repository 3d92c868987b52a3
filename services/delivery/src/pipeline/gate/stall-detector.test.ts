import { ManualClock } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { AnswerTime } from "./answer-time.js";
import { ConcurrencyLimit } from "./concurrency-limit.js";
import { StallDetector, type StallOptions } from "./stall-detector.js";

/**
 * A destination of 2 slots, both taken now, watched for stalls: the limit its detector reads, the
 * receiver's answer times (usually `answerMs`, if given) and the clock the test moves.
 */
function watched(options: StallOptions, answerMs?: number) {
  const clock = new ManualClock();
  const answers = new AnswerTime();
  if (answerMs !== undefined) answers.learn(answerMs);
  const slots = new ConcurrencyLimit<string>(2, answers, clock.now);
  const stall = new StallDetector(options, slots, answers, clock, () => slots.shed());
  slots.take();
  slots.take();
  /** A first attempt queued for a slot, as the gate queues it: the detector watches while it waits. */
  const queue = () => {
    const state: { settled: boolean; value: string | undefined } = { settled: false, value: undefined };
    void slots.wait().then((value) => Object.assign(state, { settled: true, value }));
    stall.watch();
    return state;
  };
  /** A slot freed and handed to the next waiter, as the gate does it. */
  const progress = () => {
    slots.free();
    stall.progressed();
    slots.wake(() => "slot");
  };
  return { clock, slots, stall, queue, progress };
}

/** Lets every queued promise callback run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("StallDetector", () => {
  it("calls a stall once every slot has been taken and none freed for stallMs, and sends the waiters away", async () => {
    const { clock, stall, queue } = watched({ stallMs: 50 });
    const waiter = queue();
    clock.advance(49);
    await flush();
    expect(stall.stalled).toBe(false);
    expect(waiter.settled).toBe(false);

    clock.advance(1);
    await flush();
    expect(stall.stalled).toBe(true);
    expect(waiter).toEqual({ settled: true, value: undefined });
    // Any slot taken or freed clears it.
    stall.progressed();
    expect(stall.stalled).toBe(false);
  });

  it("does not call a stall from a check that ran late (this process was held up), and looks again a quarter of stallMs later", async () => {
    const { clock, stall, queue } = watched({ stallMs: 800 });
    const waiter = queue();
    clock.jump(1_001); // the check runs 201 ms late
    await flush();
    expect(stall.stalled).toBe(false);
    expect(waiter.settled).toBe(false);

    clock.advance(199);
    expect(stall.stalled).toBe(false);
    clock.advance(1); // on time now, and still stuck: now it counts
    await flush();
    expect(stall.stalled).toBe(true);
    expect(waiter.settled).toBe(true);

    // 200 ms late is not late yet.
    const { clock: other, stall: onTime, queue: queueOther } = watched({ stallMs: 800 });
    queueOther();
    other.jump(1_000);
    expect(onTime.stalled).toBe(true);
  });

  it("is not stalled while slots are freed, and counts the stall time again from the last freed one", async () => {
    const { clock, stall, queue, progress } = watched({ stallMs: 50 });
    const first = queue();
    const second = queue();
    clock.advance(40);
    progress(); // the first waiter gets this slot
    clock.advance(49);
    await flush();
    expect(first).toEqual({ settled: true, value: "slot" });
    expect(stall.stalled).toBe(false);
    expect(second.settled).toBe(false);

    clock.advance(1); // 50 ms since that slot was freed
    await flush();
    expect(stall.stalled).toBe(true);
    expect(second).toEqual({ settled: true, value: undefined });
  });

  it("waits 4 usual answer times for a stall, at least minStallMs and at most stallMs; minStallMs before any answer", () => {
    const after = (answerMs: number | undefined): number => {
      const { clock, stall, queue } = watched({ minStallMs: 50, stallMs: 1_000 }, answerMs);
      queue();
      let waited = 0;
      while (!stall.stalled && waited < 2_000) {
        clock.advance(1);
        waited++;
      }
      return waited;
    };
    expect(after(undefined)).toBe(50);
    expect(after(20)).toBe(80);
    expect(after(5)).toBe(50);
    expect(after(400)).toBe(1_000);
  });

  it("sets no check and calls no stall when stallMs is not set", () => {
    const { clock, stall, queue } = watched({});
    const waiter = queue();
    expect(clock.pending).toBe(0);
    clock.advance(60_000);
    expect(stall.stalled).toBe(false);
    expect(waiter.settled).toBe(false);
  });

  it("lets a check find nothing to do once nobody waits", async () => {
    const { clock, stall, queue, progress } = watched({ stallMs: 50 });
    const waiter = queue();
    progress();
    clock.advance(1_000);
    await flush();
    expect(waiter).toEqual({ settled: true, value: "slot" });
    expect(stall.stalled).toBe(false);
    expect(clock.pending).toBe(0);
  });
});

describe("StallDetector: not moving (a batch may give up its slot)", () => {
  it("is not moving once every slot has been taken and none freed for the minimum, before any answer", () => {
    const clock = new ManualClock();
    const answers = new AnswerTime();
    const slots = new ConcurrencyLimit<string>(2, answers, clock.now);
    const stall = new StallDetector({}, slots, answers, clock, () => undefined);
    slots.take();
    expect(stall.notMoving(25)).toBe(false); // a slot is free
    slots.take();
    clock.advance(24);
    expect(stall.notMoving(25)).toBe(false);
    clock.advance(1);
    expect(stall.notMoving(25)).toBe(true);
  });

  it("waits 4 usual answer times when that is longer, and any freed slot counts as moving", () => {
    const { clock, slots, stall } = watched({}, 100);
    clock.advance(399);
    expect(stall.notMoving(25)).toBe(false);
    clock.advance(1);
    expect(stall.notMoving(25)).toBe(true);
    slots.free();
    slots.take();
    expect(stall.notMoving(25)).toBe(false);
  });
});
