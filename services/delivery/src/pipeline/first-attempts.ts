import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import type { JsMsg } from "@nats-io/jetstream";
import type { Call, DeferredCalls } from "@switchyard/contracts";
import type { Destination, WorkspaceView } from "@switchyard/workspace";
import type { Logger } from "@switchyard/platform";
import type { DestinationGate, DestinationGates, Release } from "./destination-gate.js";
import { allUrlIndexes, fanOut, type FanOutResult } from "./fan-out.js";
import { webhooksEnabled } from "./integrations.js";
import type { DeliveryMetrics } from "../metrics.js";
import { readOutgoingBatch, undeliverableReason, type OutgoingBatch, type OutgoingCall } from "./outgoing-calls.js";
import type { AttemptOutcome } from "../retries/retry-policy.js";
import type { HandlingFailures } from "./handling-failures.js";
import type { PoisonMessages } from "../retries/poison.js";
import type { RetryQueue } from "../retries/retry-queue.js";
import { firstRoundOf, type Round } from "./round.js";
import { SETTLED, undeliverableAttempt, type Settler } from "./settle.js";
import type { WebhookSender } from "../outbound/webhook-sender.js";

/** What both delivery loops (first attempts and retries) work with. */
export interface DeliveryDeps {
  workspace: WorkspaceView;
  sender: WebhookSender;
  gates: DestinationGates;
  settler: Settler;
  retryQueue: RetryQueue;
  metrics: DeliveryMetrics;
  poison: PoisonMessages;
  logger: Logger;
}

export interface FirstAttemptDeps extends DeliveryDeps {
  /** Batches at most that wait for their outcomes without a batch slot (DELIVERY_AWAITING_BATCHES). */
  awaitingBatches: number;
  /** How often such a batch tells JetStream it is being worked on (as the consumer does for the others). */
  heartbeatMs: number;
  /** What becomes of such a batch when its delivery fails unexpectedly (as the consumer does for the others). */
  failures: HandlingFailures;
}

/**
 * A destination with every slot taken that has freed none for this long (or
 * several times its usual answer time, if longer) is not moving: calls waiting
 * for it do not keep their batch in its slot. Far shorter than a stall
 * (GateOptions.stallMs), since nothing is refused: the calls keep waiting,
 * only the batch slot is given up.
 */
const NOT_MOVING_MS = 25;
/** How often a batch whose calls wait for slots looks whether it can give up its batch slot. */
const CHECK_MS = 25;

/**
 * Calls deferred to one destination by batches handled within this time of
 * each other go to the retry stream as one DeferredCalls message (up to
 * MAX_DEFERRED_CALLS). With small batches (a call each, from the HTTP API)
 * and a failing destination, one message per batch meant hundreds of
 * publishes a second, each parked message coming back every cool-down: CPU
 * for the bus and this process that the healthy destinations then lacked.
 * The batches' acks wait for that message, their healthy calls do not.
 */
const DEFER_LINGER_MS = 100;
const MAX_DEFERRED_CALLS = 1_000;

/** A batch's first attempts to one destination. */
export interface WaitingCalls {
  readonly gate: DestinationGate;
  /** Calls with neither a slot nor a refusal yet. */
  calls: number;
}

/**
 * Handles a batch from the calls stream: every call goes to every connected,
 * enabled webhook destination its integrations allow, inline. A destination
 * that is failing or has stalled gets no requests: its calls of the batch go
 * to the retry path together, as one DeferredCalls message. The batch is
 * acked once each delivery is done or durably handed to the retry path, so a
 * crash before that redelivers the batch (at-least-once).
 *
 * A batch keeps its batch slot (the consumer's concurrency) only while it
 * has calls waiting for a destination that is moving. Once every call is in
 * flight, done, refused (to be deferred), or waiting for a destination that
 * has stopped freeing slots, the batch waits for its outcomes outside the
 * slot, still unacked and heartbeated, so the consumer takes the next batch:
 * a receiver that never answers holds its own requests for the whole timeout,
 * but no slot that the healthy destinations' next calls need. At most
 * `awaitingBatches` wait that way; beyond that a batch keeps its slot.
 */
export class FirstAttempts {
  private readonly awaiting = new Set<Promise<void>>();
  /** Deferred calls being gathered, by source and destination. */
  private readonly deferrals = new Map<string, DeferralGroup>();

  constructor(private readonly deps: FirstAttemptDeps) {}

