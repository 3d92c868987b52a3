import type { JsMsg } from "@nats-io/jetstream";
import type { DeferredCalls, DeliveryTask } from "@switchyard/contracts";
import type { Destination } from "@switchyard/workspace";
import type { Release } from "../pipeline/destination-gate.js";
import { kindOf, requestsOf, type RoundResult } from "../kinds/index.js";
import { firstRound, firstRoundWhenFree, pacedRound, roundOutcome, type DeliveryDeps } from "../pipeline/first-attempts.js";
import type { HandlingFailures } from "../pipeline/handling-failures.js";
import { isLate, TURN_HORIZON_MS, waitUntil, type Pace, type RateLimits } from "../pipeline/rate-limits.js";
import { decodeRetryWork, timingFromHeaders, timingOf, type RetryWork } from "./retry-queue.js";
import { outgoingCall } from "../pipeline/outgoing-calls.js";
import { firstRoundOf, firstTask, retryRoundOf, type FirstRoundTarget, type Round } from "../pipeline/round.js";
import { OutcomeTally } from "../pipeline/outcome-reports.js";
import { undeliverableAttempt } from "../pipeline/settle.js";

/** How long a retry waits while its destination is disabled. */
const DISABLED_RECHECK_MS = 30_000;
/** Redelivery that comes this early is treated as due (timer granularity). */
const EARLY_TOLERANCE_MS = 5;
/** Nak deadlines this far away or more are rounded up to a multiple of it (see nakDelay). */
const NAK_GRID_MS = 1_000;
/**
 * Retry messages at most that wait for their rate-limited destination's slots
 * outside a retry slot (see Retries.paced); beyond that they wait in it.
 */
const MAX_PACED_OUTSIDE = 256;

/**
 * The delay to nak a task with so that it comes back at `now + delayMs` or a
 * little later, never after the window's end. Whole milliseconds: nats-server
 * ignores a delay that is not a whole number of nanoseconds and redelivers at
 * once. Deadlines a second or more away fall on whole seconds: nats-server
 * walks every pending message of the consumer each time one of their deadlines
 * passes, so thousands of waiting tasks with scattered deadlines would keep it
 * scanning without pause; on a grid they share the scans.
 */
export function nakDelay(now: number, delayMs: number, windowEnd: number): number {
  const deadline = delayMs >= NAK_GRID_MS ? Math.ceil((now + delayMs) / NAK_GRID_MS) * NAK_GRID_MS : now + delayMs;
  return Math.max(1, Math.round(Math.min(deadline, windowEnd) - now));
}

/**
 * Handles the retry stream. Work that is not due yet goes back with
 * nak(delay) (JetStream redelivers it then). A due task is tried on its
 * remaining URLs, in order, until one succeeds; due deferred calls get their
 * first round. Outcomes are settled like a first attempt's: delivered,
 * rescheduled, or dead-lettered.
 */
export class Retries {
  /** Messages waiting for their slots outside a retry slot (see paced). */
  private readonly outside = new Set<Promise<void>>();

  constructor(
    private readonly deps: DeliveryDeps & {
      /** The retry window (DELIVERY_RETRY_WINDOW_MS). */
      windowMs: number;
      /** How often a message handled outside a retry slot tells JetStream it is being worked on. */
      heartbeatMs: number;
      /** What becomes of such a message when its handling fails unexpectedly (as the consumer does for the others). */
      failures: HandlingFailures;
    },
  ) {}

  /** Waits for the messages handled outside a retry slot; call it once the consumer has stopped. */
  async drain(): Promise<void> {
    while (this.outside.size > 0) await Promise.all(this.outside);
  }

