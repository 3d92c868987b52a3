import { checkCall, validCallToProto, type CallCheck, type ValidCall } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import type { IncomingCall } from "./incoming-call.js";
import { EncodedCallBytes, type EncodedCall } from "./wire/call-batch-encoder.js";
import type { AcceptTime } from "./wire/pass-through-call.js";

/**
 * A call in Segment JSON shape: an HTTP call as parsed, or a gRPC call decoded
 * in full when it cannot take the fast path. Encoded for the bus by the
 * generated encoder.
 */
export class JsonCall implements IncomingCall {
  /**
   * @param json the call, not yet checked
   * @param jsonBytes its JSON size when the caller already knows it; otherwise checkCall measures it
   */
  constructor(
    private readonly json: unknown,
    readonly jsonBytes?: number,
  ) {}

  get clientMessageId(): string | undefined {
    const json = this.json;
    if (json && typeof json === "object" && "messageId" in json && typeof json.messageId === "string") return json.messageId;
    return undefined;
  }

  check(index: number): CallCheck {
    return checkCall(this.json, index, this.jsonBytes);
  }

  encode(valid: ValidCall, messageId: string, acceptTime: AcceptTime): EncodedCall {
    return new EncodedCallBytes(Call.encode(validCallToProto(valid, { messageId, receivedAt: acceptTime.date })).finish());
  }
}
