import { headers, type MsgHdrs } from "@nats-io/nats-core";
import { CallBatch, DeadLetter, DeferredCalls, DeliveryAttempt, DeliveryAttempts, DeliveryTask, insightsApi } from "@switchyard/contracts";

/**
 * JetStream's de-duplication header: a message whose id was stored within the
 * stream's duplicate window is acknowledged as a duplicate and not stored again.
 */
export const NATS_MSG_ID_HEADER = "Nats-Msg-Id";

/**
 * Every message Switchyard puts on NATS carries this header with the fully
 * qualified protobuf type of its payload, so tooling can decode any subject.
 */
export const BUS_MESSAGE_TYPE_HEADER = "Switchyard-Type";

/** The protobuf types of bus payloads, as `Switchyard-Type` names them. */
export const BUS_MESSAGE_TYPE_NAMES = {
  /** A batch of accepted calls, on `<ns>.calls.<sourceId>`. */
  callBatch: "switchyard.v1.CallBatch",
  /** One call waiting for a retry, on `<ns>.retry.<destinationId>`. */
  deliveryTask: "switchyard.v1.DeliveryTask",
  /** Calls deferred together before their first request, on `<ns>.retry.<destinationId>`. */
  deferredCalls: "switchyard.v1.DeferredCalls",
  /** A delivery that ran out of window or failed permanently, on `<ns>.dead.<destinationId>`. */
  deadLetter: "switchyard.v1.DeadLetter",
  /** A failed attempt or a dead letter, for operators, on `<ns>.deliverylog.<destinationId>`. */
  deliveryAttempt: "switchyard.v1.DeliveryAttempt",
  /**
   * Delivered attempts of one destination, recorded together, on `<ns>.deliveredlog.<destinationId>`;
   * and the attempt index's entries (attempts without their exchange), on `<ns>.attemptindex.<destinationId>`.
   */
  deliveryAttempts: "switchyard.v1.DeliveryAttempts",
  /** Ingest's count of invalid calls refused in one request, on `<ns>.usage.rejected.<sourceId>`. */
  rejectedCalls: "switchyard.v1.RejectedCalls",
  /** What became of a batch's calls at one destination, on `<ns>.usage.delivery.<destinationId>`. */
  deliveryOutcomes: "switchyard.v1.DeliveryOutcomes",
} as const;

/** A `Switchyard-Type` value: the fully qualified protobuf type of a bus payload. */
export type BusMessageType = (typeof BUS_MESSAGE_TYPE_NAMES)[keyof typeof BUS_MESSAGE_TYPE_NAMES];

/** Protobuf codecs of the bus payloads, by fully qualified type name. */
export const busMessageTypes = {
  [BUS_MESSAGE_TYPE_NAMES.callBatch]: CallBatch,
  [BUS_MESSAGE_TYPE_NAMES.deliveryTask]: DeliveryTask,
  [BUS_MESSAGE_TYPE_NAMES.deferredCalls]: DeferredCalls,
  [BUS_MESSAGE_TYPE_NAMES.deadLetter]: DeadLetter,
  [BUS_MESSAGE_TYPE_NAMES.deliveryAttempt]: DeliveryAttempt,
  [BUS_MESSAGE_TYPE_NAMES.deliveryAttempts]: DeliveryAttempts,
  [BUS_MESSAGE_TYPE_NAMES.rejectedCalls]: insightsApi.RejectedCalls,
  [BUS_MESSAGE_TYPE_NAMES.deliveryOutcomes]: insightsApi.DeliveryOutcomes,
} as const satisfies Record<BusMessageType, unknown>;

/** Fresh headers for a bus message of the given type (`Switchyard-Type` set), to add more to. */
export function busMessageHeaders(type: BusMessageType): MsgHdrs {
  const result = headers();
  result.set(BUS_MESSAGE_TYPE_HEADER, type);
  return result;
}

/**
 * Headers of a retry message repeating its schedule, so delivery can park a
 * task that is not due without decoding it: the destination id, and when the
 * task may be tried and when its retry window started (Unix milliseconds).
 */
export const RETRY_HEADERS = {
  destination: "Switchyard-Destination",
  notBefore: "Switchyard-Not-Before",
  windowStart: "Switchyard-Window-Start",
} as const;

/**
 * A header of each delivered-attempts batch (`<ns>.deliveredlog.<destinationId>`) and of each
 * attempt-index message (`<ns>.attemptindex.<destinationId>`): the time of its earliest attempt,
 * Unix milliseconds. A batch is stored up to its linger after that time, so a reader looking for
 * attempts before a time can tell from headers alone which of the messages stored just after it
 * to skip.
 */
export const ATTEMPT_LOG_FIRST_AT_HEADER = "Switchyard-First-At";

/**
 * Headers a message moved to the poison stream gets beside its own: why it
 * was set aside ("undecodable" or "handler_failed"), the error, and the
 * stream, subject, sequence and delivery count it had there.
 */
export const POISON_HEADERS = {
  reason: "Switchyard-Poison-Reason",
  error: "Switchyard-Poison-Error",
  stream: "Switchyard-Poison-Stream",
  subject: "Switchyard-Poison-Subject",
  sequence: "Switchyard-Poison-Sequence",
  deliveries: "Switchyard-Poison-Deliveries",
} as const;
