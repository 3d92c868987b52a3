import type { MsgHdrs } from "@nats-io/nats-core";
import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import {
  BUS_MESSAGE_TYPE_HEADER,
  BUS_MESSAGE_TYPE_NAMES,
  RETRY_HEADERS,
  busMessageHeaders,
  headerSafeId,
  type BusMessageType,
  type BusNames,
} from "@switchyard/bus";
import { Call, DeferredCalls, DeliveryTask } from "@switchyard/contracts";
import { lengthDelimitedSize, writeLengthDelimitedHeader } from "@switchyard/wire";

/*
 * A task's schedule is repeated in headers of its retry message (RETRY_HEADERS),
 * so a task that is not due, or whose destination is failing, can be parked
 * again without decoding the calls it carries: parked tasks come back many
 * times, and decoding a call's free-form objects is the costliest step the
 * retry path could repeat.
 */
const TASK_TYPE = BUS_MESSAGE_TYPE_NAMES.deliveryTask;
const DEFERRED_TYPE = BUS_MESSAGE_TYPE_NAMES.deferredCalls;

/** When a task may be tried and where its retry window starts (undefined: now). */
export interface TaskTiming {
  destinationId: string;
  notBeforeMs: number | undefined;
  windowStartMs: number | undefined;
}

/**
 * Calls deferred together, each a decoded Call or its switchyard.v1.Call bytes as stored: a call
 * deferred from a stored batch is copied, not decoded (decoding its free-form objects would be
 * the costliest part of deferring it, most of all in a process whose decoder has not run yet).
 */
export type Deferral = Omit<DeferredCalls, "calls"> & { calls: readonly (Call | Uint8Array)[] };

/** What a retry message holds: one call with its history, or calls deferred before their first request. */
export type RetryWork = { kind: "task"; task: DeliveryTask } | { kind: "deferred"; group: DeferredCalls };

/**
 * Puts deliveries on the retry stream. Message ids are stable across a crash
 * and a redo of the same work, so work re-published after a crash is stored once.
 */
export class RetryQueue {
  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
  ) {}

  /**
   * One call after a failed round (or a replayed dead letter). The id names
   * the call, the destination, the retry window and the attempt count: a redo
   * of the same round after a crash repeats it, while a replayed dead letter,
   * which starts a new window at attempt 0, does not collide with the retries
   * of its first run inside the duplicate window (JetStream would drop it).
   */
  async schedule(task: DeliveryTask, idSuffix = `${task.windowStart?.getTime() ?? ""}:${task.attemptsBefore}`): Promise<void> {
    await this.js.publish(this.names.retrySubject(task.destinationId), DeliveryTask.encode(task).finish(), {
      msgID: `${headerSafeId(task.call?.messageId ?? "")}:${task.destinationId}:${idSuffix}`,
      headers: timingHeaders(TASK_TYPE, task),
    });
  }

  /**
   * Calls deferred before any request, as one message. `origin` names the
   * stored message whose handling deferred them (a calls-stream batch or a
   * retry-stream group, by stream sequence): handled again after a crash, it
   * defers the same calls under the same id, which JetStream then drops.
   */
  async defer(group: Deferral, origin: string): Promise<void> {
    await this.js.publish(this.names.retrySubject(group.destinationId), encodeDeferral(group), {
      msgID: `deferred:${group.destinationId}:${origin}`,
      headers: timingHeaders(DEFERRED_TYPE, group),
    });
  }
}

/** DeferredCalls' `calls` field (delivery.proto). */
const CALLS_FIELD = 1;

/**
 * A Deferral as switchyard.v1.DeferredCalls bytes: its other fields through the generated encoder,
 * then each call as a `calls` field. Protobuf readers take fields in any order and keep a repeated
 * field's in theirs, so this decodes as the generated encoder's bytes would.
 */
export function encodeDeferral(group: Deferral): Uint8Array {
  const head = DeferredCalls.encode({ ...group, calls: [] }).finish();
  const calls = group.calls.map((call) => (call instanceof Uint8Array ? call : Call.encode(call).finish()));
  let size = head.length;
  for (const call of calls) size += lengthDelimitedSize(CALLS_FIELD, call.length);
  const out = Buffer.allocUnsafe(size);
  out.set(head, 0);
  let at = head.length;
  for (const call of calls) {
    at = writeLengthDelimitedHeader(out, at, CALLS_FIELD, call.length);
    out.set(call, at);
    at += call.length;
  }
  return out;
}

function timingHeaders(
  type: BusMessageType,
  work: { destinationId: string; notBefore?: Date | undefined; windowStart?: Date | undefined },
): MsgHdrs {
  const headers = busMessageHeaders(type);
  headers.set(RETRY_HEADERS.destination, work.destinationId);
  if (work.notBefore) headers.set(RETRY_HEADERS.notBefore, String(work.notBefore.getTime()));
  if (work.windowStart) headers.set(RETRY_HEADERS.windowStart, String(work.windowStart.getTime()));
  return headers;
}

/** The timing from a retry message's headers; undefined when it has none (published by an older version). */
export function timingFromHeaders(message: JsMsg): TaskTiming | undefined {
  const headers = message.headers;
  const destinationId = headers?.get(RETRY_HEADERS.destination);
  if (!headers || !destinationId) return undefined;
  return {
    destinationId,
    notBeforeMs: millisHeader(headers.get(RETRY_HEADERS.notBefore)),
    windowStartMs: millisHeader(headers.get(RETRY_HEADERS.windowStart)),
  };
}

/** The timing of decoded work. */
export function timingOf(work: RetryWork): TaskTiming {
  const { destinationId, notBefore, windowStart } = work.kind === "task" ? work.task : work.group;
  return { destinationId, notBeforeMs: notBefore?.getTime(), windowStartMs: windowStart?.getTime() };
}

/** Decodes a retry message by its type header (a message without one is a task, from an older version). Throws on bad bytes. */
export function decodeRetryWork(message: JsMsg): RetryWork {
  if (message.headers?.get(BUS_MESSAGE_TYPE_HEADER) === DEFERRED_TYPE) {
    return { kind: "deferred", group: DeferredCalls.decode(message.data) };
  }
  return { kind: "task", task: DeliveryTask.decode(message.data) };
}

function millisHeader(text: string): number | undefined {
  const value = Number(text);
  return text !== "" && Number.isFinite(value) ? value : undefined;
}
