/** Weight of the newest answer in the usual answer time: it follows a receiver that changes, and one odd answer does not swing it. */
const LATENCY_SMOOTHING = 0.1;

/** How long a receiver usually takes to answer: a moving average of its answer times. */
export class AnswerTime {
  private averageMs: number | undefined;

  /** In ms; undefined until the receiver has answered. */
  get usualMs(): number | undefined {
    return this.averageMs;
  }

  learn(ms: number): void {
    this.averageMs = this.averageMs === undefined ? ms : this.averageMs + LATENCY_SMOOTHING * (ms - this.averageMs);
  }
}