  async handle(message: JsMsg): Promise<void> {
    // Decided from the headers where possible: the work (and its calls) is decoded only when needed.
    const fromHeaders = timingFromHeaders(message);
    let decoded = fromHeaders ? undefined : await this.decode(message);
    const timing = fromHeaders ?? (decoded && timingOf(decoded));
    if (!timing) return;
    const work = async () => (decoded ??= await this.decode(message));

    const now = Date.now();
    const windowEnd = this.windowEnd(timing.windowStartMs, now);
    const notBefore = timing.notBeforeMs ?? now;
    if (notBefore > now + EARLY_TOLERANCE_MS) {
      // Not due, and its window is over (calls deferred again near its end can be due after it):
      // waiting longer would only bring it back every millisecond (nakDelay stops at the window's end).
      if (now >= windowEnd) await this.deadLetter(message, await work(), "window_exhausted");
      else message.nak(nakDelay(now, notBefore - now, windowEnd));
      return;
    }

    const destination = this.deps.workspace.destination(timing.destinationId);
    if (!destination) {
      await this.deadLetter(message, await work(), "destination_removed");
      return;
    }
    const release = destination.enabled ? this.deps.gates.for(destination.id).tryAcquire() : undefined;
    if (!release) {
      // Disabled, or failing and not this task's turn to probe: ask again later, within the window.
      if (now >= windowEnd) {
        await this.deadLetter(message, await work(), "window_exhausted");
        return;
      }
      const wait = destination.enabled ? this.deps.gates.for(destination.id).retryLaterMs() : DISABLED_RECHECK_MS;
      message.nak(nakDelay(now, wait + Math.random() * 100, windowEnd));
      return;
    }
    const due = await work();
    if (!due) {
      // Not retry work (already terminated): no request was made, so nothing for the breaker to learn.
      release("unused");
      return;
    }
    const tally = new OutcomeTally(sourceOf(due), destination.id);
    if (destination.maxRequestsPerSecond !== undefined) {
      await this.paced(message, due, destination, destination.maxRequestsPerSecond, release, tally);
      return;
    }
    if (due.kind === "task") await this.attempt(due.task, destination, release, tally);
    else await this.firstRounds(message, due.group, destination, release, tally);
    await this.deps.reports.publish(tally, `retry-${message.seq}`);
    message.ack();
  }

  /** When the retry window that started at `startMs` (unknown: now) ends. */
  private windowEnd(startMs: number | undefined, now: number): number {
    return (startMs ?? now) + this.deps.windowMs;
  }

  /** The work in a message; undefined (and the message set aside as poison) when it is not retry work. */
  private async decode(message: JsMsg): Promise<RetryWork | undefined> {
    try {
      return decodeRetryWork(message);
    } catch (error) {
      await this.deps.poison.setAside(message, "retry", "undecodable", error);
      return undefined;
    }
  }

  private async deadLetter(message: JsMsg, work: RetryWork | undefined, reason: "destination_removed" | "window_exhausted"): Promise<void> {
    if (!work) return;
    const tasks = work.kind === "task" ? [work.task] : deferredTasks(work.group);
    const tally = new OutcomeTally(sourceOf(work), work.kind === "task" ? work.task.destinationId : work.group.destinationId);
    for (const task of tasks) await this.deps.settler.deadLetter(task, reason, task.attemptsBefore, undefined, tally);
    await this.deps.reports.publish(tally, `retry-${message.seq}`);
    message.ack();
  }

