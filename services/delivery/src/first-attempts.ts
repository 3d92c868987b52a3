import type { JsMsg } from "@nats-io/jetstream";
import { readCallBatch, type Call, type CallBatch, type DeliveryTask } from "@switchyard/contracts";
import type { Destination, Logger, WorkspaceView } from "@switchyard/platform";
import type { DestinationGates, Release } from "./destination-gate.js";
import { allUrlIndexes, fanOut, type FanOutResult } from "./fan-out.js";
import { webhooksEnabled } from "./integrations.js";
import type { DeliveryMetrics } from "./metrics.js";
import type { AttemptOutcome } from "./retry-policy.js";
import type { RetryQueue } from "./retry-queue.js";
import type { Settler } from "./settle.js";
import type { WebhookSender } from "./webhook-sender.js";

export interface FirstAttemptDeps {
  workspace: WorkspaceView;
  sender: WebhookSender;
  gates: DestinationGates;
  settler: Settler;
  retryQueue: RetryQueue;
  metrics: DeliveryMetrics;
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
    let batch: CallBatch;
    try {
      batch = readCallBatch(message.data);
    } catch (error) {
      // Not a CallBatch: it can never be delivered, so it must not block the stream.
      this.deps.logger.error(
        { err: error, subject: message.subject, seq: message.seq },
        "dropping an undecodable message from the calls stream",
      );
      message.term();
      return;
    }
    await this.deliverBatch(batch, `calls-${message.seq}`);
    message.ack();
  }

  /** `origin` names the stored batch, for the ids of the calls it defers (see RetryQueue.defer). */
  async deliverBatch(batch: CallBatch, origin: string): Promise<void> {
    const destinations = this.deps.workspace
      .destinationsOf(batch.sourceId)
      .filter((destination) => destination.enabled && destination.type === "webhooks");
    if (destinations.length === 0) return;
    const calls = batch.calls.filter((call) => webhooksEnabled(call.integrations));
    if (calls.length === 0) return;
    await Promise.all(destinations.map((destination) => this.deliverTo(destination, batch, calls, origin)));
  }

  private async deliverTo(destination: Destination, batch: CallBatch, calls: Call[], origin: string): Promise<void> {
    const urlIndexes = allUrlIndexes(destination);
    const tasks = calls.map((call) =>
      firstTask(call, {
        sourceId: batch.sourceId,
        destinationId: destination.id,
        urlIndexes,
        windowStart: call.receivedAt ?? batch.receivedAt ?? new Date(),
      }),
    );
    const sent = await Promise.all(tasks.map((task) => firstRoundWhenFree(this.deps, task, destination)));
    const deferred = tasks.filter((_, index) => !sent[index]);
    if (deferred.length === 0) return;
    await this.deps.retryQueue.defer(
      {
        calls: deferred.map((task) => task.call!),
        sourceId: batch.sourceId,
        destinationId: destination.id,
        // The earliest of the calls' windows, so none of them is tried past its own.
        windowStart: new Date(Math.min(...deferred.map((task) => task.windowStart!.getTime()))),
        notBefore: new Date(),
      },
      origin,
    );
    this.deps.metrics.deferred(deferred.length);
  }
}

/** A call's delivery to a destination before its first round (normally to every URL): nothing tried yet. */
export function firstTask(
  call: Call,
  to: { sourceId: string; destinationId: string; urlIndexes: number[]; windowStart: Date },
): DeliveryTask {
  return {
    call,
    ...to,
    attemptsBefore: 0,
    notBefore: undefined,
    lastFailure: undefined,
  };
}

type RoundDeps = Pick<FirstAttemptDeps, "sender" | "gates" | "settler">;

/** A call's first round: a request to every URL in order, the outcome settled. The slot is freed either way. */
export async function firstRound(deps: RoundDeps, task: DeliveryTask, destination: Destination, release: Release): Promise<void> {
  let result: FanOutResult | undefined;
  try {
    result = await fanOut(deps.sender, destination, task.call!, task.urlIndexes, "all");
  } finally {
    release(roundOutcome(result));
  }
  await deps.settler.settle(task, result);
}

/**
 * A first round once the destination has a free slot. Resolves false, with no
 * request made, when the destination is failing or stalls while the call
 * waits: the caller then defers the call.
 */
export async function firstRoundWhenFree(deps: RoundDeps, task: DeliveryTask, destination: Destination): Promise<boolean> {
  const release = await deps.gates.for(destination.id).acquire();
  if (!release) return false;
  await firstRound(deps, task, destination, release);
  return true;
}

/** How a round of requests went, for the destination's circuit breaker. */
export function roundOutcome(result: FanOutResult | undefined): AttemptOutcome {
  if (!result) return "retryable";
  if (result.delivered) return "delivered";
  return result.retryableUrlIndexes.length > 0 ? "retryable" : "permanent";
}
