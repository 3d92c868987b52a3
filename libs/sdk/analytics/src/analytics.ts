import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { ClientUnaryCall, ServiceError } from "@grpc/grpc-js";
import type { IngestBatchResponse } from "@switchyard/contracts";
import { messageIdOf } from "@switchyard/wire";
import { ClosedError, QueueFullError } from "./errors.js";
import { unregisterBeforeExit, registerBeforeExit } from "./exit-hook.js";
import type { AliasMessage, CallType, GroupMessage, IdentifyMessage, PageMessage, ScreenMessage, TrackMessage } from "./messages.js";
import { resolveOptions, type AnalyticsOptions, type ResolvedOptions } from "./options.js";
import type { AnalyticsEvents, CloseResult, FailureReason, OutcomeCallback } from "./outcomes.js";
import { prepareCall } from "./prepare-call.js";
import { CallQueue, encodeBatchRequest, QueuedCall, takeBatch } from "./queue.js";
import { isRetryable, retryDelay } from "./retry.js";
import { IngestTransport, statusName } from "./transport.js";

/** A batch from its first send until it is settled. Its id and bytes stay the same across retries. */
interface Batch {
  readonly id: string;
  readonly calls: QueuedCall[];
  readonly request: Buffer;
  readonly bytes: number;
  retries: number;
  firstSentAt: number;
  /** The request waiting for its answer, if any. */
  call: ClientUnaryCall | undefined;
  /** The timer of the next retry, if one is scheduled. */
  retryTimer: NodeJS.Timeout | undefined;
}

/** Counts of what the client holds right now. */
export interface AnalyticsStats {
  /** Calls waiting in the queue (not yet in a batch). */
  queued: number;
  /** Batches being sent or waiting to be retried. */
  batchesInFlight: number;
  /** Every call not settled yet: queued, being sent or waiting to be retried. */
  unsettled: number;
}

/**
 * Switchyard's client: validates each call when it is made, queues it in
 * memory as protobuf bytes, and sends batches in the background over gRPC to
 * the ingest service, retrying what can be retried with the same batch id.
 *
 * Outcomes are reported per message (the optional callback of each call) and
 * as typed events ("delivered", "failed"); close() reports every message it
 * could not deliver. Nothing is dropped silently.
 */
export class Analytics extends EventEmitter<AnalyticsEvents> {
  private readonly options: ResolvedOptions;
  private readonly transport: IngestTransport;
  private readonly queue = new CallQueue();
  private readonly batches = new Set<Batch>();
  private lastSeq = 0;
  /** Calls with seq up to this are sent even when fewer than flushAt are queued. */
  private flushThroughSeq = 0;
  private unsettledCalls = 0;
  private unsettledBytes = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  /** When a batch last went out (or the client was made): flushAfter counts from here. */
  private lastFlushAt = Date.now();
  /** Keeps the process alive while a request is out (the gRPC socket alone may not). */
  private keepAlive: NodeJS.Timeout | undefined;
  private flushWaiters: { throughSeq: number; resolve: () => void }[] = [];
  private closing = false;
  private closeResult: Promise<CloseResult> | undefined;
  private closeCollector: CloseResult | undefined;

  /**
   * @param writeKey the source's write key; sent as HTTP Basic credentials, never logged.
   * @param options see AnalyticsOptions; all optional.
   */
  constructor(writeKey: string, options: AnalyticsOptions = {}) {
    super();
    if (typeof writeKey !== "string" || writeKey === "") throw new TypeError("writeKey: must be a non-empty string");
    this.options = resolveOptions(options);
    this.transport = new IngestTransport(writeKey, this.options);
    registerBeforeExit(this);
    this.debug("client ready", { endpoint: this.options.target, tls: this.options.tls !== false, flushAt: this.options.flushAt });
  }

  /** Who the user is. Returns the call's messageId. */
  identify(message: IdentifyMessage, callback?: OutcomeCallback): string {
    return this.enqueue("identify", message, callback);
  }

  /** Something the user did. Returns the call's messageId. */
  track(message: TrackMessage, callback?: OutcomeCallback): string {
    return this.enqueue("track", message, callback);
  }

  /** A web page view. Returns the call's messageId. */
  page(message: PageMessage, callback?: OutcomeCallback): string {
    return this.enqueue("page", message, callback);
  }

