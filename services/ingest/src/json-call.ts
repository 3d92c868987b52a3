import { checkCall, tooDeeplyNestedField, validCallToProto, type ValidCall } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import type { IncomingCall, IncomingCheck } from "./incoming-call.js";
import { EncodedCallBytes, encodeJsonCall, type EncodedCall, type FastJsonCall, type TranscodedBatchCall } from "@switchyard/wire";
import type { AcceptTime } from "@switchyard/wire";
import type { BlockedCallSets } from "@switchyard/workspace";

/**
 * A call in Segment JSON shape: an HTTP call as parsed, or a gRPC call decoded
 * in full when it cannot take the fast path. An ordinary call is encoded for
 * the bus while it is checked (encodeJsonCall, @switchyard/wire); any other
 * is checked by the rules and encoded by the generated encoder, to the same
 * bytes.
 */
export class JsonCall implements IncomingCall {
  /** The call's bytes, once check() took the fast path. */
  private fast: FastJsonCall | undefined;
  /** The call as the rules returned it, once check() passed it on the ordinary path. */
  private valid: ValidCall | undefined;

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

  check(index: number, acceptTime?: AcceptTime): IncomingCheck {
    const json = this.json;
    if (acceptTime && typeof json === "object" && json !== null) {
      this.fast = encodeJsonCall(json as Record<string, unknown>, acceptTime, this.jsonBytes);
      if (this.fast) return { ok: true, messageId: this.fast.clientMessageId };
    }
    const check = checkCall(json, index, this.jsonBytes);
    if (!check.ok) return check;
    // The fast gRPC path checks this while walking the bytes; JSON calls are checked here.
    const field = tooDeeplyNestedField(check.call);
    if (field === undefined) {
      this.valid = check.call;
      return { ok: true, messageId: check.call.messageId };
    }
    const messageId = this.clientMessageId ?? "";
    return {
      ok: false,
      rejection: { index, messageId, field, rule: "max_depth", message: `${field}: objects and lists are nested too deeply to store` },
    };
  }

  blockedBy(blocks: BlockedCallSets): boolean {
    // Accepted, so the call is an object whose type is a call type and whose track event is a string.
    const { type, event } = this.json as { type: string; event?: unknown };
    return blocks.types.has(type) || (type === "track" && typeof event === "string" && blocks.trackEvents.has(event));
  }

  encode(messageId: string, acceptTime: AcceptTime): EncodedCall {
    if (this.fast) return this.fast.encoded(messageId);
    if (!this.valid) throw new Error("a call is encoded only once check() accepted it");
    return new EncodedCallBytes(Call.encode(validCallToProto(this.valid, { messageId, receivedAt: acceptTime.date })).finish());
  }
}

/**
 * A call of a batch body the transcoder (transcodeBatchBody, @switchyard/wire) wrote straight from
 * the body's bytes: it passed the quick rules, so it is accepted as it is.
 */
export class TranscodedCall implements IncomingCall {
  private readonly fast: FastJsonCall;

  constructor(private readonly call: TranscodedBatchCall & { fast: FastJsonCall }) {
    this.fast = call.fast;
  }

  get clientMessageId(): string | undefined {
    return this.fast.clientMessageId;
  }

  check(): IncomingCheck {
    return { ok: true, messageId: this.fast.clientMessageId };
  }

  blockedBy(blocks: BlockedCallSets): boolean {
    const { type, event } = this.call;
    return blocks.types.has(type) || (type === "track" && event !== undefined && blocks.trackEvents.has(event));
  }

  encode(messageId: string): EncodedCall {
    return this.fast.encoded(messageId);
  }
}