  /**
   * Work for a rate-limited destination claims its requests' slots first (as a
   * turn: it does not line up behind the waiting room, it comes from there or
   * had its first attempt already). Booked beyond TURN_HORIZON_MS, it comes back
   * when its slots are near, however long that takes: waiting for the limit
   * never dead-letters a call. Otherwise it waits for its slots and makes its
   * requests outside the retry slot (up to MAX_PACED_OUTSIDE messages), so a
   * destination's waiting calls do not hold the slots other destinations' retries need.
   * A failing destination's probe is a single call: the group's others go back
   * to the retry stream at once, to claim their slots once the probe is answered.
   */
  private async paced(
    message: JsMsg,
    work: RetryWork,
    destination: Destination,
    limit: number,
    release: Release,
    tally: OutcomeTally,
  ): Promise<void> {
    const probing = this.deps.gates.for(destination.id).failing;
    const rounds = work.kind === "task" ? [this.retryRound(work.task, destination, tally)] : deferredRounds(work.group, destination, tally);
    const sending = probing ? rounds.slice(0, 1) : rounds;
    const kind = kindOf(destination);
    const slots = sending.reduce((sum, round) => sum + requestsOf(kind, destination, round.targetIndexes), 0);
    let turn: Awaited<ReturnType<RateLimits["turn"]>>;
    try {
      // Calls that go in batches claim no turn of their own: their batch claims one.
      turn =
        slots === 0
          ? { granted: true, pace: { at: Date.now(), intervalMs: 0 } }
          : await this.deps.rateLimits.turn(destination.id, limit, slots);
    } catch (error) {
      release("unused");
      throw error;
    }
    if (!turn.granted) {
      release("unused");
      const now = Date.now();
      message.nak(nakDelay(now, Math.max(turn.freeAt - TURN_HORIZON_MS - now, 100) + Math.random() * 100, Infinity));
      return;
    }
    const { pace } = turn;
    const send = async () => {
      if (work.kind === "deferred") {
        await this.pacedFirstRounds(message, work.group, sending, rounds.length - sending.length, destination, release, pace);
      } else {
        await waitUntil(pace.at);
        if (isLate(pace)) {
          // Missed its slot (this process was held up): it claims another when it comes back.
          release("unused");
          message.nak();
          return;
        }
        await this.attempt(work.task, destination, release, tally, pace);
      }
      await this.deps.reports.publish(tally, `retry-${message.seq}`);
      message.ack();
    };
    if (this.outside.size >= MAX_PACED_OUTSIDE) {
      await send();
      return;
    }
    const heartbeat = setInterval(() => message.working(), this.deps.heartbeatMs);
    const task: Promise<void> = send()
      .catch((error: unknown) => this.deps.failures.failed(message, error))
      .finally(() => {
        clearInterval(heartbeat);
        this.outside.delete(task);
      });
    this.outside.add(task);
  }

  /**
   * Deferred calls on their slots: the first on the retry slot this message
   * was given, the others like first attempts. Calls the gate refuses or that
   * missed their slots (see LATE_MS), and the `notSent` last ones (a probe's
   * group), go back to the retry stream together, due at once, before the
   * message is acked.
   */
  private async pacedFirstRounds(
    message: JsMsg,
    group: DeferredCalls,
    rounds: Round[],
    notSent: number,
    destination: Destination,
    release: Release,
    pace: Pace,
  ): Promise<void> {
    const paces: Pace[] = [];
    let at = pace.at;
    for (const round of rounds) {
      paces.push({ at, intervalMs: pace.intervalMs });
      at += round.targetIndexes.length * pace.intervalMs;
    }
    const [first, ...rest] = rounds;
    const sendFirst = async (): Promise<boolean> => {
      if (!first) {
        release("unused");
        return true;
      }
      await waitUntil(paces[0]!.at);
      if (isLate(paces[0]!)) {
        release("unused");
        return false;
      }
      await firstRound(this.deps, first, destination, release, paces[0]);
      return true;
    };
    const sent = await Promise.all([
      sendFirst(),
      ...rest.map((round, index) => pacedRound(this.deps, round, destination, paces[index + 1]!)),
    ]);
    const still = [
      ...rounds.filter((_, index) => !sent[index]).map((round) => round.call.encoded()),
      ...group.calls.slice(group.calls.length - notSent),
    ];
    if (still.length === 0) return;
    await this.deps.retryQueue.defer({ ...group, calls: still, notBefore: new Date() }, `retry-${message.seq}`);
    this.deps.metrics.deferred(still.length);
  }

  /** A due task's round: its remaining targets that still exist (all of them when none does). */
  private retryRound(task: DeliveryTask, destination: Destination, tally: OutcomeTally): Round {
    const targets = kindOf(destination).targets(destination);
    const known = task.targetIndexes.filter((index) => index < targets.length);
    return retryRoundOf(task, known.length > 0 ? known : targets, tally);
  }