  /** A mobile screen view. Returns the call's messageId. */
  screen(message: ScreenMessage, callback?: OutcomeCallback): string {
    return this.enqueue("screen", message, callback);
  }

  /** The user's membership of a group. Returns the call's messageId. */
  group(message: GroupMessage, callback?: OutcomeCallback): string {
    return this.enqueue("group", message, callback);
  }

  /** Links a previous identity to `userId`. Returns the call's messageId. */
  alias(message: AliasMessage, callback?: OutcomeCallback): string {
    return this.enqueue("alias", message, callback);
  }

  /** What the client holds right now. */
  stats(): AnalyticsStats {
    return { queued: this.queue.length, batchesInFlight: this.batches.size, unsettled: this.unsettledCalls };
  }

  /**
   * Sends everything queued now, and resolves once every call made before it
   * is settled: delivered, or failed for good (see the "failed" event).
   */
  async flush(): Promise<void> {
    const throughSeq = this.lastSeq;
    this.flushThroughSeq = throughSeq;
    this.pump();
    await this.settledThrough(throughSeq);
  }

  /**
   * Flushes, waits for batches being sent or retried, and stops the client.
   * Resolves within `timeoutMs` (default: the closeTimeout option) with the
   * fate of every message that was not settled when close() was called;
   * messages still unsent then are reported with kind "close_timeout".
   * Calls made after close() throw ClosedError.
   */
  close(timeoutMs: number = this.options.closeTimeout): Promise<CloseResult> {
    this.closeResult ??= this.shutDown(timeoutMs);
    return this.closeResult;
  }

