import type { AttemptOutcome } from "../retries/retry-policy.js";
import { AnswerTime } from "./gate/answer-time.js";
import { Backlog } from "./gate/backlog.js";
import { CircuitBreaker, type BreakerOptions } from "./gate/circuit-breaker.js";
import { systemClock, type Clock } from "./gate/clock.js";
import { ConcurrencyLimit } from "./gate/concurrency-limit.js";
import { TypicalAnswerTimes, type PeerAnswerTimes } from "./gate/peer-answer-times.js";
import { StallDetector, type StallOptions } from "./gate/stall-detector.js";

/**
 * `stallMs` also bounds how long a first attempt queues at a receiver that is behind its calls:
 * one that would wait longer goes to the retry path (see Backlog).
 */
export interface GateOptions extends BreakerOptions, StallOptions {
  /** Requests in flight to one destination at most. */
  concurrency: number;
}

/** How soon a retry that found a healthy destination's slots all taken asks again: its next answer frees one. */
const RETRY_POLL_MS = 100;

/** Frees the slot and reports how the delivery went; "unused": no request was made, so there is nothing to learn. */
export type Release = (outcome: AttemptOutcome | "unused") => void;

/**
 * Isolation for one destination: bounded concurrency (ConcurrencyLimit), a circuit breaker
 * (CircuitBreaker), stall detection (StallDetector) and a check for a receiver behind its calls
 * (Backlog), all learning from its answer times (AnswerTime). While a destination is failing,
 * first attempts skip it (its calls go to the retry path at once), and while it is stalled or too
 * far behind, so do those that find no free slot: healthy destinations never wait on it. After the
 * cool-down, a single retry probes a failing one.
 */
export class DestinationGate {
  private readonly answers = new AnswerTime();
  private readonly slots: ConcurrencyLimit<Release>;
  private readonly breaker: CircuitBreaker;
  private readonly stall: StallDetector;
  private readonly backlog: Backlog;

  constructor(
    private readonly options: GateOptions,
    clock: Clock = systemClock,
    /** The other destinations' answer times, to compare this one's with (see Backlog). */
    peers?: PeerAnswerTimes,
  ) {
    const now = () => clock.now();
    this.slots = new ConcurrencyLimit(options.concurrency, this.answers, now);
    this.breaker = new CircuitBreaker(options, now);
    this.stall = new StallDetector(options, this.slots, this.answers, clock, () => this.shedWaiters());
    this.backlog = new Backlog(this.slots, this.answers, options.stallMs, peers, now);
  }

  /** How long the receiver usually takes to answer (ms); undefined until it has answered. */
  get usualAnswerMs(): number | undefined {
    return this.answers.usualMs;
  }

  /** When a slot was last taken or freed (this gate's clock). */
  get lastActiveAt(): number {
    return this.slots.lastActiveAt;
  }

  get failing(): boolean {
    return this.breaker.failing;
  }

  /** Every slot taken, and none freed for the stall time (see StallDetector). */
  get stalled(): boolean {
    return this.stall.stalled;
  }

  /**
   * For first attempts: waits for a slot while the destination is healthy; resolves undefined (send
   * it to the retry path) when it is failing, stalled or too far behind, or starts to be.
   */
  acquire(): Promise<Release | undefined> {
    if (this.failing) return Promise.resolve(undefined);
    if (this.slots.hasFreeSlot) return Promise.resolve(this.take(false));
    if (this.stalled || this.backlog.tooFarBehind()) return Promise.resolve(undefined);
    this.stall.watch();
    return this.slots.wait();
  }

  /** First attempts wait for this destination's slots, and calls come faster than it answers (see Backlog). */
  behind(): boolean {
    return this.backlog.behind();
  }

  /** How long a call queued now would take to be answered (see Backlog.queuedWaitMs). */
  queuedWaitMs(): number | undefined {
    return this.backlog.queuedWaitMs();
  }

  /** Calls waiting for a slot here are not moving (see StallDetector.notMoving). */
  notMoving(minMs: number): boolean {
    return this.stall.notMoving(minMs);
  }

  /** For retries: a slot now, a probe slot once a failing destination's cool-down is over, or undefined (try later). */
  tryAcquire(): Release | undefined {
    if (this.failing) return this.breaker.tryProbe() ? this.take(true) : undefined;
    return this.slots.hasFreeSlot ? this.take(false) : undefined;
  }

  /**
   * How long a retry that found no slot should wait before asking again. While a probe is in flight
   * nobody gets in until it is answered (or times out), so the others wait a cool-down: with many
   * retries parked on a failing destination, polling alone would eat the CPU that healthy
   * destinations need. So do retries of a destination that is stalled or behind: its first attempts
   * take every slot that frees, and a retry asking again soon would only be sent back again.
   */
  retryLaterMs(): number {
    if (this.failing) return this.breaker.probing ? this.options.cooldownMs : Math.max(this.breaker.coolDownLeftMs, RETRY_POLL_MS);
    return this.stalled || this.behind() || this.backlog.tooFarBehind() ? this.options.cooldownMs : RETRY_POLL_MS;
  }

  /**
   * Sends the first attempts waiting for a slot to the retry path, as if refused: when the
   * destination starts failing or stalls, and (FirstAttempts) when it is behind and batches have
   * no more room to wait outside their slots.
   */
  shedWaiters(): void {
    this.slots.shed();
  }

  private take(probe: boolean): Release {
    return this.granted(this.slots.take(), probe);
  }

  /** The Release of a slot taken at `takenAt`. */
  private granted(takenAt: number, probe: boolean): Release {
    this.stall.progressed();
    let released = false;
    return (outcome) => {
      if (released) return;
      released = true;
      const freedAt = this.slots.free();
      // Only answers teach it: a timeout says nothing about how long the receiver usually takes.
      if (outcome !== "retryable" && outcome !== "unused") this.answers.learn(freedAt - takenAt);
      this.stall.progressed();
      if (this.breaker.record(outcome, probe)) this.shedWaiters();
      if (!this.failing) this.slots.wake((at) => this.granted(at, false));
    };
  }
}

/** One gate per destination, made on first use. */
export class DestinationGates {
  private readonly gates = new Map<string, DestinationGate>();
  private readonly peers = new TypicalAnswerTimes(() => this.gates.values());

  constructor(
    private readonly options: GateOptions,
    /** Told when a destination turns failing or healthy again (see GateOptions.onFailingChange). */
    private readonly onFailingChange?: (destinationId: string, failing: boolean) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  for(destinationId: string): DestinationGate {
    let gate = this.gates.get(destinationId);
    if (!gate) {
      const onChange = this.onFailingChange;
      gate = new DestinationGate(
        onChange ? { ...this.options, onFailingChange: (failing) => onChange(destinationId, failing) } : this.options,
        this.clock,
        this.peers,
      );
      this.gates.set(destinationId, gate);
    }
    return gate;
  }
}
