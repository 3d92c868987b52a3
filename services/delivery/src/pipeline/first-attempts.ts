import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import type { JsMsg } from "@nats-io/jetstream";
import type { CallRoute, Destination, Masker, WorkspaceView } from "@switchyard/workspace";
import type { Logger } from "@switchyard/platform";
import { callMatches } from "./call-filter.js";
import type { DestinationGate, DestinationGates, Release } from "./destination-gate.js";
import { kindOf, requestsOf, type DestinationKind, type RoundResult } from "../kinds/index.js";
import type { DeliveryMetrics } from "../metrics.js";
import { batchSourceId, readDecodedBatch, readOutgoingBatch, type OutgoingBatch, type OutgoingCall } from "./outgoing-calls.js";
import type { AttemptOutcome } from "../retries/retry-policy.js";
import type { HandlingFailures } from "./handling-failures.js";
import { OutcomeTally, type OutcomeReports } from "./outcome-reports.js";
import type { PoisonMessages } from "../retries/poison.js";
import type { Deferral, RetryQueue } from "../retries/retry-queue.js";
import { callsPerTurn, isLate, TURN_LEAD_MS, waitUntil, type Pace, type RateLimits } from "./rate-limits.js";
import { firstRoundOf, type Round } from "./round.js";
import { SETTLED, undeliverableAttempt, type Settler } from "./settle.js";
import type { Sender } from "../outbound/webhook-sender.js";

/** What both delivery loops (first attempts and retries) work with. */
export interface DeliveryDeps {
  workspace: WorkspaceView;
  sender: Sender;
  /** Masks header and query values for the attempt log and dead letters, as ConfigService reads do. */
  masker: Masker;
  gates: DestinationGates;
  /** Rate-limited destinations' shared send schedules. */
  rateLimits: RateLimits;
  settler: Settler;
  retryQueue: RetryQueue;
  metrics: DeliveryMetrics;
  poison: PoisonMessages;
  /** Where what became of each handled message's calls is reported, per destination. */
  reports: OutcomeReports;
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
 * and a failing destination, one message per batch would mean hundreds of
 * publishes a second, each parked message coming back every cool-down: CPU
 * for the bus and this process that the healthy destinations would lack.
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
 * has stopped freeing slots or is behind its calls (DestinationGate.behind),
 * the batch waits for its outcomes outside the slot, still unacked and
 * heartbeated, so the consumer takes the next batch:
 * a receiver that never answers holds its own requests for the whole timeout,
 * but no slot that the healthy destinations' next calls need. At most
 * `awaitingBatches` wait that way; beyond that a batch keeps its slot, except
 * that the calls waiting at destinations that are behind go to the retry path.
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
      // The webhook body is written from the stored bytes only when one of the source's destinations sends it.
      const routes = this.deps.workspace.routesOf(batchSourceId(message.data));
      const bodies = routes.length === 0 || routes.some((route) => kindOf(route.destination).sendsWebhookBody);
      batch = bodies ? readOutgoingBatch(message.data) : readDecodedBatch(message.data);
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
      if (waiting.every((w) => w.calls === 0 || w.gate.notMoving(NOT_MOVING_MS) || w.gate.behind())) {
        if (this.awaiting.size < this.deps.awaitingBatches) return false;
        // No room to wait outside the slot: the calls waiting at a destination that is behind go to
        // the retry path, rather than let that destination's pace hold the slot (and so every
        // other's). All of them: the batches waiting outside for them then finish and make room,
        // where shedding only this batch's calls kept the room full and each batch in its slot
        // for the deferral's 100 ms.
        for (const w of waiting) if (w.calls > 0 && w.gate.behind()) w.gate.shedWaiters();
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
    const routes = this.deps.workspace.routesOf(batch.sourceId);
    if (routes.length === 0) return;
    // The calls each kind takes, found once per batch whatever the number of its destinations.
    const callsOfKind = new Map<DestinationKind, OutgoingCall[]>();
    const deliveries: Promise<void>[] = [];
    for (const route of routes) {
      const kind = kindOf(route.destination);
      let calls = callsOfKind.get(kind);
      if (!calls) {
        calls = batch.calls.filter((call) => kind.enabledFor(call.integrations));
        callsOfKind.set(kind, calls);
      }
      if (calls.length > 0) deliveries.push(this.deliverTo(route, batch, calls, origin, waiting));
    }
    await Promise.all(deliveries);
  }

