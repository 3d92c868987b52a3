import type { AttemptOutcome } from "../retries/retry-policy.js";

export interface GateOptions {
  /** Requests in flight to one destination at most. */
  concurrency: number;
  /** Consecutive retryable failures (timeouts, 5xx, refused connections) that mark a destination failing. */
  failureThreshold: number;
  /** How long a failing destination gets no first attempts before one retry probes it again. */
  cooldownMs: number;
  /**
   * First attempts wait for a slot only while the destination makes progress:
   * once every slot has been taken for a while without one being freed, the
   * waiting first attempts (and new ones) go to the retry path instead, without
   * counting as failures. "A while" is several times the destination's usual
   * answer time (STALL_LATENCY_MULTIPLE), between `minStallMs` and `stallMs`;
   * `minStallMs` until it has answered at all. Unset: they wait as long as it takes.
   * Nor does a first attempt queue for longer than `stallMs` at a slow receiver's usual answer
   * time (one slower than its calls come): it goes to the retry path (see `behind`).
   */
  stallMs?: number;
  /** The shortest wait before a stall is called; default `stallMs`. */
  minStallMs?: number;
  /** Called when the destination turns failing (true) or healthy again (false): once per change, not per attempt. */
  onFailingChange?: (failing: boolean) => void;
}

/**
 * A destination that has freed no slot for this many times its usual answer
 * time is stuck, not slow. Why a multiple and not a fixed time: a fixed second
 * holds every batch (and so every healthy destination) for that second when a
 * fast receiver hangs, while a fixed short time would call a slow but healthy
 * receiver stalled and push its calls onto the retry path for nothing.
 */
const STALL_LATENCY_MULTIPLE = 4;
/**
 * A receiver that usually takes this long to answer is slow (see DestinationGate.behind). Far over
 * a round trip across the world, and over what answers take here when this process itself is
 * overloaded (at 100 ms, healthy loopback receivers of the isolation benchmark crossed it, and
 * their calls went to the retry path for nothing).
 */
const SLOW_ANSWER_MS = 250;
/**
 * Below SLOW_ANSWER_MS, a receiver is slow when it takes at least this long and this many times
 * as long as the other destinations usually do (PeerAnswerTimes). An overloaded process makes
 * every destination's answers late together, so comparing them tells a slow receiver from a slow
 * self, which one fixed threshold cannot: without it, a receiver answering in 200 ms to calls
 * that came faster than that set the pace of every other destination.
 */
const SLOWER_THAN_PEERS_MS = 100;
const SLOWER_THAN_PEERS_MULTIPLE = 5;
/** Requests in flight to a destination that has not answered yet (see DestinationGate.limit). */
const UNANSWERED_CONCURRENCY = 4;
/** Weight of the newest answer time in the moving average. */
const LATENCY_SMOOTHING = 0.1;

/** A stall check whose timer fires this much later than asked does not trust its own observation. */
const LATE_TIMER_MS = 200;

/** Frees the slot and reports how the delivery went; "unused": no request was made, so there is nothing to learn. */
export type Release = (outcome: AttemptOutcome | "unused") => void;

/**
 * Isolation for one destination: bounded concurrency plus a circuit breaker.
 * While a destination is failing, first attempts skip it (its calls go to the
 * retry path at once) so healthy destinations never wait on its timeouts;
 * after the cool-down, a single retry probes it. A destination that stops
 * answering takes a whole request timeout to count as failing; until then,
 * once it has freed no slot for `stallMs`, it is treated as stalled: its first
 * attempts go to the retry path rather than holding their batches (and with
 * them every other destination of those batches) until the timeouts.
 */
export class DestinationGate {
  private inFlight = 0;
  private consecutiveFailures = 0;
  private openUntil = 0;
  private probing = false;
  /** When a slot was last taken or freed. */
  private lastActivityAt = 0;
  /** Set when a stall was found (see watchForStall); any slot taken or freed clears it. */
  private stalledFlag = false;
  private stallTimer: NodeJS.Timeout | undefined;
  /** Moving average of how long the destination takes to answer (ms); undefined until its first answer. */
  private answerMs: number | undefined;
  private readonly waiters: ((release: Release | undefined) => void)[] = [];