  private async shutDown(timeoutMs: number): Promise<CloseResult> {
    this.closing = true;
    const result: CloseResult = { delivered: [], notDelivered: [] };
    this.closeCollector = result;
    this.debug("closing", { unsettled: this.unsettledCalls, timeoutMs });
    const throughSeq = this.lastSeq;
    this.flushThroughSeq = throughSeq;
    this.pump();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.settledThrough(throughSeq).then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) this.abandonEverything();
    this.clearFlushTimer();
    this.transport.close();
    unregisterBeforeExit(this);
    this.closeCollector = undefined;
    this.debug("closed", { delivered: result.delivered.length, notDelivered: result.notDelivered.length });
    return result;
  }

  /** Sends what is queued without waiting: called when the process is about to exit with calls still queued. */
  sendQueuedBeforeExit(): void {
    if (this.queue.length === 0) return;
    this.debug("process exiting: sending queued calls", { queued: this.queue.length });
    this.flushThroughSeq = this.lastSeq;
    this.pump();
  }

  private enqueue(type: CallType, message: unknown, callback: OutcomeCallback | undefined): string {
    if (this.closing) throw new ClosedError(`${type}: the client is closed`);
    const prepared = prepareCall(type, message);
    const { maxQueueSize, maxQueueBytes } = this.options;
    if (this.unsettledCalls >= maxQueueSize || this.unsettledBytes + prepared.length > maxQueueBytes) {
      const text = `${type}: the queue is full (${this.unsettledCalls} calls, ${this.unsettledBytes} bytes; maxQueueSize ${maxQueueSize}, maxQueueBytes ${maxQueueBytes}); the call was not queued`;
      const reason: FailureReason = { kind: "queue_full", message: text };
      this.options.logger.warn("queue full: call refused", { messageId: prepared.messageId });
      this.emitFailed(undefined, [prepared.messageId], reason);
      throw new QueueFullError(prepared.messageId, text);
    }
    this.unsettledCalls++;
    this.unsettledBytes += prepared.length;
    this.queue.push(new QueuedCall(prepared.chunk, prepared.offset, prepared.length, prepared.jsonBytes, ++this.lastSeq, callback));
    this.pump();
    return prepared.messageId;
  }

  /** Starts every batch that is due, as far as maxInFlight allows, and keeps the flush timer right. */
  private pump(): void {
    const { flushAt, maxInFlight } = this.options;
    while (this.batches.size < maxInFlight) {
      const next = this.queue.peek();
      if (next === undefined) break;
      if (this.queue.length < flushAt && next.seq > this.flushThroughSeq) break;
      this.startBatch(takeBatch(this.queue, flushAt));
    }
    if (this.queue.length === 0) this.clearFlushTimer();
    else if (this.flushTimer === undefined) {
      // "flushAfter has passed since the last flush" (docs/contract.md §11.2): queued calls go out at the next multiple of
      // flushAfter after the last batch, like a ticker that every flush restarts. A call made 3 s
      // after a flush waits 2 s (not 5); after a long idle spell it waits at most flushAfter, so
      // calls still travel together. unref: an idle process may exit; the beforeExit hook then sends.
      const { flushAfter } = this.options;
      const sinceFlush = Math.max(0, Date.now() - this.lastFlushAt);
      this.flushTimer = setTimeout(() => this.onFlushTimer(), flushAfter - (sinceFlush % flushAfter)).unref();
    }
  }

  private onFlushTimer(): void {
    this.flushTimer = undefined;
    this.flushThroughSeq = this.lastSeq;
    this.pump();
  }

  private clearFlushTimer(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
  }

  private startBatch(calls: QueuedCall[]): void {
    // A flush: the timer of what stays queued counts from now (pump() sets it again).
    this.lastFlushAt = Date.now();
    this.clearFlushTimer();
    const id = randomUUID();
    const request = encodeBatchRequest(id, calls);
    let bytes = 0;
    for (const call of calls) bytes += call.length;
    const batch: Batch = { id, calls, request, bytes, retries: 0, firstSentAt: Date.now(), call: undefined, retryTimer: undefined };
    this.batches.add(batch);
    this.keepAlive ??= setInterval(() => {}, 1 << 30);
    this.send(batch);
  }

  private send(batch: Batch): void {
    batch.retryTimer = undefined;
    this.debug("sending batch", { batchId: batch.id, calls: batch.calls.length, bytes: batch.request.length, retry: batch.retries });
    batch.call = this.transport.send(batch.request, (error, response) => {
      batch.call = undefined;
      if (!this.batches.has(batch)) return; // abandoned by close(): already reported
      if (error) this.onSendError(batch, error);
      else this.onAnswer(batch, response!);
    });
  }

  private onSendError(batch: Batch, error: ServiceError): void {
    const code = typeof error.code === "number" ? error.code : undefined;
    const name = statusName(code);
    const detail = error.details || error.message;
    if (!isRetryable(code)) {
      this.options.logger.warn("batch refused", { batchId: batch.id, code: name, detail });
      this.settleBatchFailed(batch, { kind: "refused", code: name, message: `ingest refused the batch: ${name}: ${detail}` });
      return;
    }
    batch.retries++;
    const delay = retryDelay(this.options.retry, batch.retries, Date.now() - batch.firstSentAt);
    if (delay === undefined) {
      this.options.logger.warn("batch failed: retries exhausted", { batchId: batch.id, code: name, retries: batch.retries - 1 });
      this.settleBatchFailed(batch, {
        kind: "retries_exhausted",
        code: name,
        message: `not delivered after ${batch.retries} attempts in ${this.options.retry.maxElapsedMs} ms: ${name}: ${detail}`,
      });
      return;
    }
    this.debug("retrying batch", { batchId: batch.id, code: name, detail, retry: batch.retries, delayMs: delay });
    batch.retryTimer = setTimeout(() => this.send(batch), delay);
  }

  private onAnswer(batch: Batch, response: IngestBatchResponse): void {
    const rejections = new Map(response.rejections.map((rejection) => [rejection.index, rejection]));
    this.debug("batch delivered", {
      batchId: batch.id,
      accepted: response.accepted,
      rejected: rejections.size,
      duplicate: response.duplicate,
    });
    const delivered: QueuedCall[] = [];
    batch.calls.forEach((call, index) => {
      const rejection = rejections.get(index);
      if (rejection === undefined) {
        delivered.push(call);
        return;
      }
      const reason: FailureReason = { kind: "rejected", field: rejection.field, rule: rejection.rule, message: rejection.message };
      this.options.logger.warn("call rejected by ingest", {
        messageId: messageIdOf(call.chunk, call.offset),
        field: rejection.field,
        rule: rejection.rule,
      });
      this.settleCalls(batch.id, [call], reason);
    });
    this.settleCalls(batch.id, delivered, undefined);
    this.finishBatch(batch);
  }

  private settleBatchFailed(batch: Batch, reason: FailureReason): void {
    this.settleCalls(batch.id, batch.calls, reason);
    this.finishBatch(batch);
  }

  private finishBatch(batch: Batch): void {
    this.batches.delete(batch);
    this.unsettledBytes -= batch.bytes;
    if (this.batches.size === 0) {
      clearInterval(this.keepAlive);
      this.keepAlive = undefined;
    }
    this.wakeFlushWaiters();
    this.pump();
  }

  /** Reports calls as delivered (no reason) or failed, and wakes flush() callers whose calls are all settled. */
  private settleCalls(batchId: string | undefined, calls: readonly QueuedCall[], reason: FailureReason | undefined): void {
    if (calls.length === 0) return;
    this.unsettledCalls -= calls.length;
    const wantIds = this.closeCollector !== undefined || this.listenerCount(reason ? "failed" : "delivered") > 0;
    const messageIds = wantIds ? calls.map((call) => messageIdOf(call.chunk, call.offset)) : [];
    for (const call of calls) {
      if (call.callback === undefined) continue;
      const messageId = messageIdOf(call.chunk, call.offset);
      this.callBack(call.callback, reason ? { messageId, delivered: false, reason } : { messageId, delivered: true });
    }
    if (reason) {
      this.closeCollector?.notDelivered.push(...messageIds.map((messageId) => ({ messageId, reason })));
      if (this.listenerCount("failed") > 0) this.emit("failed", { batchId, messageIds, reason });
    } else {
      this.closeCollector?.delivered.push(...messageIds);
      if (this.listenerCount("delivered") > 0 && batchId !== undefined) this.emit("delivered", { batchId, messageIds });
    }
  }

  private emitFailed(batchId: string | undefined, messageIds: string[], reason: FailureReason): void {
    if (this.listenerCount("failed") > 0) this.emit("failed", { batchId, messageIds, reason });
  }

  private callBack(callback: OutcomeCallback, outcome: Parameters<OutcomeCallback>[0]): void {
    try {
      callback(outcome);
    } catch (error) {
      // A throwing callback must not break the bookkeeping of the other calls.
      this.options.logger.error("an outcome callback threw", { messageId: outcome.messageId, error: String(error) });
    }
  }

  /** Resolves once no call with seq ≤ throughSeq is unsettled. */
  private settledThrough(throughSeq: number): Promise<void> {
    if (this.oldestUnsettledSeq() > throughSeq) return Promise.resolve();
    return new Promise((resolve) => this.flushWaiters.push({ throughSeq, resolve }));
  }

  private wakeFlushWaiters(): void {
    if (this.flushWaiters.length === 0) return;
    const oldest = this.oldestUnsettledSeq();
    this.flushWaiters = this.flushWaiters.filter((waiter) => {
      if (oldest <= waiter.throughSeq) return true;
      waiter.resolve();
      return false;
    });
  }

  /** Seq of the oldest call still queued or in a batch; Infinity when there is none. */
  private oldestUnsettledSeq(): number {
    let oldest = this.queue.peek()?.seq ?? Number.POSITIVE_INFINITY;
    // A batch's calls are in queue order and leave it together, so its first call is its oldest.
    for (const batch of this.batches) oldest = Math.min(oldest, batch.calls[0]?.seq ?? oldest);
    return oldest;
  }

  /** close() ran out of time: cancels requests and retries, and reports every unsettled call. */
  private abandonEverything(): void {
    const message = "close() timed out before the call was delivered";
    for (const batch of [...this.batches]) {
      const unconfirmed = batch.call !== undefined;
      this.batches.delete(batch);
      clearTimeout(batch.retryTimer);
      batch.call?.cancel();
      this.unsettledBytes -= batch.bytes;
      this.settleCalls(batch.id, batch.calls, { kind: "close_timeout", unconfirmed, message });
    }
    const queued = this.queue.drain();
    for (const call of queued) this.unsettledBytes -= call.length;
    this.settleCalls(undefined, queued, { kind: "close_timeout", unconfirmed: false, message });
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    this.wakeFlushWaiters();
    this.options.logger.warn("close timed out", { notDelivered: this.closeCollector?.notDelivered.length });
  }

  private debug(message: string, fields?: Record<string, unknown>): void {
    if (this.options.debug) this.options.logger.debug(message, fields);
  }
}

/** The `New(writeKey)` factory of docs/contract.md §11.1: a client with default options (or the ones given). */
export function New(writeKey: string, options?: AnalyticsOptions): Analytics {
  return new Analytics(writeKey, options);
}
