import { checkCall, tooDeeplyNestedField, validCallToProto, type CallCheck, type ValidCall } from "@switchyard/calls";
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
    const check = checkCall(this.json, index, this.jsonBytes);
    if (!check.ok) return check;
    // The fast gRPC path checks this while walking the bytes; JSON calls are checked here.
    const field = tooDeeplyNestedField(check.call);
    if (field === undefined) return check;
    const messageId = this.clientMessageId ?? "";
    return {
      ok: false,
      rejection: { index, messageId, field, rule: "max_depth", message: `${field}: objects and lists are nested too deeply to store` },
    };
  }

  encode(valid: ValidCall, messageId: string, acceptTime: AcceptTime): EncodedCall {
    return new EncodedCallBytes(Call.encode(validCallToProto(valid, { messageId, receivedAt: acceptTime.date })).finish());
  }
}
