/** Why a message was not delivered. */
export type FailureReason =
  /** Ingest refused this call (it broke a rule ingest checks and the client could not). */
  | { kind: "rejected"; field: string; rule: string; message: string }
  /** Ingest answered the batch with a status that retrying cannot fix (UNAUTHENTICATED, INVALID_ARGUMENT, ...). */
  | { kind: "refused"; code: string; message: string }
  /** Every retry failed, for `retry.maxElapsedMs`; `code` is the last attempt's status. */
  | { kind: "retries_exhausted"; code: string; message: string }
  /** The queue was full (maxQueueSize or maxQueueBytes): the call was never queued. */
  | { kind: "queue_full"; message: string }
  /**
   * close() ran out of time first. `unconfirmed` is true when a request with this message was
   * still waiting for its answer: ingest may have stored it (a re-send would be stored once).
   */
  | { kind: "close_timeout"; unconfirmed: boolean; message: string };

/** What became of one message. */
export type CallOutcome = { messageId: string; delivered: true } | { messageId: string; delivered: false; reason: FailureReason };

/** Called once per message, when it was delivered or has finally failed. */
export type OutcomeCallback = (outcome: CallOutcome) => void;

/** The "delivered" event: ingest stored these messages (acknowledged by JetStream). */
export interface DeliveredEvent {
  batchId: string;
  messageIds: string[];
}

/** The "failed" event: these messages will not be delivered, for this reason. */
export interface FailedEvent {
  /** The batch they were in; undefined for calls never sent (queue_full, close_timeout while queued). */
  batchId: string | undefined;
  messageIds: string[];
  reason: FailureReason;
}

/** The typed events of an Analytics client. */
export interface AnalyticsEvents {
  delivered: [DeliveredEvent];
  failed: [FailedEvent];
}

/** What close() resolves with: the fate of every message that was not yet settled when close() was called. */
export interface CloseResult {
  delivered: string[];
  notDelivered: { messageId: string; reason: FailureReason }[];
}
