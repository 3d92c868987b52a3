interface Timer {
  at: number;
  fn: (lateMs: number) => void;
}

/**
 * A clock and its timers, moved by the test: time passes only when the test says so, so code that
 * takes them injected (`now()`, and `after(ms, fn)`, which calls `fn` with how much later than asked
 * it runs) is tested without waiting on the wall clock.
 */
export class ManualClock {
  private nowMs: number;
  private readonly timers: Timer[] = [];

  constructor(startMs = 1_000_000) {
    this.nowMs = startMs;
  }

  /** The time now, in ms (a bound function, so it can be handed on as a `() => number`). */
  readonly now = (): number => this.nowMs;

  /** Calls `fn` once time has been moved `ms` on. */
  after(ms: number, fn: (lateMs: number) => void): void {
    this.timers.push({ at: this.nowMs + ms, fn });
  }

  /** Timers set and not yet run. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time on by `ms`, running every timer due on the way at its own time, on time: those they set too. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new Error(`advance: ms must be a number of 0 or more, got ${ms}`);
    const end = this.nowMs + ms;
    for (let timer = this.nextDue(end); timer; timer = this.nextDue(end)) {
      this.nowMs = Math.max(this.nowMs, timer.at);
      timer.fn(this.nowMs - timer.at);
    }
    this.nowMs = end;
  }

  /**
   * Moves time on by `ms` at once, as when the event loop was held up, then runs the timers that came
   * due, each as late as that makes it.
   */
  jump(ms: number): void {
    if (!(ms >= 0)) throw new Error(`jump: ms must be a number of 0 or more, got ${ms}`);
    this.nowMs += ms;
    this.advance(0);
  }

  /** Takes the earliest timer due by `end` (the first set, of those due together). */
  private nextDue(end: number): Timer | undefined {
    let next: Timer | undefined;
    for (const timer of this.timers) if (timer.at <= end && (!next || timer.at < next.at)) next = timer;
    if (next) this.timers.splice(this.timers.indexOf(next), 1);
    return next;
  }
}