  /** Tries a due task on its remaining URLs and settles the outcome; the slot is freed either way. */
  private async attempt(task: DeliveryTask, destination: Destination, release: Release, tally: OutcomeTally, pace?: Pace): Promise<void> {
    const round = this.retryRound(task, destination, tally);
    const kind = kindOf(destination);
    const problem = kind.undeliverable(round.call);
    if (problem !== undefined) {
      release("permanent");
      await this.deps.settler.deadLetter(task, "undeliverable", task.attemptsBefore, undeliverableAttempt(problem), tally);
      return;
    }
    // A round whose requests go in batches does not keep the slot: each batch takes its own.
    const alone = requestsOf(kind, destination, round.targetIndexes) > 0;
    if (!alone) release("unused");
    let result: RoundResult | undefined;
    try {
      // A call handed over before its first attempt still gets the first attempt's rule: every URL.
      const mode = task.attemptsBefore === 0 ? "all" : "until_success";
      result = await kind.send(this.deps, destination, round.call, round.targetIndexes, mode, pace);
    } finally {
      if (alone) release(roundOutcome(result));
    }
    await this.deps.settler.settle(round, result);
  }

  /**
   * Deferred calls whose time has come: the first goes out on the slot this
   * message was given (for a failing destination, the probe), the others as
   * slots free up, like first attempts. Calls the destination cannot take now
   * (the probe failed, or it fails or stalls again) are deferred once more,
   * together, before this message is acked.
   */
  private async firstRounds(
    message: JsMsg,
    group: DeferredCalls,
    destination: Destination,
    release: Release,
    tally: OutcomeTally,
  ): Promise<void> {
    const [probe, ...rest] = deferredRounds(group, destination, tally);
    if (!probe) {
      release("unused");
      return;
    }
    await firstRound(this.deps, probe, destination, release);
    const sent = await Promise.all(rest.map((round) => firstRoundWhenFree(this.deps, round, destination)));
    const still = rest.filter((_, index) => !sent[index]);
    if (still.length === 0) return;
    const gate = this.deps.gates.for(destination.id);
    // Not after the window's end, so they get one more chance then rather than none.
    const now = Date.now();
    const notBefore = new Date(Math.min(now + gate.retryLaterMs(), this.windowEnd(group.windowStart?.getTime(), now)));
    await this.deps.retryQueue.defer({ ...group, calls: still.map((round) => round.call.encoded()), notBefore }, `retry-${message.seq}`);
    this.deps.metrics.deferred(still.length);
  }
}

/** The deferred calls' first rounds, to the given URLs. */
/**
 * Deferred calls' first rounds, each to the targets that take it now. One that none takes any
 * more (its destination changed since) goes to every target, so its round says so for good.
 */
function deferredRounds(group: DeferredCalls, destination: Destination, tally: OutcomeTally): Round[] {
  const kind = kindOf(destination);
  return group.calls.map((call) => {
    const outgoing = outgoingCall(call);
    const targets = kind.targetsOf(destination, outgoing);
    return firstRoundOf(outgoing, deferredTarget(group, targets.length > 0 ? targets : kind.targets(destination)), tally);
  });
}

/** The source whose calls a retry message holds. */
function sourceOf(work: RetryWork): string {
  return work.kind === "task" ? work.task.sourceId : work.group.sourceId;
}

/** The deferred calls as tasks that never had a request (for dead letters). */
function deferredTasks(group: DeferredCalls): DeliveryTask[] {
  const to = deferredTarget(group, []);
  return group.calls.map((call) => firstTask(call, to));
}

function deferredTarget(group: DeferredCalls, targetIndexes: number[]): FirstRoundTarget {
  return { sourceId: group.sourceId, destinationId: group.destinationId, targetIndexes, windowStart: group.windowStart ?? new Date() };
}