  constructor(
    private readonly options: GateOptions,
    private readonly now: () => number = Date.now,
    /** The other destinations' answer times, to compare this one's with (see SLOWER_THAN_PEERS_MS). */
    private readonly peers?: PeerAnswerTimes,
  ) {}

  /**
   * Requests in flight at most now: `concurrency` once the receiver has answered, and at most
   * UNANSWERED_CONCURRENCY before. A receiver that never answers otherwise gets a connection for
   * each of its first `concurrency` calls, each a connect delivery pays for while other
   * destinations wait, before its stall is called; a healthy one answers its first request in
   * milliseconds and gets the rest.
   */
  private get limit(): number {
    return this.answerMs === undefined ? Math.min(this.options.concurrency, UNANSWERED_CONCURRENCY) : this.options.concurrency;
  }

  /** How long the receiver usually takes to answer (ms); undefined until it has answered. */
  get usualAnswerMs(): number | undefined {
    return this.answerMs;
  }

  /** When a slot was last taken or freed (this gate's clock). */
  get lastActiveAt(): number {
    return this.lastActivityAt;
  }

  get failing(): boolean {
    return this.openUntil > 0;
  }

  /**
   * For first attempts: waits for a slot while the destination is healthy;
   * resolves undefined (send it to the retry path) when it is failing or starts failing.
   */
  acquire(): Promise<Release | undefined> {
    if (this.failing) return Promise.resolve(undefined);
    if (this.inFlight < this.limit) return Promise.resolve(this.take(false));
    if (this.stalled || this.tooFarBehind()) return Promise.resolve(undefined);
    this.watchForStall();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * First attempts wait for this destination's slots, and either the receiver is slow
   * (SLOW_ANSWER_MS or more an answer, usually, or several times as long as the other
   * destinations: SLOWER_THAN_PEERS_MS) or its queue is long next to the busy ones': a call queued
   * now would wait several times as long as theirs (queuedWaitMs), as when a receiver that answers
   * quickly but needs a new connection for every call gets them faster than it can take them.
   * Either way calls come faster than it answers. Such waiting calls do not keep their batches
   * in their batch slots (see FirstAttempts), and a first attempt that would wait longer than a
   * stall (GateOptions.stallMs) goes to the retry path instead: one receiver must not set the
   * pace for every other destination's calls. A queue as long as the other busy destinations'
   * (this process is the bottleneck, or the others are idle) keeps its batches in their slots:
   * that is what paces the consumer.
   */
  behind(): boolean {
    return this.waiters.length > 0 && (this.slow || this.longerQueueThanPeers(this.queuedWaitMs()!));
  }

  private get slow(): boolean {
    const answerMs = this.answerMs;
    if (answerMs === undefined || answerMs < SLOWER_THAN_PEERS_MS) return false;
    if (answerMs >= SLOW_ANSWER_MS) return true;
    const peerMs = this.peers?.typical(this.now())?.answerMs;
    return peerMs !== undefined && answerMs >= SLOWER_THAN_PEERS_MULTIPLE * peerMs;
  }

  /**
   * How long a call queued now would take to be answered: its turn for a slot plus an answer, at
   * the usual answer time. Undefined until the receiver has answered.
   */
  queuedWaitMs(): number | undefined {
    return this.answerMs === undefined ? undefined : this.answerMs + this.slotWaitMs(0);
  }

  /** How long a call queued now, behind `extra` more, would wait for its slot; the receiver has answered. */
  private slotWaitMs(extra: number): number {
    return ((this.waiters.length + extra) / this.limit) * this.answerMs!;
  }

  private longerQueueThanPeers(waitMs: number): boolean {
    if (waitMs < SLOWER_THAN_PEERS_MS) return false;
    const peerMs = this.peers?.typical(this.now())?.activeQueuedWaitMs;
    return peerMs !== undefined && waitMs >= SLOWER_THAN_PEERS_MULTIPLE * peerMs;
  }

  /** Behind (see `behind`) with so many first attempts queued that one more would wait longer than a stall. */
  private tooFarBehind(): boolean {
    if (this.answerMs === undefined || this.slotWaitMs(1) <= (this.options.stallMs ?? Infinity)) return false;
    return this.slow || this.longerQueueThanPeers(this.answerMs + this.slotWaitMs(1));
  }

  /** Every slot taken, and none freed for `stallMs` (as last checked). */
  get stalled(): boolean {
    return this.stalledFlag;
  }

  /** How long without a freed slot counts as a stall now (see GateOptions.stallMs). */
  private stallAfterMs(maxMs: number): number {
    const minMs = Math.min(this.options.minStallMs ?? maxMs, maxMs);
    if (this.answerMs === undefined) return minMs;
    return Math.min(maxMs, Math.max(minMs, STALL_LATENCY_MULTIPLE * this.answerMs));
  }

  /**
   * Every slot taken, and none taken or freed for several times the usual
   * answer time (STALL_LATENCY_MULTIPLE), and at least `minMs`: calls waiting
   * for a slot here are not moving. Unlike a stall, nothing is refused: a
   * batch whose calls wait only at such destinations gives up its batch slot
   * (see FirstAttempts). `minMs` alone until the destination has answered.
   */
  notMoving(minMs: number): boolean {
    const ms = this.answerMs === undefined ? minMs : Math.max(minMs, STALL_LATENCY_MULTIPLE * this.answerMs);
    return this.noProgressFor(ms);
  }

  private noProgressFor(ms: number): boolean {
    return this.inFlight >= this.limit && this.now() - this.lastActivityAt >= ms;
  }

  /** For retries: a slot now, a probe slot once a failing destination's cool-down is over, or undefined (try later). */
  tryAcquire(): Release | undefined {
    if (this.failing) {
      if (this.probing || this.now() < this.openUntil) return undefined;
      this.probing = true;
      return this.take(true);
    }
    return this.inFlight < this.limit ? this.take(false) : undefined;
  }

  /**
   * How long a retry that found no slot should wait before asking again. While
   * a probe is in flight nobody gets in until it is answered (or times out), so
   * the others wait a cool-down rather than asking every 100 ms: with thousands
   * of retries parked on a failing destination, that polling alone would eat the
   * CPU that healthy destinations need. So do retries of a destination that is
   * behind: its first attempts take every slot that frees, and retries asking
   * every 100 ms came back, queued and were sent back again, thousands of times.
   */
  retryLaterMs(): number {
    if (!this.failing) return this.stalled || this.behind() || this.tooFarBehind() ? this.options.cooldownMs : 100;
    if (this.probing) return this.options.cooldownMs;
    return Math.max(this.openUntil - this.now(), 100);
  }

  private take(probe: boolean): Release {
    this.inFlight++;
    const takenAt = this.now();
    this.lastActivityAt = takenAt;
    this.stalledFlag = false;
    let released = false;
    return (outcome) => {
      if (released) return;
      released = true;
      this.inFlight--;
      this.lastActivityAt = this.now();
      if (outcome !== "retryable" && outcome !== "unused") this.learnAnswerTime(this.lastActivityAt - takenAt);
      this.stalledFlag = false;
      if (probe) this.probing = false;
      if (outcome !== "unused") this.record(outcome);
      this.wakeNext();
    };
  }

  private record(outcome: AttemptOutcome): void {
    if (outcome === "retryable") {
      this.consecutiveFailures++;
      if (this.consecutiveFailures >= this.options.failureThreshold) this.open();
    } else if (outcome === "delivered") {
      const wasFailing = this.failing;
      this.consecutiveFailures = 0;
      this.openUntil = 0;
      if (wasFailing) this.options.onFailingChange?.(false);
    }
  }

  /** Only answers teach it: a timeout says nothing about how long the receiver usually takes. */
  private learnAnswerTime(ms: number): void {
    this.answerMs = this.answerMs === undefined ? ms : this.answerMs + LATENCY_SMOOTHING * (ms - this.answerMs);
  }

  private open(): void {
    if (!this.failing) this.options.onFailingChange?.(true);
    this.openUntil = this.now() + this.options.cooldownMs;
    // Everyone waiting for a first attempt goes to the retry path instead.
    this.shedWaiters();
  }

  /**
   * Sends the first attempts waiting for a slot to the retry path, as if refused: when the
   * destination starts failing or stalls, and (FirstAttempts) when it is behind and batches have
   * no more room to wait outside their slots.
   */
  shedWaiters(): void {
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  /**
   * While first attempts wait, checks whether the destination stalled; if so,
   * sends them to the retry path. Only this check declares a stall, and only
   * when it can trust what it sees: it decides after the event loop's I/O of
   * the turn (answers that came in while the timer was due count as progress),
   * and a timer that fired late means this process, not the receiver, was
   * held up (a long pause, a starved CPU), so it looks again a little later.
   */
  private watchForStall(minDelayMs = 10): void {
    if (this.options.stallMs === undefined || this.stallTimer) return;
    const stallMs = this.stallAfterMs(this.options.stallMs);
    const delay = Math.max(minDelayMs, this.lastActivityAt + stallMs - this.now());
    const due = performance.now() + delay;
    this.stallTimer = setTimeout(() => {
      const late = performance.now() - due > LATE_TIMER_MS;
      setImmediate(() => {
        this.stallTimer = undefined;
        if (this.waiters.length === 0) return;
        if (!this.noProgressFor(stallMs)) this.watchForStall();
        else if (late) this.watchForStall(stallMs / 4);
        else {
          this.stalledFlag = true;
          this.shedWaiters();
        }
      });
    }, delay);
    this.stallTimer.unref();
  }

  /** Hands free slots to waiting first attempts: several at once when the first answer raised the limit. */
  private wakeNext(): void {
    while (!this.failing && this.inFlight < this.limit && this.waiters.length > 0) this.waiters.shift()!(this.take(false));
  }
}

/** What the destinations of this process usually take to answer, and how long their calls wait, as a whole. */
export interface PeerAnswerTimes {
  /**
   * At `nowMs`, in ms: the lower median of the usual answer times of the destinations that have
   * answered, and of the queued waits (DestinationGate.queuedWaitMs) of those of them that are
   * busy (a slot taken or freed within ACTIVE_MS); undefined while none has answered, and the
   * queued wait undefined while none is busy. Lower medians, so that of two destinations, a slow
   * one is compared with the other rather than with itself. Only busy ones' queues: an idle
   * destination's calls wait for nothing, and a busy one compared with it would always be behind
   * (a burst to one destination while the others are quiet is paced by its queue, as it should be).
   */
  typical(nowMs: number): Typical | undefined;
}

/** See PeerAnswerTimes.typical. */
export interface Typical {
  answerMs: number;
  activeQueuedWaitMs: number | undefined;
}

/** A destination with no slot taken or freed for this long is idle: its queue is not compared with (PeerAnswerTimes). */
const ACTIVE_MS = 100;
/** How long a typical answer time is kept before it is worked out again from every gate. */
const TYPICAL_ANSWER_REFRESH_MS = 100;

/** One gate per destination, made on first use. */
export class DestinationGates implements PeerAnswerTimes {
  private readonly gates = new Map<string, DestinationGate>();
  private typicalNow: Typical | undefined;
  private typicalAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly options: GateOptions,
    /** Told when a destination turns failing or healthy again (see GateOptions.onFailingChange). */
    private readonly onFailingChange?: (destinationId: string, failing: boolean) => void,
    private readonly now: () => number = Date.now,
  ) {}

  for(destinationId: string): DestinationGate {
    let gate = this.gates.get(destinationId);
    if (!gate) {
      const onChange = this.onFailingChange;
      gate = new DestinationGate(
        onChange ? { ...this.options, onFailingChange: (failing) => onChange(destinationId, failing) } : this.options,
        this.now,
        this,
      );
      this.gates.set(destinationId, gate);
    }
    return gate;
  }

  typical(nowMs: number): Typical | undefined {
    // Asked whenever a batch looks whether it may give up its slot: worked out at most every 100 ms.
    if (nowMs - this.typicalAt < TYPICAL_ANSWER_REFRESH_MS) return this.typicalNow;
    const answers: number[] = [];
    const waits: number[] = [];
    for (const gate of this.gates.values()) {
      const answerMs = gate.usualAnswerMs;
      if (answerMs === undefined) continue;
      answers.push(answerMs);
      if (nowMs - gate.lastActiveAt < ACTIVE_MS) waits.push(gate.queuedWaitMs()!);
    }
    this.typicalNow =
      answers.length === 0
        ? undefined
        : { answerMs: lowerMedian(answers), activeQueuedWaitMs: waits.length === 0 ? undefined : lowerMedian(waits) };
    this.typicalAt = nowMs;
    return this.typicalNow;
  }
}

function lowerMedian(values: number[]): number {
  values.sort((a, b) => a - b);
  return values[(values.length - 1) >> 1]!;
}
