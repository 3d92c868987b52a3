import type { JsMsg } from "@nats-io/jetstream";
import { CallBatch, type Call, type DeliveryTask } from "@switchyard/contracts";
import type { Destination, Logger, WorkspaceView } from "@switchyard/platform";
import type { DestinationGates } from "./destination-gate.js";
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
 * enabled webhook destination its integrations allow, inline. The batch is
 * acked once each of those deliveries is done or durably handed to the retry
 * path, so a crash before that redelivers the batch (at-least-once).
 */
export class FirstAttempts {
  constructor(private readonly deps: FirstAttemptDeps) {}

  async handle(message: JsMsg): Promise<void> {
    let batch: CallBatch;
    try {
      batch = CallBatch.decode(message.data);
    } catch (error) {
      // Not a CallBatch: it can never be delivered, so it must not block the stream.
      this.deps.logger.error(
        { err: error, subject: message.subject, seq: message.seq },
        "dropping an undecodable message from the calls stream",
      );
      message.term();
      return;
    }
    await this.deliverBatch(batch);
    message.ack();
  }

  async deliverBatch(batch: CallBatch): Promise<void> {
    const destinations = this.deps.workspace
      .destinationsOf(batch.sourceId)
      .filter((destination) => destination.enabled && destination.type === "webhooks");
    if (destinations.length === 0) return;
    const deliveries: Promise<void>[] = [];
    for (const call of batch.calls) {
      if (!webhooksEnabled(call.integrations)) continue;
      for (const destination of destinations) deliveries.push(this.deliver(batch, call, destination));
    }
    await Promise.all(deliveries);
  }

  private async deliver(batch: CallBatch, call: Call, destination: Destination): Promise<void> {
    const task: DeliveryTask = {
      call,
      sourceId: batch.sourceId,
      destinationId: destination.id,
      urlIndexes: allUrlIndexes(destination),
      windowStart: call.receivedAt ?? batch.receivedAt ?? new Date(),
      attemptsBefore: 0,
      notBefore: undefined,
      lastFailure: undefined,
    };
    const release = await this.deps.gates.for(destination.id).acquire();
    if (!release) {
      // The destination is failing: its calls wait on the retry path, not in this batch.
      await this.deps.retryQueue.schedule({ ...task, notBefore: new Date() });
      this.deps.metrics.deferred();
      return;
    }
    let result: FanOutResult | undefined;
    try {
      result = await fanOut(this.deps.sender, destination, call, task.urlIndexes, "all");
    } finally {
      release(roundOutcome(result));
    }
    await this.deps.settler.settle(task, result);
  }
}

/** How a round of requests went, for the destination's circuit breaker. */
export function roundOutcome(result: FanOutResult | undefined): AttemptOutcome {
  if (!result) return "retryable";
  if (result.delivered) return "delivered";
  return result.retryableUrlIndexes.length > 0 ? "retryable" : "permanent";
}
