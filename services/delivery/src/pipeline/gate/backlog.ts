import type { AnswerTime } from "./answer-time.js";
import type { ConcurrencyLimit } from "./concurrency-limit.js";
import type { PeerAnswerTimes } from "./peer-answer-times.js";

/** A receiver that usually takes this long to answer is slow, whatever the others take: beyond any round trip, and beyond this process's own delays. */
const SLOW_ANSWER_MS = 250;
/** Below SLOW_ANSWER_MS, a receiver or queue is slow only from this long: shorter waits pace nobody. */
const SLOWER_THAN_PEERS_MS = 100;
/** Below SLOW_ANSWER_MS, slow only at this many times the other destinations' usual: an overloaded process makes every answer late together. */
const SLOWER_THAN_PEERS_MULTIPLE = 5;

/**
 * Whether a receiver is behind its calls: they come faster than it answers. First attempts wait
 * for its slots, and either the receiver is slow (SLOW_ANSWER_MS or more an answer, usually, or
 * several times as long as the other destinations: SLOWER_THAN_PEERS_MS) or its queue is long next
 * to the busy ones': a call queued now would wait several times as long as theirs (queuedWaitMs), as
 * when a receiver that answers quickly but needs a new connection for every call gets them faster
 * than it can take them. Comparing with the others tells a slow receiver from a slow process, which
 * one fixed threshold cannot. Such waiting calls do not keep their batches in their batch slots (see
 * FirstAttempts), and a first attempt that would wait longer than `maxWaitMs` goes to the retry path
 * instead: one receiver must not set the pace for every other destination's calls. A queue as long
 * as the other busy destinations' (this process is the bottleneck, or the others are idle) keeps its
 * batches in their slots: that is what paces the consumer.
 */
export class Backlog {
  constructor(
    private readonly slots: Pick<ConcurrencyLimit<unknown>, "waiting" | "limit">,
    private readonly answers: Pick<AnswerTime, "usualMs">,
    /** The longest a first attempt queues at a receiver that is behind (GateOptions.stallMs); unset: no bound. */
    private readonly maxWaitMs: number | undefined,
    /** The other destinations, to compare this one with. */
    private readonly peers: PeerAnswerTimes | undefined,
    private readonly now: () => number,
  ) {}

  behind(): boolean {
    return this.slots.waiting > 0 && (this.slow || this.longerQueueThanPeers(this.queuedWaitMs()!));
  }

  /** Behind (or would be) with so many first attempts queued that one more would wait longer than `maxWaitMs`. */
  tooFarBehind(): boolean {
    const answerMs = this.answers.usualMs;
    if (answerMs === undefined || this.slotWaitMs(1) <= (this.maxWaitMs ?? Infinity)) return false;
    return this.slow || this.longerQueueThanPeers(answerMs + this.slotWaitMs(1));
  }

  /**
   * How long a call queued now would take to be answered: its turn for a slot plus an answer, at the
   * usual answer time. Undefined until the receiver has answered.
   */
  queuedWaitMs(): number | undefined {
    const answerMs = this.answers.usualMs;
    return answerMs === undefined ? undefined : answerMs + this.slotWaitMs(0);
  }

  private get slow(): boolean {
    const answerMs = this.answers.usualMs;
    if (answerMs === undefined || answerMs < SLOWER_THAN_PEERS_MS) return false;
    if (answerMs >= SLOW_ANSWER_MS) return true;
    const peerMs = this.peers?.typical(this.now())?.answerMs;
    return peerMs !== undefined && answerMs >= SLOWER_THAN_PEERS_MULTIPLE * peerMs;
  }

  /** How long a call queued now, behind `extra` more, would wait for its slot; the receiver has answered. */
  private slotWaitMs(extra: number): number {
    return ((this.slots.waiting + extra) / this.slots.limit) * this.answers.usualMs!;
  }

  private longerQueueThanPeers(waitMs: number): boolean {
    if (waitMs < SLOWER_THAN_PEERS_MS) return false;
    const peerMs = this.peers?.typical(this.now())?.activeQueuedWaitMs;
    return peerMs !== undefined && waitMs >= SLOWER_THAN_PEERS_MULTIPLE * peerMs;
  }
}
