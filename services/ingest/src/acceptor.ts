import { randomUUID } from "node:crypto";
import { checkCall, validCallToProto, type Rejection } from "@switchyard/calls";
import type { Call } from "@switchyard/contracts";
import type { Logger, SourceRecord } from "@switchyard/platform";
import { derivedMessageId, resolveBatchId } from "./batch-ids.js";
import type { BatchPublisher } from "./publisher.js";

export interface AcceptRequest {
  source: SourceRecord;
  /** The client's batch id, when it gave one. */
  batchId?: string;
  /** Calls in Segment JSON shape, in request order. */
  calls: unknown[];
  /** JSON size of each call when the caller already measured it. */
  callBytes?: number[];
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
    private readonly logger: Logger,
  ) {}

  async accept(request: AcceptRequest): Promise<AcceptResult> {
    const receivedAt = new Date();
    const clientMessageIds = request.calls.map(clientMessageIdOf);
    const batchId = resolveBatchId(request.batchId, clientMessageIds);
    const accepted: Call[] = [];
    const rejections: Rejection[] = [];

    request.calls.forEach((raw, index) => {
      const check = checkCall(raw, index, request.callBytes?.[index]);
      if (!check.ok) {
        rejections.push(check.rejection);
        return;
      }
      const messageId = check.call.messageId ?? (request.batchId ? derivedMessageId(request.source.id, batchId, index) : randomUUID());
      accepted.push(validCallToProto(check.call, { messageId, receivedAt }));
    });

    if (rejections.length > 0) {
      // Field and rule only: values are customer data and stay out of logs.
      const refused = rejections.map(({ index, field, rule }) => ({ index, field, rule }));
      this.logger.debug({ sourceId: request.source.id, batchId, rejections: refused }, "refused calls");
    }
    const messageIds = accepted.map((call) => call.messageId);
    if (accepted.length === 0) return { batchId, messageIds, rejections, duplicate: false };

    const { duplicate } = await this.publisher.publish({ batchId, sourceId: request.source.id, receivedAt, calls: accepted });
    this.logger.debug({ sourceId: request.source.id, batchId, accepted: accepted.length, duplicate }, "batch published");
    return { batchId, messageIds, rejections, duplicate };
  }
}

function clientMessageIdOf(raw: unknown): string | undefined {
  if (raw && typeof raw === "object" && "messageId" in raw && typeof raw.messageId === "string") return raw.messageId;
  return undefined;
}
