import type { AnswerTime } from "./answer-time.js";
import type { Clock } from "./clock.js";
import type { ConcurrencyLimit } from "./concurrency-limit.js";

/** No slot freed for this many usual answer times: stuck, not slow (a fixed time is too long for fast receivers or too short for slow ones). */
const STALL_LATENCY_MULTIPLE = 4;
/** A stall check that runs this much later than asked saw this process held up, not the receiver: it looks again. */
const LATE_TIMER_MS = 200;
/** The look after a late check comes this fraction of the stall time later: once the process has caught up, yet soon. */
const LATE_RECHECK_FRACTION = 1 / 4;
/** The soonest a stall check runs, so that checks already due do not follow one another in a tight loop. */
const MIN_CHECK_DELAY_MS = 10;

export interface StallOptions {
  /**
   * First attempts wait for a slot only while the destination makes progress: once every slot has
   * been taken for a while without one being freed, the waiting first attempts (and new ones) go to
   * the retry path instead, without counting as failures. "A while" is several times the
   * destination's usual answer time (STALL_LATENCY_MULTIPLE), between `minStallMs` and `stallMs`;
   * `minStallMs` until it has answered at all. Unset: they wait as long as it takes.
   */
  stallMs?: number;
  /** The shortest wait before a stall is called; default `stallMs`. */
  minStallMs?: number;
}

/**
 * Whether a destination has stopped freeing slots. One that stops answering takes a whole request
 * timeout to count as failing; until then its first attempts would hold their batches (and with
 * them every other destination of those batches). A stall is called only by a check on the clock's
 * timer, set while first attempts wait, and only when it can trust what it sees: it looks after the
 * turn's I/O (answers that came in while it was due count as progress), and a check that ran late
 * means this process, not the receiver, was held up (a long pause, a starved CPU), so it looks
 * again a little later. Any slot taken or freed clears a stall.
 */
export class StallDetector {
  private stalledFlag = false;
  private checkSet = false;

  constructor(
    private readonly options: StallOptions,
    private readonly slots: Pick<ConcurrencyLimit<unknown>, "waiting" | "lastActiveAt" | "noProgressFor">,
    private readonly answers: Pick<AnswerTime, "usualMs">,
    private readonly clock: Clock,
    /** Sends the waiting first attempts to the retry path, once a stall is called. */
    private readonly onStall: () => void,
  ) {}

  /** Every slot taken, and none freed for the stall time (as last checked). */
  get stalled(): boolean {
    return this.stalledFlag;
  }

  /** A slot was taken or freed. */
  progressed(): void {
    this.stalledFlag = false;
  }

  /**
   * Every slot taken, and none taken or freed for STALL_LATENCY_MULTIPLE usual answer times, and at
   * least `minMs` (`minMs` alone until the destination has answered): calls waiting for a slot here
   * are not moving. Unlike a stall, nothing is refused: a batch whose calls wait only at such
   * destinations gives up its batch slot (see FirstAttempts).
   */
  notMoving(minMs: number): boolean {
    const answerMs = this.answers.usualMs;
    return this.slots.noProgressFor(answerMs === undefined ? minMs : Math.max(minMs, STALL_LATENCY_MULTIPLE * answerMs));
  }

  /** While first attempts wait: sets a check for a stall, unless one is set or stalls are not called (no `stallMs`). */
  watch(minDelayMs = MIN_CHECK_DELAY_MS): void {
    if (this.options.stallMs === undefined || this.checkSet) return;
    const stallMs = this.stallAfterMs(this.options.stallMs);
    const delay = Math.max(minDelayMs, this.slots.lastActiveAt + stallMs - this.clock.now());
    this.checkSet = true;
    this.clock.after(delay, (lateMs) => {
      this.checkSet = false;
      if (this.slots.waiting === 0) return;
      if (!this.slots.noProgressFor(stallMs)) this.watch();
      else if (lateMs > LATE_TIMER_MS) this.watch(stallMs * LATE_RECHECK_FRACTION);
      else {
        this.stalledFlag = true;
        this.onStall();
      }
    });
  }

  /** How long without a freed slot counts as a stall now (see StallOptions.stallMs). */
  private stallAfterMs(maxMs: number): number {
    const minMs = Math.min(this.options.minStallMs ?? maxMs, maxMs);
    const answerMs = this.answers.usualMs;
    if (answerMs === undefined) return minMs;
    return Math.min(maxMs, Math.max(minMs, STALL_LATENCY_MULTIPLE * answerMs));
  }
}
