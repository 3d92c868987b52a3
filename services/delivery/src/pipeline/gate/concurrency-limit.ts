import type { AnswerTime } from "./answer-time.js";

/** Requests in flight before a receiver's first answer: one that never answers costs a few connections, not `concurrency`. */
const UNANSWERED_CONCURRENCY = 4;

/**
 * Bounded requests in flight to one destination, and the queue of those waiting for a slot, first
 * come, first served. Until the receiver has answered at all, the bound is UNANSWERED_CONCURRENCY:
 * a healthy receiver answers its first request in milliseconds and gets the rest, while each
 * connection to one that never answers is paid for before its stall is called.
 */
export class ConcurrencyLimit<Grant> {
  private inFlight = 0;
  private lastActivityAt = 0;
  private readonly waiters: ((grant: Grant | undefined) => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly answers: Pick<AnswerTime, "usualMs">,
    private readonly now: () => number,
  ) {}

  /** Requests in flight at most now. */
  get limit(): number {
    return this.answers.usualMs === undefined ? Math.min(this.concurrency, UNANSWERED_CONCURRENCY) : this.concurrency;
  }

  get hasFreeSlot(): boolean {
    return this.inFlight < this.limit;
  }

  /** How many wait for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** When a slot was last taken or freed. */
  get lastActiveAt(): number {
    return this.lastActivityAt;
  }

  /** Takes a slot (the caller has seen one free); returns when. */
  take(): number {
    this.inFlight++;
    return (this.lastActivityAt = this.now());
  }

  /** Frees a slot; returns when. Free slots go to waiters only through `wake`. */
  free(): number {
    this.inFlight--;
    return (this.lastActivityAt = this.now());
  }

  /** Queues for a slot: resolves with what `wake` hands over once it has taken one, or undefined when sent away (`shed`). */
  wait(): Promise<Grant | undefined> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Takes the free slots for waiters in turn, handing each what `grant` makes of the time it was
   * taken: several at once when the first answer raised the limit.
   */
  wake(grant: (takenAt: number) => Grant): void {
    while (this.hasFreeSlot && this.waiters.length > 0) this.waiters.shift()!(grant(this.take()));
  }

  /** Sends every waiter away without a slot. */
  shed(): void {
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  /** Every slot taken, and none taken or freed for `ms`. */
  noProgressFor(ms: number): boolean {
    return this.inFlight >= this.limit && this.now() - this.lastActivityAt >= ms;
  }
}
