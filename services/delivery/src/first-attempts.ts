import type { JsMsg } from "@nats-io/jetstream";
import type { Destination, Logger, WorkspaceView } from "@switchyard/platform";
import type { DestinationGates, Release } from "./destination-gate.js";
import { allUrlIndexes, fanOut, type FanOutResult } from "./fan-out.js";
import { webhooksEnabled } from "./integrations.js";
import type { DeliveryMetrics } from "./metrics.js";
import { readOutgoingBatch, undeliverableReason, type OutgoingBatch, type OutgoingCall } from "./outgoing-calls.js";
import type { AttemptOutcome } from "./retry-policy.js";
import type { PoisonMessages } from "./poison.js";
import type { RetryQueue } from "./retry-queue.js";
import { firstRoundOf, type Round } from "./round.js";
import { undeliverableAttempt, type Settler } from "./settle.js";
import type { WebhookSender } from "./webhook-sender.js";

export interface FirstAttemptDeps {
  workspace: WorkspaceView;
  sender: WebhookSender;
  gates: DestinationGates;
  settler: Settler;
  retryQueue: RetryQueue;
  metrics: DeliveryMetrics;
  poison: PoisonMessages;
  logger: Logger;
}

/**
 * Handles a batch from the calls stream: every call goes to every connected,
 * enabled webhook destination its integrations allow, inline. A destination
 * that is failing or has stalled gets no requests: its calls of the batch go
 * to the retry path together, as one DeferredCalls message. The batch is
 * acked once each delivery is done or durably handed to the retry path, so a
 * crash before that redelivers the batch (at-least-once).
 */
export class FirstAttempts {
  constructor(private readonly deps: FirstAttemptDeps) {}

  async handle(message: JsMsg): Promise<void> {
    let batch: OutgoingBatch;
    try {
      batch = readOutgoingBatch(message.data);
    } catch (error) {
      // Not a CallBatch: it can never be delivered, so it must not block the stream; it is kept aside.
      await this.deps.poison.setAside(message, "calls", "undecodable", error);
      return;
    }
    await this.deliverBatch(batch, `calls-${message.seq}`);
    message.ack();
  }

  /** `origin` names the stored batch, for the ids of the calls it defers (see RetryQueue.defer). */
  private async deliverBatch(batch: OutgoingBatch, origin: string): Promise<void> {
    const destinations = this.deps.workspace
      .destinationsOf(batch.sourceId)
      .filter((destination) => destination.enabled && destination.type === "webhooks");
    if (destinations.length === 0) return;
    const calls = batch.calls.filter((call) => webhooksEnabled(call.integrations));
    if (calls.length === 0) return;
    await Promise.all(destinations.map((destination) => this.deliverTo(destination, batch, calls, origin)));
  }

  private async deliverTo(destination: Destination, batch: OutgoingBatch, calls: OutgoingCall[], origin: string): Promise<void> {
    const urlIndexes = allUrlIndexes(destination);
    const rounds = calls.map((call) =>
      firstRoundOf(call, {
        sourceId: batch.sourceId,
        destinationId: destination.id,
        urlIndexes,
        windowStart: call.receivedAt ?? batch.receivedAt ?? new Date(),
      }),
    );
    const sent = await Promise.all(rounds.map((round) => firstRoundWhenFree(this.deps, round, destination)));
    const deferred = rounds.filter((_, index) => !sent[index]);
    if (deferred.length === 0) return;
    await this.deps.retryQueue.defer(
      {
        calls: deferred.map((round) => round.call.call()),
        sourceId: batch.sourceId,
        destinationId: destination.id,
        // The earliest of the calls' windows, so none of them is tried past its own.
        windowStart: new Date(Math.min(...deferred.map((round) => round.windowStart.getTime()))),
        notBefore: new Date(),
      },
      origin,
    );
    this.deps.metrics.deferred(deferred.length);
  }
}

type RoundDeps = Pick<FirstAttemptDeps, "sender" | "gates" | "settler">;

/**
 * A call's first round: a request to every URL in order, the outcome settled.
 * The slot is freed either way. A call with no body to send is dead-lettered
 * without a request.
 */
export async function firstRound(deps: RoundDeps, round: Round, destination: Destination, release: Release): Promise<void> {
  const problem = undeliverableReason(round.call);
  if (problem !== undefined) {
    release("permanent");
    await deps.settler.deadLetter(round.task(), "undeliverable", 0, undeliverableAttempt(problem));
    return;
  }
  let result: FanOutResult | undefined;
  try {
    result = await fanOut(deps.sender, destination, round.call, round.urlIndexes, "all");
  } finally {
    release(roundOutcome(result));
  }
  await deps.settler.settle(round, result);
}

/**
 * A first round once the destination has a free slot. Resolves false, with no
 * request made, when the destination is failing or stalls while the call
 * waits: the caller then defers the call.
 */
export async function firstRoundWhenFree(deps: RoundDeps, round: Round, destination: Destination): Promise<boolean> {
  const release = await deps.gates.for(destination.id).acquire();
  if (!release) return false;
  await firstRound(deps, round, destination, release);
  return true;
}

/** How a round of requests went, for the destination's circuit breaker. */
export function roundOutcome(result: FanOutResult | undefined): AttemptOutcome {
  if (!result) return "retryable";
  if (result.delivered) return "delivered";
  return result.retryableUrlIndexes.length > 0 ? "retryable" : "permanent";
}