  /**
   * The batch's calls to one destination: those its filter matches (the others are counted as
   * filtered, and that is all that becomes of them), then a report of what came of them, before
   * the batch is acked.
   */
  private async deliverTo(
    { destination, filter }: CallRoute,
    batch: OutgoingBatch,
    calls: OutgoingCall[],
    origin: string,
    waiting: WaitingCalls[],
  ): Promise<void> {
    const tally = new OutcomeTally(batch.sourceId, destination.id);
    const kind = kindOf(destination);
    const rounds: Round[] = [];
    for (const call of calls) {
      if (filter && !callMatches(filter, call)) continue;
      // A kind whose targets choose their calls (the Actions kind's triggers) may take none of it: filtered too.
      const targetIndexes = kind.targetsOf(destination, call);
      if (targetIndexes.length === 0) continue;
      const windowStart = call.receivedAt ?? batch.receivedAt ?? new Date();
      rounds.push(firstRoundOf(call, { sourceId: batch.sourceId, destinationId: destination.id, targetIndexes, windowStart }, tally));
    }
    if (rounds.length < calls.length) {
      tally.filtered = calls.length - rounds.length;
      this.deps.metrics.filtered(tally.filtered);
    }
    const toSend: WaitingCalls = { gate: this.deps.gates.for(destination.id), calls: rounds.length };
    waiting.push(toSend);
    if (destination.maxRequestsPerSecond !== undefined) {
      await this.deliverPaced(destination, destination.maxRequestsPerSecond, batch.sourceId, rounds, origin, toSend);
      await this.deps.reports.publish(tally, origin);
      return;
    }
    const sent = await Promise.all(rounds.map((round) => firstRoundWhenFree(this.deps, round, destination, toSend)));
    const deferred = rounds.filter((_, index) => !sent[index]);
    if (deferred.length > 0) await this.defer(batch.sourceId, destination.id, deferred, origin);
    await this.deps.reports.publish(tally, origin);
  }

  /**
   * First attempts to a rate-limited destination: each call claims its
   * requests' slots; calls with a slot within FIRST_ATTEMPT_HORIZON_MS wait
   * for it (their batch need not keep its batch slot meanwhile), the others
   * are deferred at once to the waiting room, and so are calls the gate
   * refuses once their slot came (failing or stalled). The two deferrals are
   * named apart (`origin` and `origin.late`) so neither is taken for a repeat of the other.
   */
  private async deliverPaced(
    destination: Destination,
    limit: number,
    sourceId: string,
    rounds: Round[],
    origin: string,
    toSend: WaitingCalls,
  ): Promise<void> {
    const kind = kindOf(destination);
    // A round whose requests all go in batches claims nothing here: its batch claims its own turn.
    const requests = rounds.map((round) => requestsOf(kind, destination, round.targetIndexes));
    const slots = await Promise.all(
      requests.map((count) =>
        count === 0 ? Promise.resolve(Date.now()) : this.deps.rateLimits.firstAttempt(destination.id, limit, count),
      ),
    );
    toSend.calls = 0;
    const intervalMs = 1000 / limit;
    const send = async () => {
      const sending = rounds.flatMap((round, index) => {
        const at = slots[index];
        if (at === undefined) return [];
        const sent =
          requests[index] === 0
            ? firstRoundWhenFree(this.deps, round, destination)
            : pacedRound(this.deps, round, destination, { at, intervalMs });
        return [{ round, sent }];
      });
      const sent = await Promise.all(sending.map((s) => s.sent));
      const refused = sending.filter((_, index) => !sent[index]).map((s) => s.round);
      if (refused.length > 0) await this.defer(sourceId, destination.id, refused, `${origin}.late`);
    };
    const booked = rounds.filter((_, index) => slots[index] === undefined);
    await Promise.all([booked.length > 0 ? this.defer(sourceId, destination.id, booked, origin) : undefined, send()]);
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
    const destination = this.deps.workspace.destination(group.destinationId);
    const stored =
      destination?.maxRequestsPerSecond !== undefined
        ? this.deferToWaitingRoom(group, destination.maxRequestsPerSecond, kindOf(destination).targets(destination).length)
        : this.deps.retryQueue.defer(group.message(), group.origin());
    stored.then(
      () => {
        this.deps.metrics.deferred(group.calls.length);
        group.stored();
      },
      (error: unknown) => group.failed(error),
    );
  }

  /**
   * Calls deferred to a rate-limited destination take places in its waiting
   * room, in groups of about a second of its slots each (callsPerTurn); each
   * group comes back TURN_LEAD_MS before its place. Their retry window starts
   * at their place: waiting for the limit does not use it up.
   */
  private async deferToWaitingRoom(group: DeferralGroup, limit: number, targets: number): Promise<void> {
    const parts = group.parts(callsPerTurn(limit, targets));
    const places = await this.deps.rateLimits.places(
      group.destinationId,
      limit,
      parts.map((calls) => calls.length * targets),
    );
    await Promise.all(
      parts.map((calls, index) => this.deps.retryQueue.defer(group.message(calls, places[index]!), `${group.origin()}#${index}`)),
    );
    this.deps.metrics.rateLimited(group.calls.length);
  }
}

