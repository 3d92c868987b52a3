import { describe, expect, it } from "vitest";
import { Backlog } from "./backlog.js";
import type { Typical } from "./peer-answer-times.js";

/**
 * The backlog of a receiver that usually answers in `answerMs`, with 2 slots, `waiting` calls queued
 * for them and first attempts queueing 1 s at most; `peers`: what the other destinations typically take.
 */
function backlog(answerMs: number | undefined, waiting: number, peers?: Typical) {
  const asked: number[] = [];
  const peerTimes = peers && { typical: (nowMs: number) => (asked.push(nowMs), peers) };
  return { backlog: new Backlog({ waiting, limit: 2 }, { usualMs: answerMs }, 1_000, peerTimes, () => 42), asked };
}

/** Other destinations that answer in 2 ms and whose calls, when busy, are answered in 3 ms. */
const HEALTHY_PEERS: Typical = { answerMs: 2, activeQueuedWaitMs: 3 };

describe("Backlog: a slow receiver", () => {
  it("is behind while calls wait for a receiver that takes 250 ms or more an answer, not before it has answered", () => {
    expect(backlog(undefined, 1).backlog.behind()).toBe(false);
    expect(backlog(250, 0).backlog.behind()).toBe(false); // nothing waits
    expect(backlog(250, 1).backlog.behind()).toBe(true);
    expect(backlog(249, 50).backlog.behind()).toBe(false);
  });

  it("is too far behind once a first attempt would wait longer than the longest wait", () => {
    // 500 ms an answer over 2 slots: the 4th waiting call would wait 1,000 ms, the 5th longer.
    expect(backlog(500, 3).backlog.tooFarBehind()).toBe(false);
    expect(backlog(500, 4).backlog.tooFarBehind()).toBe(true);
    // A fast receiver's calls may wait any number: they are a busy moment's batches.
    expect(backlog(200, 500).backlog.tooFarBehind()).toBe(false);
    expect(backlog(undefined, 500).backlog.tooFarBehind()).toBe(false);
  });

  it("is behind at 100 ms or more an answer when that is five times what the others usually take", () => {
    expect(backlog(120, 1, HEALTHY_PEERS).backlog.behind()).toBe(true);
    expect(backlog(99, 1, { answerMs: 2, activeQueuedWaitMs: 99 }).backlog.behind()).toBe(false);
    expect(backlog(149, 1, { answerMs: 30, activeQueuedWaitMs: undefined }).backlog.behind()).toBe(false);
    expect(backlog(150, 1, { answerMs: 30, activeQueuedWaitMs: undefined }).backlog.behind()).toBe(true);
    // Alone it has nothing to be compared with: only 250 ms or more makes it slow.
    expect(backlog(200, 1).backlog.behind()).toBe(false);
  });

  it("is too far behind at such a receiver once a first attempt would wait longer than the longest wait", () => {
    // 125 ms an answer over 2 slots: the 16th waiting call would wait 1,000 ms, the 17th longer.
    expect(backlog(125, 15, HEALTHY_PEERS).backlog.tooFarBehind()).toBe(false);
    expect(backlog(125, 16, HEALTHY_PEERS).backlog.tooFarBehind()).toBe(true);
  });

  it("asks the other destinations at its clock's time", () => {
    const { backlog: slow, asked } = backlog(120, 1, HEALTHY_PEERS);
    slow.behind();
    expect(asked).toEqual([42]);
  });
});

describe("Backlog: a longer queue than the other destinations'", () => {
  it("is a call's turn for a slot plus an answer, once the receiver has answered", () => {
    expect(backlog(undefined, 10).backlog.queuedWaitMs()).toBeUndefined();
    expect(backlog(20, 10).backlog.queuedWaitMs()).toBe(120);
  });

  it("is behind when its calls wait 100 ms or more and five times as long as the busy others', however fast it answers", () => {
    // 20 ms an answer, 2 slots: with 10 calls waiting, a call queued now is answered in 120 ms; 8: 100; 7: 90.
    expect(backlog(20, 10, HEALTHY_PEERS).backlog.behind()).toBe(true);
    expect(backlog(20, 8, HEALTHY_PEERS).backlog.behind()).toBe(true);
    expect(backlog(20, 7, HEALTHY_PEERS).backlog.behind()).toBe(false);
    // Only five times the others' wait.
    expect(backlog(20, 10, { answerMs: 20, activeQueuedWaitMs: 25 }).backlog.behind()).toBe(false);
    // None of the others busy: nothing to compare with.
    expect(backlog(20, 10, { answerMs: 2, activeQueuedWaitMs: undefined }).backlog.behind()).toBe(false);
  });

  it("is too far behind once a first attempt's turn for a slot would come after the longest wait", () => {
    // 20 ms an answer over 2 slots: the 100th waiting call waits 1,000 ms for its slot, the 101st longer.
    expect(backlog(20, 99, HEALTHY_PEERS).backlog.tooFarBehind()).toBe(false);
    expect(backlog(20, 100, HEALTHY_PEERS).backlog.tooFarBehind()).toBe(true);
    // As long a queue as the others': this process is the bottleneck, and the queue is what paces it.
    expect(backlog(20, 100, { answerMs: 20, activeQueuedWaitMs: 800 }).backlog.tooFarBehind()).toBe(false);
  });
});
