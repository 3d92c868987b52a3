import { CallBatch } from "./gen/switchyard/v1/calls.js";

/**
 * Every message Switchyard puts on NATS carries this header with the fully
 * qualified protobuf type of its payload, so tooling can decode any subject.
 */
export const BUS_MESSAGE_TYPE_HEADER = "Switchyard-Type";

/** Protobuf codecs of the bus payloads, by fully qualified type name. */
export const busMessageTypes = {
  "switchyard.v1.CallBatch": CallBatch,
} as const;
