import { describe, expect, it } from "vitest";
import { TypicalAnswerTimes, type AnswerTimesOf } from "./peer-answer-times.js";

const NOW = 1_000_000;

/** A destination that usually answers in `answerMs`, was last busy `idleMs` ago and whose calls queued now wait `queuedMs`. */
function destination(answerMs: number | undefined, idleMs = 0, queuedMs = answerMs): AnswerTimesOf {
  return { usualAnswerMs: answerMs, lastActiveAt: NOW - idleMs, queuedWaitMs: () => queuedMs };
}

describe("TypicalAnswerTimes", () => {
  it("is the lower median of the answered destinations' answer times, so that of two a slow one is compared with the other", () => {
    expect(new TypicalAnswerTimes(() => [destination(undefined)]).typical(NOW)).toBeUndefined();
    expect(new TypicalAnswerTimes(() => [destination(120), destination(2), destination(undefined), destination(3)]).typical(NOW)).toEqual({
      answerMs: 3,
      activeQueuedWaitMs: 3,
    });
    expect(new TypicalAnswerTimes(() => [destination(120), destination(2)]).typical(NOW)?.answerMs).toBe(2);
  });

  it("takes the queued waits of the busy destinations only: a slot taken or freed within 100 ms", () => {
    const times = (idleMs: number) =>
      new TypicalAnswerTimes(() => [destination(2, idleMs, 50), destination(3, 0, 10), destination(4, 0, 20)]).typical(NOW);
    expect(times(99)).toEqual({ answerMs: 3, activeQueuedWaitMs: 20 });
    expect(times(100)).toEqual({ answerMs: 3, activeQueuedWaitMs: 10 });
    const idle = new TypicalAnswerTimes(() => [destination(2, 100), destination(20, 250)]).typical(NOW);
    expect(idle).toEqual({ answerMs: 2, activeQueuedWaitMs: undefined });
  });

  it("works them out again only once 100 ms have passed", () => {
    let answerMs = 10;
    const times = new TypicalAnswerTimes(() => [destination(answerMs)]);
    expect(times.typical(NOW)?.answerMs).toBe(10);
    answerMs = 50;
    expect(times.typical(NOW + 99)?.answerMs).toBe(10);
    expect(times.typical(NOW + 100)?.answerMs).toBe(50);
  });
});