  /** Waits for the batches that wait outside a slot; call it once the consumer has stopped. */
  async drain(): Promise<void> {
    while (this.awaiting.size > 0) await Promise.all(this.awaiting);
  }

  async handle(message: JsMsg): Promise<void> {
    let batch: OutgoingBatch;
    try {
      batch = readOutgoingBatch(message.data);
    } catch (error) {
      // Not a CallBatch: it can never be delivered, so it must not block the stream; it is kept aside.
      await this.deps.poison.setAside(message, "calls", "undecodable", error);
      return;
    }
    const waiting: WaitingCalls[] = [];
    const done = this.deliverBatch(batch, `calls-${message.seq}`, waiting);
    if (await this.deliveredInSlot(done, waiting)) {
      message.ack();
      return;
    }
    this.awaitOutsideSlot(message, done);
  }

  /**
   * Resolves true once the batch is delivered, or false as soon as it no
   * longer needs its slot (see the class comment) and there is room to wait
   * outside it. Rejects when the delivery fails.
   */
  private async deliveredInSlot(done: Promise<void>, waiting: readonly WaitingCalls[]): Promise<boolean> {
    let finished = false;
    const ended = done.then(
      () => void (finished = true),
      () => void (finished = true),
    );
    // First look once the gates have answered the acquires that found a slot at once.
    await Promise.race([ended, nextTurn()]);
    for (;;) {
      if (finished) {
        await done; // throws if it failed: the consumer redelivers the batch
        return true;
      }
      if (this.awaiting.size < this.deps.awaitingBatches && waiting.every((w) => w.calls === 0 || w.gate.notMoving(NOT_MOVING_MS))) {
        return false;
      }
      await Promise.race([ended, sleep(CHECK_MS)]);
    }
  }

  /** Acks the batch once delivered (a failure is left to HandlingFailures), telling JetStream meanwhile that it is being worked on. */
  private awaitOutsideSlot(message: JsMsg, done: Promise<void>): void {
    const heartbeat = setInterval(() => message.working(), this.deps.heartbeatMs);
    const task: Promise<void> = done
      .then(
        () => message.ack(),
        (error: unknown) => this.deps.failures.failed(message, error),
      )
      .finally(() => {
        clearInterval(heartbeat);
        this.awaiting.delete(task);
      });
    this.awaiting.add(task);
  }

  /**
   * `origin` names the stored batch, for the ids of the calls it defers (see RetryQueue.defer).
   * `waiting` gets, per destination, the calls still waiting for a slot.
   */
  private async deliverBatch(batch: OutgoingBatch, origin: string, waiting: WaitingCalls[]): Promise<void> {
    const destinations = this.deps.workspace.webhookDestinationsOf(batch.sourceId);
    if (destinations.length === 0) return;
    const calls = batch.calls.filter((call) => webhooksEnabled(call.integrations));
    if (calls.length === 0) return;
    await Promise.all(destinations.map((destination) => this.deliverTo(destination, batch, calls, origin, waiting)));
  }

  private async deliverTo(
    destination: Destination,
    batch: OutgoingBatch,
    calls: OutgoingCall[],
    origin: string,
    waiting: WaitingCalls[],
  ): Promise<void> {
    const urlIndexes = allUrlIndexes(destination);
    const rounds = calls.map((call) =>
      firstRoundOf(call, {
        sourceId: batch.sourceId,
        destinationId: destination.id,
        urlIndexes,
        windowStart: call.receivedAt ?? batch.receivedAt ?? new Date(),
      }),
    );
    const toSend: WaitingCalls = { gate: this.deps.gates.for(destination.id), calls: rounds.length };
    waiting.push(toSend);
    const sent = await Promise.all(rounds.map((round) => firstRoundWhenFree(this.deps, round, destination, toSend)));
    const deferred = rounds.filter((_, index) => !sent[index]);
    if (deferred.length === 0) return;
    await this.defer(batch.sourceId, destination.id, deferred, origin);
  }

  /** Resolves once the calls are on the retry stream, with those other batches deferred to the destination meanwhile. */
  private defer(sourceId: string, destinationId: string, rounds: Round[], origin: string): Promise<void> {
    const key = `${sourceId}\n${destinationId}`;
    let group = this.deferrals.get(key);
    if (!group) {
      const created = new DeferralGroup(sourceId, destinationId);
      this.deferrals.set(key, created);
      setTimeout(() => this.publish(key, created), DEFER_LINGER_MS);
      group = created;
    }
    group.add(rounds, origin);
    if (group.calls.length >= MAX_DEFERRED_CALLS) this.publish(key, group);
    return group.published;
  }