/** Calls of several batches deferred to one destination, published as one DeferredCalls message. */
class DeferralGroup {
  /** The calls' bytes as stored (see Deferral). */
  readonly calls: Uint8Array[] = [];
  readonly published: Promise<void>;
  stored!: () => void;
  failed!: (error: unknown) => void;
  private windowStartMs = Infinity;
  private readonly origins: string[] = [];

  constructor(
    private readonly sourceId: string,
    readonly destinationId: string,
  ) {
    this.published = new Promise((resolve, reject) => {
      this.stored = resolve;
      this.failed = reject;
    });
  }

  add(rounds: Round[], origin: string): void {
    for (const round of rounds) {
      this.calls.push(round.call.encoded());
      // The earliest of the calls' windows, so none of them is tried past its own.
      this.windowStartMs = Math.min(this.windowStartMs, round.windowStart.getTime());
    }
    this.origins.push(origin);
  }

  /** The calls as one message, due now; or some of them (`calls`) with a place in a waiting room (see FirstAttempts.deferToWaitingRoom). */
  message(calls: Uint8Array[] = this.calls, place?: number): Deferral {
    return {
      calls,
      sourceId: this.sourceId,
      destinationId: this.destinationId,
      windowStart: new Date(place === undefined ? this.windowStartMs : Math.max(this.windowStartMs, place)),
      notBefore: new Date(place === undefined ? Date.now() : place - TURN_LEAD_MS),
    };
  }

  /** The calls in order, cut into parts of `size` at most. */
  parts(size: number): Uint8Array[][] {
    const parts: Uint8Array[][] = [];
    for (let first = 0; first < this.calls.length; first += size) parts.push(this.calls.slice(first, first + size));
    return parts;
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

type RoundDeps = Pick<FirstAttemptDeps, "sender" | "masker" | "gates" | "rateLimits" | "settler">;

/**
 * A call's first round: a request to every URL in order, the outcome settled.
 * The slot is freed either way. A call with no body to send is dead-lettered
 * without a request.
 */
export async function firstRound(deps: RoundDeps, round: Round, destination: Destination, release: Release, pace?: Pace): Promise<void> {
  await roundInSlot(deps, round, destination, release, undefined, pace);
}

/**
 * A first round to a rate-limited destination on the slots claimed for it:
 * once its first slot has come, it waits for a free request slot like any
 * first attempt. Resolves false, with no request made, when the destination
 * is failing or stalls meanwhile, or the slot was missed (see LATE_MS): the
 * slots then pass unused.
 */
export async function pacedRound(deps: RoundDeps, round: Round, destination: Destination, pace: Pace): Promise<boolean> {
  await waitUntil(pace.at);
  const release = await deps.gates.for(destination.id).acquire();
  if (!release) return false;
  if (isLate(pace)) {
    release("unused");
    return false;
  }
  await firstRound(deps, round, destination, release, pace);
  return true;
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
  pace?: Pace,
): Promise<boolean> {
  const kind = kindOf(destination);
  let release = taken;
  if (requestsOf(kind, destination, round.targetIndexes) === 0) {
    // Its requests go in batches, each taking a slot (or the probe) as it goes: the call waits in its batch without one.
    taken?.("unused");
    release = NO_SLOT;
    if (waiting) waiting.calls--;
  }
  if (!release) {
    release = await deps.gates.for(destination.id).acquire();
    if (waiting) waiting.calls--;
    if (!release) return false;
  }
  const problem = kind.undeliverable(round.call);
  if (problem !== undefined) {
    release("permanent");
    await deps.settler.deadLetter(round.task(), "undeliverable", 0, undeliverableAttempt(problem), round.tally);
    return true;
  }
  let result: RoundResult | undefined;
  try {
    result = await kind.send(deps, destination, round.call, round.targetIndexes, "all", pace);
  } finally {
    release(roundOutcome(result));
  }
  // Nothing to wait for when every request was answered 2xx (the common case).
  const settled = deps.settler.settle(round, result);
  if (settled !== SETTLED) await settled;
  return true;
}

/** The release of a round that holds no slot. */
const NO_SLOT: Release = () => undefined;

/** How a round of requests went, for the destination's circuit breaker. */
export function roundOutcome(result: RoundResult | undefined): AttemptOutcome {
  if (!result) return "retryable";
  if (result.delivered) return "delivered";
  return result.retryableUrlIndexes.length > 0 ? "retryable" : "permanent";
}
