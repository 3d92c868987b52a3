import type { DeliveryAttempt, DeliveryTask } from "@switchyard/contracts";
import { type Logger } from "@switchyard/platform";
import type { DeadLetters } from "../retries/dead-letters.js";
import { exchangeOf } from "@switchyard/wire";
import type { DeliveryLog } from "../api/delivery-log.js";
import type { RoundResult, UrlAttempt } from "../kinds/index.js";
import type { DeliveryMetrics } from "../metrics.js";
import { nextStep, type DeadLetterReason, type RetrySchedule } from "../retries/retry-policy.js";
import type { RetryQueue } from "../retries/retry-queue.js";
import type { OutcomeTally } from "./outcome-reports.js";
import type { Round } from "./round.js";

/** What Settler.settle returns when the round had nothing to store: there is nothing to wait for. */
export const SETTLED = Promise.resolve();

/**
 * Makes the outcome of one round of requests durable, the same way for first
 * attempts and retries: every attempt goes to the attempt log (delivered ones
 * without being waited for), counts to
 * the round's tally (reported per handled message, and folded into the stats from there),
 * and an undelivered call either gets its next retry scheduled or
 * becomes a dead letter. Resolves only once that is stored, so the caller can ack.
 */
export class Settler {
  private readonly seenBatches = new WeakSet<object>();
  /** When a batch's calls are retried: the first of them to settle sets it. */
  private readonly batchRetryAt = new WeakMap<object, number>();

  constructor(
    private readonly deps: {
      retryQueue: RetryQueue;
      deadLetters: DeadLetters;
      log: DeliveryLog;
      metrics: DeliveryMetrics;
      schedule: RetrySchedule;
      logger: Logger;
    },
  ) {}

  /** The outcome of the round just made. */
  settle(round: Round, result: RoundResult): Promise<void> {
    // The common case, every request answered 2xx: only a count, nothing to store or wait for.
    if (result.delivered && result.attempts.every((a) => a.outcome === "delivered")) {
      const made = this.firstSeen(result.attempts);
      for (const attempt of made) this.deps.log.delivered(round, attempt);
      this.deps.metrics.requestsMade(made);
      this.deps.metrics.delivered(round.call.receivedAt);
      if (round.tally) round.tally.delivered++;
      return SETTLED;
    }
    return this.settleFailures(round, result);
  }

  private async settleFailures(round: Round, result: RoundResult): Promise<void> {
    const task = round.task();
    const { tally } = round;
    const made = this.firstSeen(result.attempts);
    this.deps.metrics.requestsMade(made);
    const attempt = task.attemptsBefore + 1;
    const failed = result.attempts.filter((a) => a.outcome !== "delivered");
    const loggedFailures: UrlAttempt[] = [];
    for (const a of made) {
      if (a.outcome === "delivered") this.deps.log.delivered(round, a);
      else loggedFailures.push(a);
    }
    await Promise.all(loggedFailures.map((a) => this.deps.log.record(requestRecord(task, a, attempt))));
    if (tally) tally.failed += failed.length;
    if (result.deadTargetIndexes.length > 0) {
      // Those targets' part of the call, on its own: a replay sends it to them only.
      const dead = new Set(result.deadTargetIndexes);
      const lastDead = failed.findLast((a) => dead.has(a.urlIndex));
      await this.deadLetter({ ...task, targetIndexes: result.deadTargetIndexes }, "permanent_failure", attempt, lastDead, tally);
    }
    if (result.delivered) {
      this.deps.metrics.delivered(task.call?.receivedAt);
      if (tally) tally.delivered++;
      return;
    }

    const lastFailure = failed.at(-1);
    if (result.retryableUrlIndexes.length === 0) {
      await this.deadLetter(task, "permanent_failure", attempt, lastFailure, tally);
      return;
    }
    const now = Date.now();
    const windowStartMs = task.windowStart?.getTime() ?? now;
    let step = nextStep({ attempt, nowMs: now, windowStartMs, retryAfterMs: result.retryAfterMs, schedule: this.deps.schedule });
    // A batch's calls come back at one time (within their windows), in their order, and are batched again.
    const batch = lastFailure?.batch;
    if (batch && step.kind === "retry") {
      const sharedAt = this.batchRetryAt.get(batch);
      if (sharedAt === undefined) this.batchRetryAt.set(batch, now + step.delayMs);
      else if (sharedAt <= windowStartMs + this.deps.schedule.windowMs) step = { kind: "retry", delayMs: Math.max(0, sharedAt - now) };
    }
    if (step.kind === "dead_letter") {
      await this.deadLetter(task, "window_exhausted", attempt, lastFailure, tally);
      return;
    }
    await this.deps.retryQueue.schedule({
      ...task,
      targetIndexes: result.retryableUrlIndexes,
      attemptsBefore: attempt,
      notBefore: new Date(now + step.delayMs),
      lastFailure: lastFailure ? attemptRecord(task, lastFailure, attempt) : task.lastFailure,
    });
    this.deps.metrics.retryScheduled();
  }

