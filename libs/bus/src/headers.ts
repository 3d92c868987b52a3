import { CallBatch } from "@switchyard/contracts";
import { DeadLetter, DeferredCalls, DeliveryAttempt, DeliveryTask } from "@switchyard/contracts";

/**
 * Every message Switchyard puts on NATS carries this header with the fully
 * qualified protobuf type of its payload, so tooling can decode any subject.
 */
export const BUS_MESSAGE_TYPE_HEADER = "Switchyard-Type";

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

/** Protobuf codecs of the bus payloads, by fully qualified type name. */
export const busMessageTypes = {
  "switchyard.v1.CallBatch": CallBatch,
  "switchyard.v1.DeliveryTask": DeliveryTask,
  "switchyard.v1.DeferredCalls": DeferredCalls,
  "switchyard.v1.DeadLetter": DeadLetter,
  "switchyard.v1.DeliveryAttempt": DeliveryAttempt,
} as const;

export type BusMessageType = keyof typeof busMessageTypes;
