/**
 * The shared send schedule of a rate-limited destination: pure rules, so they
 * can be tested without a bus. RateLimits keeps one schedule per destination
 * in a KV bucket and changes it only by compare-and-set, so every delivery
 * replica claims from the same timeline.
 *
 * Time is cut into request slots of 1000 / limit ms. A claim takes the next
 * free slots ([from, from + slots × interval)), and its requests start no
 * earlier than their slots, one slot apart: slots never overlap, so all
 * replicas together start at most `limit` requests in any second (plus one at
 * the window's edge). A claimed slot that is not used (its replica crashed,
 * its call was refused) simply passes: it is a time, not a token to give back.
 *
 * Calls that would wait longer than a claim may look ahead are not held in
 * memory: they take places in a waiting room (`queue`), one after the other,
 * go to the retry stream, and come back just before their place, when they
 * claim their slots like any retry ("a turn"). New first attempts line up
 * behind the waiting room, so calls go out roughly in the order they came.
 */
export interface SendSchedule {
  /** The limit (requests per second) the schedule was made for. */
  limit: number;
  /** Where the next free slot starts (ms since the epoch): earlier slots are taken or past. */
  next: number;
  /** The end of the waiting room (ms): where the next call held back gets its place. */
  queue: number;
  /** When a call last took a place or claimed its turn (ms): a waiting room nobody moved in for long is forgotten. */
  seen: number;
}

/**
 * A waiting room in which nobody took a place or claimed a turn for this long
 * no longer holds new calls back: its calls are gone (the retry stream was
 * purged) or late, and letting new calls wait behind places nobody uses would
 * leave the destination idle. Longer than the longest wait between two turns
 * (a turn spans at most 5 URLs at 1 request per second) plus the lead.
 */
export const QUEUE_IDLE_MS = 10_000;

/** Milliseconds between two requests at `limit` requests per second. */
export function slotMs(limit: number): number {
  return 1000 / limit;
}

/** The schedule as it applies to `limit`: one made for another limit keeps its taken slots but forgets its waiting room. */
function asFor(stored: SendSchedule | undefined, limit: number): SendSchedule {
  if (!stored) return { limit, next: 0, queue: 0, seen: 0 };
  if (stored.limit !== limit) return { limit, next: stored.next, queue: 0, seen: stored.seen };
  return stored;
}

/** Where the waiting room ends for calls joining it now (0: it is empty or forgotten). */
function queueEnd(schedule: SendSchedule, now: number): number {
  return now - schedule.seen > QUEUE_IDLE_MS ? 0 : schedule.queue;
}

export type SlotClaim =
  | { granted: true; from: number; schedule: SendSchedule }
  /** Booked further ahead than the claim may look: the first free slot is at `freeAt`. */
  | { granted: false; freeAt: number };

/**
 * Claims `slots` consecutive slots starting within `horizonMs` of `now`.
 * `turn`: the call has waited in the waiting room (or is a retry), so it does
 * not line up behind it; new first attempts do.
 */
export function claimSlots(
  stored: SendSchedule | undefined,
  request: { limit: number; slots: number; now: number; horizonMs: number; turn: boolean },
): SlotClaim {
  const { limit, slots, now, horizonMs, turn } = request;
  const schedule = asFor(stored, limit);
  const from = Math.max(now, schedule.next, turn ? 0 : queueEnd(schedule, now));
  if (from > now + horizonMs) return { granted: false, freeAt: from };
  return {
    granted: true,
    from,
    schedule: { ...schedule, next: from + slots * slotMs(limit), seen: turn ? now : schedule.seen },
  };
}

/**
 * Places in the waiting room for groups of calls needing `slots[i]` slots
 * each, one after the other at its end: when each group's turn comes.
 */
export function takePlaces(
  stored: SendSchedule | undefined,
  request: { limit: number; slots: readonly number[]; now: number },
): { places: number[]; schedule: SendSchedule } {
  const { limit, now } = request;
  const schedule = asFor(stored, limit);
  let at = Math.max(now, schedule.next, queueEnd(schedule, now));
  const places = request.slots.map((slots) => {
    const place = at;
    at += slots * slotMs(limit);
    return place;
  });
  return { places, schedule: { ...schedule, queue: at, seen: now } };
}

/** A schedule read back from its JSON; undefined when it is not one. */
export function parseSchedule(value: unknown): SendSchedule | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { limit, next, queue, seen } = value as Record<string, unknown>;
  const finite = (n: unknown): n is number => typeof n === "number" && Number.isFinite(n);
  if (!finite(limit) || !finite(next) || !finite(queue) || !finite(seen) || limit <= 0) return undefined;
  return { limit, next, queue, seen };
}
