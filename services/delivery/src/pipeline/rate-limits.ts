import { setTimeout as sleep } from "node:timers/promises";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { claimSlots, parseSchedule, slotMs, takePlaces, type SendSchedule } from "./rate-schedule.js";

/**
 * How far ahead a first attempt may claim its slots: a call whose slot is at
 * most this far away waits for it in memory (its batch waits outside its batch
 * slot meanwhile); a later one goes to the waiting room on the retry stream.
 */
export const FIRST_ATTEMPT_HORIZON_MS = 1_000;
/**
 * How far ahead a call whose turn has come may claim: it comes back up to
 * TURN_LEAD_MS plus a second early (nak delays of a second or more fall on whole
 * seconds), and the turns of the groups before it may be claimed already.
 */
export const TURN_HORIZON_MS = 3_000;
/** A group of calls in the waiting room comes back this long before its place, so it is never late for it. */
export const TURN_LEAD_MS = 1_500;
/** The slots one group of the waiting room spans at most: it waits outside any slot while they pass. */
const TURN_SPAN_MS = 1_000;
/**
 * A first-attempt claim takes slots for the calls waiting in this process,
 * at least MIN_CHUNK_MS and at most MAX_CHUNK_MS worth: at high limits one
 * claim serves many calls (a claim is a round trip to the bus), and no
 * replica takes much more than it has calls for, so none hoards the budget.
 */
const MIN_CHUNK_MS = 10;
const MAX_CHUNK_MS = 200;
/**
 * A claim is decided for when its answer will be back (the usual write time
 * later, at most this much), so a slow bus does not hand out slots that have
 * begun by the time they arrive.
 */
const MAX_WRITE_LEAD_MS = 500;
/** Weight of the newest write time in the moving average. */
const WRITE_SMOOTHING = 0.2;
/** Compare-and-set attempts before a claim gives up (the batch is then handled again later). */
const MAX_CAS_ATTEMPTS = 50;
/** Slot times are fractions of a millisecond; sums of them may be off by this much. */
const EPSILON_MS = 1e-6;

/**
 * A request that cannot start within this long of its slot (this process was
 * held up: a long pause, a starved CPU) gives its slot up rather than go with
 * the next ones: late requests bunched together would exceed the limit in
 * the second they land in. Its call goes back to the retry stream and claims
 * new slots. (A call's further URLs go after the answer of the one before,
 * so only the first request of a round is held to this.)
 */
export const LATE_MS = 50;

/** Whether a round with this pace can no longer start on time (see LATE_MS). */
export function isLate(pace: Pace): boolean {
  return Date.now() > pace.at + LATE_MS;
}

/** How many calls of `urls` URLs each one group of the waiting room holds at most. */
export function callsPerTurn(limit: number, urls: number): number {
  return Math.max(1, Math.floor((limit * TURN_SPAN_MS) / 1000 / Math.max(1, urls)));
}

/** When the requests of a round may go: the first at `at`, each next one `intervalMs` later at the earliest. */
export interface Pace {
  at: number;
  intervalMs: number;
}

/** A claim for a call whose turn has come: its pace, or when the destination has a slot within TURN_HORIZON_MS again. */
export type Turn = { granted: true; pace: Pace } | { granted: false; freeAt: number };

/** Resolves at `at` (ms since the epoch), at once when it has passed. */
export async function waitUntil(at: number): Promise<void> {
  const ms = at - Date.now();
  if (ms > 0) await sleep(Math.ceil(ms));
}

interface Known {
  schedule: SendSchedule | undefined;
  /** 0: no record (create it). */
  revision: number;
}

/**
 * Per-destination rate limits, shared by every delivery replica through the
 * schedules in the KV bucket `<ns>_rate_limits` (see rate-schedule.ts).
 */
export class RateLimits {
  /** The last schedule this process wrote or read, by destination: a write usually needs no read first. */
  private readonly known = new Map<string, Known>();
  private readonly local = new Map<string, LocalSlots>();
  /** Per destination: until when (as last seen) turns are booked beyond TURN_HORIZON_MS. */
  private readonly turnsBooked = new Map<string, number>();
  /** Moving average of how long a write to the bucket takes (ms). */
  private writeMs = 0;