  private publish(key: string, group: DeferralGroup): void {
    if (this.deferrals.get(key) !== group) return; // published already (it filled up before its time)
    this.deferrals.delete(key);
    this.deps.retryQueue.defer(group.message(), group.origin()).then(
      () => {
        this.deps.metrics.deferred(group.calls.length);
        group.stored();
      },
      (error: unknown) => group.failed(error),
    );
  }
}

/** Calls of several batches deferred to one destination, published as one DeferredCalls message. */
class DeferralGroup {
  readonly calls: Call[] = [];
  readonly published: Promise<void>;
  stored!: () => void;
  failed!: (error: unknown) => void;
  private windowStartMs = Infinity;
  private readonly origins: string[] = [];

  constructor(
    private readonly sourceId: string,
    private readonly destinationId: string,
  ) {
    this.published = new Promise((resolve, reject) => {
      this.stored = resolve;
      this.failed = reject;
    });
  }

  add(rounds: Round[], origin: string): void {
    for (const round of rounds) {
      this.calls.push(round.call.call());
      // The earliest of the calls' windows, so none of them is tried past its own.
      this.windowStartMs = Math.min(this.windowStartMs, round.windowStart.getTime());
    }
    this.origins.push(origin);
  }

  message(): DeferredCalls {
    return {
      calls: this.calls,
      sourceId: this.sourceId,
      destinationId: this.destinationId,
      windowStart: new Date(this.windowStartMs),
      notBefore: new Date(),
    };
  }

  /**
   * The stored batches whose calls these are (see RetryQueue.defer): one batch's own name, so a redo after
   * a crash is stored once; several batches are named by the first and their number (a redo that groups them
   * differently stores their calls again: delivered twice at worst, never lost).
   */
  origin(): string {
    return this.origins.length === 1 ? this.origins[0]! : `${this.origins[0]}+${this.origins.length - 1}`;
  }
}

type RoundDeps = Pick<FirstAttemptDeps, "sender" | "gates" | "settler">;

/**
 * A call's first round: a request to every URL in order, the outcome settled.
 * The slot is freed either way. A call with no body to send is dead-lettered
 * without a request.
 */
export async function firstRound(deps: RoundDeps, round: Round, destination: Destination, release: Release): Promise<void> {
  await roundInSlot(deps, round, destination, release);
}

/**
 * A first round once the destination has a free slot. Resolves false, with no
 * request made, when the destination is failing or stalls while the call
 * waits: the caller then defers the call. `waiting` (a batch's count of
 * its calls to this destination without a slot) is counted down once the
 * call has a slot or has been refused one.
 */
export function firstRoundWhenFree(deps: RoundDeps, round: Round, destination: Destination, waiting?: WaitingCalls): Promise<boolean> {
  return roundInSlot(deps, round, destination, undefined, waiting);
}

/**
 * firstRound in the slot `taken`, or, without one, firstRoundWhenFree. One
 * async function for the whole round, waiting included: every call of a
 * batch is in one while it waits for a slot, and each nested one cost its
 * own promise and suspended frame.
 */
async function roundInSlot(
  deps: RoundDeps,
  round: Round,
  destination: Destination,
  taken: Release | undefined,
  waiting?: WaitingCalls,
): Promise<boolean> {
  let release = taken;
  if (!release) {
    release = await deps.gates.for(destination.id).acquire();
    if (waiting) waiting.calls--;
    if (!release) return false;
  }
  const problem = undeliverableReason(round.call);
  if (problem !== undefined) {
    release("permanent");
    await deps.settler.deadLetter(round.task(), "undeliverable", 0, undeliverableAttempt(problem));
    return true;
  }
  let result: FanOutResult | undefined;
  try {
    result = await fanOut(deps.sender, destination, round.call, round.urlIndexes, "all");
  } finally {
    release(roundOutcome(result));
  }
  // Nothing to wait for when every request was answered 2xx (the common case).
  const settled = deps.settler.settle(round, result);
  if (settled !== SETTLED) await settled;
  return true;
}

/** How a round of requests went, for the destination's circuit breaker. */
export function roundOutcome(result: FanOutResult | undefined): AttemptOutcome {
  if (!result) return "retryable";
  if (result.delivered) return "delivered";
  return result.retryableUrlIndexes.length > 0 ? "retryable" : "permanent";
}
