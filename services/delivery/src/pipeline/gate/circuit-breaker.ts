import type { AttemptOutcome } from "../../retries/retry-policy.js";

export interface BreakerOptions {
  /** Consecutive retryable failures (timeouts, 5xx, refused connections) that mark a destination failing. */
  failureThreshold: number;
  /** How long a failing destination gets no first attempts before one retry probes it again. */
  cooldownMs: number;
  /** Called when the destination turns failing (true) or healthy again (false): once per change, not per attempt. */
  onFailingChange?: (failing: boolean) => void;
}

/**
 * Whether a destination is failing: `failureThreshold` retryable failures in a row open it for a
 * cool-down, after which one attempt at a time (the probe) may try it; a delivery closes it.
 * Permanent failures (4xx, redirects, certificate errors) say nothing about its health.
 */
export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openUntil = 0;
  private probeInFlight = false;

  constructor(
    private readonly options: BreakerOptions,
    private readonly now: () => number,
  ) {}

  get failing(): boolean {
    return this.openUntil > 0;
  }

  /** A probe of the failing destination is in flight: nobody else gets in until it is answered or times out. */
  get probing(): boolean {
    return this.probeInFlight;
  }

  /** How long until a failing destination's cool-down is over (ms; zero or less once it is). */
  get coolDownLeftMs(): number {
    return this.openUntil - this.now();
  }

  /** For an attempt at a failing destination: true when it may go as the probe (it then is the probe). */
  tryProbe(): boolean {
    if (this.probeInFlight || this.now() < this.openUntil) return false;
    this.probeInFlight = true;
    return true;
  }

  /**
   * Learns how an attempt went ("unused": no request was made); the end of a probe lets the next one
   * go. True when this opened the breaker, for a new cool-down: the first attempts waiting for the
   * destination must go to the retry path.
   */
  record(outcome: AttemptOutcome | "unused", probe: boolean): boolean {
    if (probe) this.probeInFlight = false;
    if (outcome === "retryable") {
      this.consecutiveFailures++;
      if (this.consecutiveFailures >= this.options.failureThreshold) {
        if (!this.failing) this.options.onFailingChange?.(true);
        this.openUntil = this.now() + this.options.cooldownMs;
        return true;
      }
    } else if (outcome === "delivered") {
      const wasFailing = this.failing;
      this.consecutiveFailures = 0;
      this.openUntil = 0;
      if (wasFailing) this.options.onFailingChange?.(false);
    }
    return false;
  }
}