  constructor(private readonly kv: KV) {}

  /**
   * For a first attempt making `slots` requests: when the first may go (within
   * FIRST_ATTEMPT_HORIZON_MS), or undefined when the destination is booked
   * further ahead and the call should wait in the waiting room (takePlaces).
   */
  firstAttempt(destinationId: string, limit: number, slots: number): Promise<number | undefined> {
    let local = this.local.get(destinationId);
    if (!local) {
      local = new LocalSlots((k, lim) => this.claim(destinationId, lim, k, FIRST_ATTEMPT_HORIZON_MS, false));
      this.local.set(destinationId, local);
    }
    return local.take(limit, slots);
  }

  /** For calls whose turn has come (back from the waiting room, or a retry) making `slots` requests. */
  async turn(destinationId: string, limit: number, slots: number): Promise<Turn> {
    const bookedUntil = this.turnsBooked.get(destinationId) ?? 0;
    if (Date.now() < bookedUntil) return { granted: false, freeAt: bookedUntil + TURN_HORIZON_MS };
    const claim = await this.claim(destinationId, limit, slots, TURN_HORIZON_MS, true);
    if ("freeAt" in claim) {
      this.turnsBooked.set(destinationId, claim.freeAt - TURN_HORIZON_MS);
      return { granted: false, freeAt: claim.freeAt };
    }
    return { granted: true, pace: { at: claim.from, intervalMs: slotMs(limit) } };
  }

  /** Places in the waiting room for groups of calls making `slots[i]` requests each: when each group's turn comes. */
  places(destinationId: string, limit: number, slots: readonly number[]): Promise<number[]> {
    return this.change(destinationId, (stored, now) => {
      const { places, schedule } = takePlaces(stored, { limit, slots, now });
      return { write: schedule, result: places };
    });
  }

  private claim(destinationId: string, limit: number, slots: number, horizonMs: number, turn: boolean) {
    return this.change(destinationId, (stored, now): { write?: SendSchedule; result: { from: number } | { freeAt: number } } => {
      const claim = claimSlots(stored, { limit, slots, now, horizonMs, turn });
      return claim.granted ? { write: claim.schedule, result: { from: claim.from } } : { result: { freeAt: claim.freeAt } };
    });
  }

  /** Reads, decides, and writes by compare-and-set, again from a fresh read when another replica wrote first. */
  private async change<R>(
    destinationId: string,
    decide: (stored: SendSchedule | undefined, now: number) => { write?: SendSchedule; result: R },
  ) {
    for (let attempt = 1; ; attempt++) {
      const known = this.known.get(destinationId) ?? (await this.read(destinationId));
      // Decided for when the answer will be here: slots claimed from "now" would have begun by then.
      const { write, result } = decide(known.schedule, Date.now() + Math.min(this.writeMs, MAX_WRITE_LEAD_MS));
      if (!write) return result;
      const value = JSON.stringify(write);
      try {
        const startedAt = Date.now();
        const revision =
          known.revision === 0 ? await this.kv.create(destinationId, value) : await this.kv.update(destinationId, value, known.revision);
        this.writeMs += WRITE_SMOOTHING * (Date.now() - startedAt - this.writeMs);
        this.known.set(destinationId, { schedule: write, revision });
        return result;
      } catch (error) {
        this.known.delete(destinationId);
        if (!isConflict(error) || attempt >= MAX_CAS_ATTEMPTS) throw error;
      }
    }
  }

  private async read(destinationId: string): Promise<Known> {
    const entry = await this.kv.get(destinationId);
    if (!entry || entry.operation !== "PUT") return { schedule: undefined, revision: 0 };
    let value: unknown;
    try {
      value = entry.json();
    } catch {
      value = undefined; // overwritten by the next claim
    }
    return { schedule: parseSchedule(value), revision: entry.revision };
  }
}

