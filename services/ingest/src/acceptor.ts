import { randomUUID } from "node:crypto";
import type { Rejection } from "@switchyard/calls";
import type { Logger } from "@switchyard/platform";
import { blockedCallSets, type SourceRecord } from "@switchyard/workspace";
import { deterministicId, resolveBatchId, type EncodedBatch } from "@switchyard/bus";
import type { IncomingCall } from "./incoming-call.js";
import type { IngestMetrics, Transport } from "./metrics.js";
import type { BatchPublisher } from "@switchyard/bus";
import type { IngestRateLimiter } from "./rate-limit.js";
import type { RejectedCallsReporter } from "./rejected-reports.js";
import { encodeCallBatchParts, type EncodedCall } from "@switchyard/wire";
import { AcceptTime } from "@switchyard/wire";

export interface AcceptRequest {
  source: SourceRecord;
  /** Which front door the calls came through, for the metrics. */
  transport: Transport;
  /** The client's batch id, when it gave one. */
  batchId?: string;
  /** The calls in request order. */
  calls: IncomingCall[];
  /** When the request was accepted, when the front door had to know it already (the HTTP batch transcoder writes it into the calls). */
  acceptTime?: AcceptTime;
}

export interface AcceptResult {
  batchId: string;
  /** Message ids of the accepted calls (blocked ones included: the client sees no difference), in request order. */
  messageIds: string[];
  rejections: Rejection[];
  /** JetStream already held this batch: it was a re-send. */
  duplicate: boolean;
}

/**
 * The heart of ingest, shared by the gRPC and HTTP front doors: checks every
 * call, enriches the valid ones and publishes them as one batch. Valid calls
 * are published even when others in the batch are refused. Resolves only
 * after JetStream confirmed; throws ServiceError(UNAVAILABLE) otherwise.
 *
 * Valid calls the source blocks (BlockCalls, contract §8.2) are accepted like the others,
 * since a client must not retry them, but published as a batch of their own,
 * with the same batch id, on the filtered stream, which no destination reads.
 * A request that refused invalid calls is reported to usage once answered.
 */
export class CallAcceptor {
  constructor(
    private readonly publisher: BatchPublisher,
    private readonly metrics: IngestMetrics,
    private readonly logger: Logger,
    private readonly rateLimiter?: IngestRateLimiter,
    private readonly rejectedReporter?: RejectedCallsReporter,
  ) {}

  async accept(request: AcceptRequest): Promise<AcceptResult> {
    // Before anything is checked or published: a refused request costs nothing and stores nothing.
    try {
      this.rateLimiter?.admit(request.source.id, request.calls.length);
    } catch (error) {
      this.metrics.callsRejected(request.transport, "rate_limited", request.calls.length);
      throw error;
    }
    const acceptTime = request.acceptTime ?? new AcceptTime(new Date());
    const receivedAt = acceptTime.date;
    const clientBatchId = request.batchId;
    const source = request.source;
    // Looked at once a request: a source that blocks nothing pays nothing more per call.
    const blocks = source.blocked === undefined ? undefined : blockedCallSets(source);
    const accepted: EncodedCall[] = [];
    let blocked: EncodedCall[] | undefined;
    const acceptedClientMessageIds: (string | undefined)[] = [];
    const messageIds: string[] = [];
    const rejections: Rejection[] = [];

    request.calls.forEach((call, index) => {
      const check = call.check(index, acceptTime);
      if (!check.ok) {
        rejections.push(check.rejection);
        return;
      }
      // Derived from the client's batch id and position, a re-sent batch's calls get the same ids as the first attempt's.
      const messageId =
        check.messageId ?? (clientBatchId ? deterministicId(request.source.id, clientBatchId, String(index)) : randomUUID());
      messageIds.push(messageId);
      acceptedClientMessageIds.push(call.clientMessageId);
      const encoded = call.encode(messageId, acceptTime);
      if (blocks !== undefined && call.blockedBy(blocks)) (blocked ??= []).push(encoded);
      else accepted.push(encoded);
    });
    // From every accepted call, blocked or not, so the id does not depend on what is blocked.
    const batchId = resolveBatchId(clientBatchId, acceptedClientMessageIds);

    if (rejections.length > 0) {
      for (const rejection of rejections) this.metrics.callsRejected(request.transport, rejection.rule);
      // Field and rule only: values are customer data and stay out of logs.
      const refused = rejections.map(({ index, field, rule }) => ({ index, field, rule }));
      this.logger.debug({ sourceId: request.source.id, batchId, rejections: refused }, "refused calls");
    }
    const sourceId = source.id;
    const blockedCount = blocked?.length ?? 0;
    if (accepted.length + blockedCount === 0) {
      this.reportRejected(sourceId, batchId, receivedAt, rejections.length);
      return { batchId, messageIds, rejections, duplicate: false };
    }

    const header = { batchId, sourceId, receivedAt };
    const messages =
      blocked === undefined
        ? this.messagesOf(header, accepted, false)
        : [...this.messagesOf(header, accepted, false), ...this.messagesOf(header, blocked, true)];
    let duplicate: boolean;
    try {
      // Nearly always one message. A batch in parts is stored once every part is; a retry stores only the missing ones.
      const results = await Promise.all(messages.map((message) => this.publisher.publish(message)));
      duplicate = results.every((result) => result.duplicate);
    } catch (error) {
      // Not reported to usage: the client is told nothing was stored, and sends the batch again.
      this.metrics.callsRejected(request.transport, "unavailable", accepted.length + blockedCount);
      throw error;
    }
    this.metrics.callsAccepted(request.transport, accepted.length, duplicate);
    if (blockedCount > 0) this.metrics.callsBlocked(request.transport, blockedCount);
    this.reportRejected(sourceId, batchId, receivedAt, rejections.length);
    this.logger.debug(
      { sourceId, batchId, accepted: accepted.length, blocked: blockedCount, messages: messages.length, duplicate },
      "batch published",
    );
    return { batchId, messageIds, rejections, duplicate };
  }

  /** The messages carrying one list of calls (none for an empty list), in parts when too large for one. */
  private messagesOf(
    header: { batchId: string; sourceId: string; receivedAt: Date },
    calls: EncodedCall[] | undefined,
    blocked: boolean,
  ): EncodedBatch[] {
    if (calls === undefined || calls.length === 0) return [];
    const parts = encodeCallBatchParts(header, calls, this.publisher.maxPayloadBytes());
    const { batchId, sourceId } = header;
    return parts.map(({ payload, first, last }) => ({
      batchId,
      sourceId,
      payload,
      ...(parts.length > 1 ? { part: { first, last } } : {}),
      ...(blocked ? { blocked } : {}),
    }));
  }

  private reportRejected(sourceId: string, batchId: string, receivedAt: Date, count: number): void {
    if (count > 0) this.rejectedReporter?.report(sourceId, batchId, receivedAt, count);
  }
}
