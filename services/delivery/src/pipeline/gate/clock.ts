/** Where a gate reads the time and sets its stall checks: the system's in service, a manual one in tests. */
export interface Clock {
  /** The time now, in ms. */
  now(): number;
  /**
   * Calls `fn` once `ms` have passed, after that turn of the event loop's I/O (so answers that came
   * in meanwhile are seen first), with how much later than asked it runs. Never keeps the process alive.
   */
  after(ms: number, fn: (lateMs: number) => void): void;
}

export const systemClock: Clock = {
  now: Date.now,
  after(ms, fn) {
    // Lateness on the monotonic clock: the wall clock may be set back or forth meanwhile.
    const due = performance.now() + ms;
    setTimeout(() => {
      const lateMs = performance.now() - due;
      setImmediate(() => fn(lateMs));
    }, ms).unref();
  },
};
