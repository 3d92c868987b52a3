import type { JetStreamClient } from "@nats-io/jetstream";
import { DeliveryTask } from "@switchyard/contracts";
import type { BusNames } from "@switchyard/platform";
import { typeHeaders } from "./bus-codec.js";

/**
 * Puts a delivery on the retry stream. The message id names the call, the
 * destination and the attempt count, so a task re-published after a crash is
 * stored once.
 */
export class RetryQueue {
  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
  ) {}

  async schedule(task: DeliveryTask, idSuffix = String(task.attemptsBefore)): Promise<void> {
    await this.js.publish(this.names.retrySubject(task.destinationId), DeliveryTask.encode(task).finish(), {
      msgID: `${task.call?.messageId ?? ""}:${task.destinationId}:${idSuffix}`,
      headers: typeHeaders("switchyard.v1.DeliveryTask"),
    });
  }
}