/** Another writer came first (the record changed, or was created, since it was read). */
function isConflict(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

interface Waiter {
  slots: number;
  resolve: (at: number | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * One process's slots for the first attempts to one destination: the rest of
 * its last claim, handed out in order, and one claim at a time for the calls
 * waiting (sized to them, see MIN_CHUNK_MS).
 */
class LocalSlots {
  /** The claimed slots not handed out yet: [from, to). */
  private from = 0;
  private to = 0;
  private limit = 1;
  private readonly waiting: Waiter[] = [];
  private claiming = false;
  /** Until when (as last seen) the destination is booked beyond FIRST_ATTEMPT_HORIZON_MS: no claim is tried before. */
  private bookedUntil = 0;

  constructor(private readonly claim: (slots: number, limit: number) => Promise<{ from: number } | { freeAt: number }>) {}

  take(limit: number, slots: number): Promise<number | undefined> {
    this.limit = limit;
    if (this.waiting.length === 0) {
      const at = this.fromClaimed(slots, Date.now());
      if (at !== undefined) return Promise.resolve(at);
    }
    if (Date.now() < this.bookedUntil) return Promise.resolve(undefined);
    const taken = new Promise<number | undefined>((resolve, reject) => this.waiting.push({ slots, resolve, reject }));
    if (!this.claiming) {
      this.claiming = true;
      // After the current turn, so one claim covers every call of the batch being handled.
      queueMicrotask(() => void this.claimForWaiting());
    }
    return taken;
  }

  /**
   * The start of `slots` slots from what is claimed already, or undefined when
   * they do not fit. Slots that began up to LATE_MS ago still serve (the
   * request goes at once, as late as a request may be): a claim's own round
   * trip makes its first slots a moment old.
   */
  private fromClaimed(slots: number, now: number): number | undefined {
    const start = Math.max(this.from, now - LATE_MS);
    const end = start + slots * slotMs(this.limit);
    if (end > this.to + EPSILON_MS) return undefined;
    this.from = end;
    return start;
  }

  /** Hands out claimed slots to the calls waiting, in order, as far as they go; true when any call got some. */
  private serveWaiting(): boolean {
    let served = false;
    while (this.waiting.length > 0) {
      const at = this.fromClaimed(this.waiting[0]!.slots, Date.now());
      if (at === undefined) break;
      this.waiting.shift()!.resolve(at);
      served = true;
    }
    return served;
  }

  private async claimForWaiting(): Promise<void> {
    try {
      this.serveWaiting();
      while (this.waiting.length > 0) {
        const limit = this.limit;
        const demand = this.waiting.reduce((sum, waiter) => sum + waiter.slots, 0);
        const min = Math.ceil((limit * MIN_CHUNK_MS) / 1000);
        const max = Math.max(min, Math.ceil((limit * MAX_CHUNK_MS) / 1000));
        const slots = Math.max(this.waiting[0]!.slots, Math.min(Math.max(demand, min), max));
        const claimed = await this.claim(slots, limit);
        if ("freeAt" in claimed) {
          this.bookedUntil = claimed.freeAt - FIRST_ATTEMPT_HORIZON_MS;
          for (const waiter of this.waiting.splice(0)) waiter.resolve(undefined);
          return;
        }
        const end = claimed.from + slots * slotMs(limit);
        // Right after what is left of the previous claim: keep that rest too.
        if (Math.abs(claimed.from - this.to) > EPSILON_MS || this.from >= this.to) this.from = claimed.from;
        this.to = end;
        if (!this.serveWaiting()) {
          // The claim came back after its slots had passed (this process or the bus is held up):
          // claiming again would only do the same, so the calls wait in the waiting room instead.
          for (const waiter of this.waiting.splice(0)) waiter.resolve(undefined);
          return;
        }
      }
    } catch (error) {
      for (const waiter of this.waiting.splice(0)) waiter.reject(error);
    } finally {
      this.claiming = false;
    }
  }
}
