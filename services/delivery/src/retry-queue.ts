import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import { DeliveryTask } from "@switchyard/contracts";
import type { BusNames } from "@switchyard/platform";
import { typeHeaders } from "./bus-codec.js";

/**
 * A task's schedule, repeated in headers of its retry message (milliseconds
 * since the epoch), so a task that is not due, or whose destination is
 * failing, can be parked again without decoding the call it carries: parked
 * tasks come back many times, and decoding a call's free-form objects each
 * time cost more CPU than anything else the retry path did.
 */
const DESTINATION_HEADER = "Switchyard-Destination";
const NOT_BEFORE_HEADER = "Switchyard-Not-Before";
const WINDOW_START_HEADER = "Switchyard-Window-Start";

/** When a task may be tried and where its retry window starts (undefined: now). */
export interface TaskTiming {
  destinationId: string;
  notBeforeMs: number | undefined;
  windowStartMs: number | undefined;
}

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
    const headers = typeHeaders("switchyard.v1.DeliveryTask");
    headers.set(DESTINATION_HEADER, task.destinationId);
    if (task.notBefore) headers.set(NOT_BEFORE_HEADER, String(task.notBefore.getTime()));
    if (task.windowStart) headers.set(WINDOW_START_HEADER, String(task.windowStart.getTime()));
    await this.js.publish(this.names.retrySubject(task.destinationId), DeliveryTask.encode(task).finish(), {
      msgID: `${task.call?.messageId ?? ""}:${task.destinationId}:${idSuffix}`,
      headers,
    });
  }
}

/** The timing from a retry message's headers; undefined when it has none (published by an older version). */
export function timingFromHeaders(message: JsMsg): TaskTiming | undefined {
  const headers = message.headers;
  const destinationId = headers?.get(DESTINATION_HEADER);
  if (!headers || !destinationId) return undefined;
  return {
    destinationId,
    notBeforeMs: millisHeader(headers.get(NOT_BEFORE_HEADER)),
    windowStartMs: millisHeader(headers.get(WINDOW_START_HEADER)),
  };
}

/** The timing of a decoded task. */
export function timingOf(task: DeliveryTask): TaskTiming {
  return { destinationId: task.destinationId, notBeforeMs: task.notBefore?.getTime(), windowStartMs: task.windowStart?.getTime() };
}

function millisHeader(text: string): number | undefined {
  const value = Number(text);
  return text !== "" && Number.isFinite(value) ? value : undefined;
}
