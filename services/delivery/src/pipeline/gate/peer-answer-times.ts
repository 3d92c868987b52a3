/** What the destinations of this process usually take to answer, and how long their calls wait, as a whole. */
export interface PeerAnswerTimes {
  /**
   * At `nowMs`, in ms: the lower median of the usual answer times of the destinations that have
   * answered, and of the queued waits (Backlog.queuedWaitMs) of those of them that are busy (a slot
   * taken or freed within ACTIVE_MS); undefined while none has answered, and the queued wait
   * undefined while none is busy. Lower medians, so that of two destinations, a slow one is compared
   * with the other rather than with itself. Only busy ones' queues: an idle destination's calls wait
   * for nothing, and a busy one compared with it would always be behind (a burst to one destination
   * while the others are quiet is paced by its queue, as it should be).
   */
  typical(nowMs: number): Typical | undefined;
}

/** See PeerAnswerTimes.typical. */
export interface Typical {
  answerMs: number;
  activeQueuedWaitMs: number | undefined;
}

/** What is read of each destination (its DestinationGate). */
export interface AnswerTimesOf {
  readonly usualAnswerMs: number | undefined;
  readonly lastActiveAt: number;
  queuedWaitMs(): number | undefined;
}

/** A destination with no slot taken or freed for this long is idle: its calls wait for nothing, so its queue is not compared with. */
const ACTIVE_MS = 100;
/** How long the typical times are reused before they are worked out again: they are asked for on every batch's look at its calls. */
const TYPICAL_REFRESH_MS = 100;

/** PeerAnswerTimes worked out from every destination of the process. */
export class TypicalAnswerTimes implements PeerAnswerTimes {
  private typicalNow: Typical | undefined;
  private typicalAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly destinations: () => Iterable<AnswerTimesOf>) {}

  typical(nowMs: number): Typical | undefined {
    if (nowMs - this.typicalAt < TYPICAL_REFRESH_MS) return this.typicalNow;
    const answers: number[] = [];
    const waits: number[] = [];
    for (const destination of this.destinations()) {
      const answerMs = destination.usualAnswerMs;
      if (answerMs === undefined) continue;
      answers.push(answerMs);
      if (nowMs - destination.lastActiveAt < ACTIVE_MS) waits.push(destination.queuedWaitMs()!);
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
