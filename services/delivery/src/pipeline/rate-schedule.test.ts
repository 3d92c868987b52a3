import { describe, expect, it } from "vitest";
import { claimSlots, parseSchedule, QUEUE_IDLE_MS, takePlaces, type SendSchedule } from "./rate-schedule.js";

const now = 1_700_000_000_000;
const limit = 50; // a slot every 20 ms

describe("claimSlots", () => {
  it("starts a fresh schedule now and moves the next free slot past the claimed ones", () => {
    const claim = claimSlots(undefined, { limit, slots: 5, now, horizonMs: 1_000, turn: false });
    expect(claim).toEqual({ granted: true, from: now, schedule: { limit, next: now + 100, queue: 0, seen: 0 } });
  });

  it("gives consecutive claims consecutive slots, never overlapping", () => {
    let schedule: SendSchedule | undefined;
    const intervals: [number, number][] = [];
    for (let i = 0; i < 20; i++) {
      const claim = claimSlots(schedule, { limit, slots: 3, now: now + i, horizonMs: 10_000, turn: i % 2 === 0 });
      if (!claim.granted) throw new Error("expected a grant");
      intervals.push([claim.from, claim.schedule.next]);
      schedule = claim.schedule;
    }
    for (let i = 1; i < intervals.length; i++) expect(intervals[i]![0]).toBe(intervals[i - 1]![1]);
    expect(intervals.at(-1)![1] - intervals[0]![0]).toBe(20 * 3 * 20);
  });

  it("does not reuse past slots nobody used: a claim starts no earlier than now", () => {
    const stored = { limit, next: now - 5_000, queue: 0, seen: 0 };
    expect(claimSlots(stored, { limit, slots: 1, now, horizonMs: 1_000, turn: false })).toMatchObject({ from: now });
  });

  it("refuses a claim whose first slot is beyond the horizon, saying when the destination is free", () => {
    const stored = { limit, next: now + 1_500, queue: 0, seen: 0 };
    expect(claimSlots(stored, { limit, slots: 1, now, horizonMs: 1_000, turn: false })).toEqual({ granted: false, freeAt: now + 1_500 });
    expect(claimSlots(stored, { limit, slots: 1, now, horizonMs: 3_000, turn: true })).toMatchObject({ granted: true, from: now + 1_500 });
  });

  it("lines new first attempts up behind the waiting room, but not calls whose turn has come", () => {
    const stored = { limit, next: now + 200, queue: now + 60_000, seen: now - 1_000 };
    expect(claimSlots(stored, { limit, slots: 1, now, horizonMs: 1_000, turn: false })).toEqual({ granted: false, freeAt: now + 60_000 });
    const turn = claimSlots(stored, { limit, slots: 2, now, horizonMs: 3_000, turn: true });
    expect(turn).toEqual({ granted: true, from: now + 200, schedule: { limit, next: now + 240, queue: now + 60_000, seen: now } });
  });

  it("forgets a waiting room nobody moved in for QUEUE_IDLE_MS (its calls were removed)", () => {
    const stored = { limit, next: now - 1, queue: now + 60_000, seen: now - QUEUE_IDLE_MS - 1 };
    expect(claimSlots(stored, { limit, slots: 1, now, horizonMs: 1_000, turn: false })).toMatchObject({ granted: true, from: now });
  });

  it("keeps the taken slots but forgets the waiting room when the limit changed", () => {
    const stored = { limit: 10, next: now + 500, queue: now + 60_000, seen: now };
    const claim = claimSlots(stored, { limit: 100, slots: 10, now, horizonMs: 1_000, turn: false });
    expect(claim).toEqual({ granted: true, from: now + 500, schedule: { limit: 100, next: now + 600, queue: 0, seen: now } });
  });
});

describe("takePlaces", () => {
  it("gives groups consecutive places at the end of the waiting room, after the slots already taken", () => {
    const stored = { limit, next: now + 1_000, queue: 0, seen: 0 };
    const { places, schedule } = takePlaces(stored, { limit, slots: [50, 50, 10], now });
    expect(places).toEqual([now + 1_000, now + 2_000, now + 3_000]);
    expect(schedule).toEqual({ limit, next: now + 1_000, queue: now + 3_200, seen: now });
    const more = takePlaces(schedule, { limit, slots: [1], now: now + 10 });
    expect(more.places).toEqual([now + 3_200]);
  });

  it("starts no earlier than now", () => {
    expect(takePlaces(undefined, { limit, slots: [1], now }).places).toEqual([now]);
  });
});

describe("parseSchedule", () => {
  it("reads what the claims write and refuses anything else", () => {
    const schedule = { limit, next: now, queue: now + 1.5, seen: now };
    expect(parseSchedule(JSON.parse(JSON.stringify(schedule)))).toEqual(schedule);
    expect(parseSchedule({ ...schedule, limit: 0 })).toBeUndefined();
    expect(parseSchedule({ next: now })).toBeUndefined();
    expect(parseSchedule("x")).toBeUndefined();
    expect(parseSchedule(null)).toBeUndefined();
  });
});
