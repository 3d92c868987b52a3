import type { AttemptOutcome } from "./retry-policy.js";

export interface GateOptions {
  /** Requests in flight to one destination at most. */
  concurrency: number;
  /** Consecutive retryable failures (timeouts, 5xx, refused connections) that mark a destination failing. */
  failureThreshold: number;
  /** How long a failing destination gets no first attempts before one retry probes it again. */
  cooldownMs: number;
}

/** Frees the slot and reports how the delivery went. */
export type Release = (outcome: AttemptOutcome) => void;

/**
 * Isolation for one destination: bounded concurrency plus a circuit breaker.
 * While a destination is failing, first attempts skip it (its calls go to the
 * retry path at once) so healthy destinations never wait on its timeouts;
 * after the cool-down, a single retry probes it.
 */
export class DestinationGate {
  private inFlight = 0;
  private consecutiveFailures = 0;
  private openUntil = 0;
  private probing = false;
  private readonly waiters: ((release: Release | undefined) => void)[] = [];

  constructor(
    private readonly options: GateOptions,
    private readonly now: () => number = Date.now,
  ) {}

  get failing(): boolean {
    return this.openUntil > 0;
  }

  /**
   * For first attempts: waits for a slot while the destination is healthy;
   * resolves undefined (send it to the retry path) when it is failing or starts failing.
   */
  acquire(): Promise<Release | undefined> {
    if (this.failing) return Promise.resolve(undefined);
    if (this.inFlight < this.options.concurrency) return Promise.resolve(this.take(false));
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** For retries: a slot now, a probe slot once a failing destination's cool-down is over, or undefined (try later). */
  tryAcquire(): Release | undefined {
    if (this.failing) {
      if (this.probing || this.now() < this.openUntil) return undefined;
      this.probing = true;
      return this.take(true);
    }
    return this.inFlight < this.options.concurrency ? this.take(false) : undefined;
  }

  /** How long a retry that found no slot should wait before asking again. */
  retryLaterMs(): number {
    return this.failing ? Math.max(this.openUntil - this.now(), 100) : 100;
  }

  private take(probe: boolean): Release {
    this.inFlight++;
    let released = false;
    return (outcome) => {
      if (released) return;
      released = true;
      this.inFlight--;
      if (probe) this.probing = false;
      this.record(outcome);
      this.wakeNext();
    };
  }

  private record(outcome: AttemptOutcome): void {
    if (outcome === "retryable") {
      this.consecutiveFailures++;
      if (this.consecutiveFailures >= this.options.failureThreshold) this.open();
    } else if (outcome === "delivered") {
      this.consecutiveFailures = 0;
      this.openUntil = 0;
    }
  }

  private open(): void {
    this.openUntil = this.now() + this.options.cooldownMs;
    // Everyone waiting for a first attempt goes to the retry path instead.
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  private wakeNext(): void {
    if (this.failing || this.inFlight >= this.options.concurrency) return;
    const next = this.waiters.shift();
    if (next) next(this.take(false));
  }
}

/** One gate per destination, made on first use. */
export class DestinationGates {
  private readonly gates = new Map<string, DestinationGate>();

  constructor(private readonly options: GateOptions) {}

  for(destinationId: string): DestinationGate {
    let gate = this.gates.get(destinationId);
    if (!gate) {
      gate = new DestinationGate(this.options);
      this.gates.set(destinationId, gate);
    }
    return gate;
  }
}