  /**
   * The attempts this round is the first to settle: a batch's request is in the round of each of its
   * calls, and is logged and counted once.
   */
  private firstSeen(attempts: UrlAttempt[]): UrlAttempt[] {
    if (attempts.every((a) => a.batch === undefined)) return attempts;
    return attempts.filter((a) => {
      if (!a.batch) return true;
      if (this.seenBatches.has(a.batch)) return false;
      this.seenBatches.add(a.batch);
      return true;
    });
  }

  /** Stores a dead letter (and its log entry); `tally` counts it for the handled message's usage report. */
  async deadLetter(
    task: DeliveryTask,
    reason: DeadLetterReason,
    attempts: number,
    lastFailure?: UrlAttempt,
    tally?: OutcomeTally,
  ): Promise<void> {
    // Without a request in this round (window over while the destination was failing), the task remembers the last one.
    const lastAttempt = lastFailure ? attemptRecord(task, lastFailure, attempts) : task.lastFailure;
    await this.deps.deadLetters.add({ task, reason, lastAttempt, deadAt: new Date(), attempts });
    await this.deps.log.record({
      ...(lastAttempt ?? attemptRecord(task, undefined, attempts)),
      // The request that failed last, when this round made it.
      exchange: lastFailure ? exchangeOf(lastFailure) : undefined,
      outcome: "dead_lettered",
      error: `dead-lettered (${reason})${lastAttempt?.error ? `: ${lastAttempt.error}` : ""}`,
      at: new Date(),
    });
    if (tally) tally.deadLettered++;
    this.deps.metrics.deadLettered(reason);
    this.deps.logger.info(
      { destinationId: task.destinationId, messageId: task.call?.messageId, reason, attempts },
      "dead-lettered a delivery",
    );
  }
}

/** The attempt a dead letter records for a call its kind can send nothing for: no request, the reason as its error. */
export function undeliverableAttempt(reason: string): UrlAttempt {
  return {
    status: 0,
    error: reason,
    latencyMs: 0,
    outcome: "permanent",
    retryAfterMs: undefined,
    urlIndex: -1,
    url: "",
  };
}

function attemptRecord(task: DeliveryTask, attempt: UrlAttempt | undefined, number: number): DeliveryAttempt {
  return {
    destinationId: task.destinationId,
    sourceId: task.sourceId,
    messageId: task.call?.messageId ?? "",
    // The log and dead letters are read by more people than the configuration: query values (tokens) are masked.
    url: attempt?.request?.entry.loggedUrl ?? "",
    status: attempt?.status ?? 0,
    error: attempt?.error ?? "",
    latencyMs: attempt?.latencyMs ?? 0,
    attempt: number,
    at: new Date(),
    outcome: attempt?.outcome ?? "",
    batchMessageIds: [],
    attemptId: "",
    exchange: undefined,
  };
}

/** A request as the attempt log holds it: a batch's once, under its first call, listing all of them. */
function requestRecord(task: DeliveryTask, attempt: UrlAttempt, number: number): DeliveryAttempt {
  const record = { ...attemptRecord(task, attempt, number), exchange: exchangeOf(attempt) };
  const ids = attempt.batch?.messageIds;
  return ids ? { ...record, messageId: ids[0] ?? "", batchMessageIds: [...ids] } : record;
}
