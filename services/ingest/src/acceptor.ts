import { randomUUID } from "node:crypto";
import type { Rejection } from "@switchyard/calls";
import type { Logger } from "@switchyard/platform";
import type { SourceRecord } from "@switchyard/workspace";
import { deterministicId, resolveBatchId } from "@switchyard/bus";
import type { IncomingCall } from "./incoming-call.js";
import type { IngestMetrics, Transport } from "./metrics.js";
import type { BatchPublisher } from "@switchyard/bus";
import type { IngestRateLimiter } from "./rate-limit.js";
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
}

export interface AcceptResult {
  batchId: string;
  /** Message ids of the accepted calls, in request order. */
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
 */
export class CallAcceptor {
  constructor(
    private readonly publisher: BatchPublisher,
    private readonly metrics: IngestMetrics,
    private readonly logger: Logger,
    private readonly rateLimiter?: IngestRateLimiter,
  ) {}

  async accept(request: AcceptRequest): Promise<AcceptResult> {
    // Before anything is checked or published: a refused request costs nothing and stores nothing.
    try {
      this.rateLimiter?.admit(request.source.id, request.calls.length);
    } catch (error) {
      this.metrics.callsRejected(request.transport, "rate_limited", request.calls.length);
      throw error;
    }
    const receivedAt = new Date();
    const acceptTime = new AcceptTime(receivedAt);
    const clientBatchId = request.batchId;
    const accepted: EncodedCall[] = [];
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
      accepted.push(call.encode(messageId, acceptTime));
    });
    const batchId = resolveBatchId(clientBatchId, acceptedClientMessageIds);

    if (rejections.length > 0) {
      for (const rejection of rejections) this.metrics.callsRejected(request.transport, rejection.rule);
      // Field and rule only: values are customer data and stay out of logs.
      const refused = rejections.map(({ index, field, rule }) => ({ index, field, rule }));
      this.logger.debug({ sourceId: request.source.id, batchId, rejections: refused }, "refused calls");
    }
    if (accepted.length === 0) return { batchId, messageIds, rejections, duplicate: false };

    const sourceId = request.source.id;
    const parts = encodeCallBatchParts({ batchId, sourceId, receivedAt }, accepted, this.publisher.maxPayloadBytes());
    let duplicate: boolean;
    try {
      // Nearly always one message. A batch in parts is stored once every part is; a retry stores only the missing ones.
      const results = await Promise.all(
        parts.map(({ payload, first, last }) =>
          this.publisher.publish({ batchId, sourceId, payload, ...(parts.length > 1 ? { part: { first, last } } : {}) }),
        ),
      );
      duplicate = results.every((result) => result.duplicate);
    } catch (error) {
      this.metrics.callsRejected(request.transport, "unavailable", accepted.length);
      throw error;
    }
    this.metrics.callsAccepted(request.transport, accepted.length, duplicate);
    this.logger.debug({ sourceId, batchId, accepted: accepted.length, messages: parts.length, duplicate }, "batch published");
    return { batchId, messageIds, rejections, duplicate };
  }
}
