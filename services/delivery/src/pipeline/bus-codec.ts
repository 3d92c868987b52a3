import { headers, type MsgHdrs } from "@nats-io/nats-core";
import { BUS_MESSAGE_TYPE_HEADER, type BusMessageType } from "@switchyard/bus";

/** Headers for a bus message: its protobuf type, so tooling can decode it. */
export function typeHeaders(type: BusMessageType): MsgHdrs {
  const result = headers();
  result.set(BUS_MESSAGE_TYPE_HEADER, type);
  return result;
}
