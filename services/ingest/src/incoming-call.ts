import type { Rejection } from "@switchyard/calls";
import type { EncodedCall } from "@switchyard/wire";
import type { AcceptTime } from "@switchyard/wire";
import type { BlockedCallSets } from "@switchyard/workspace";

/** A call's verdict by the shared rules: accepted (with the client's messageId, if any), or why not. */
export type IncomingCheck = { ok: true; messageId: string | undefined } | { ok: false; rejection: Rejection };

/**
 * A call as a front door received it: Segment JSON (json-call.ts) or protobuf
 * bytes (grpc-calls.ts). The acceptor checks every call by the shared rules
 * and asks each accepted one for its bytes on the bus.
 */
export interface IncomingCall {
  /** The client's own messageId, used to recognise a re-sent batch. */
  readonly clientMessageId: string | undefined;
  /**
   * Checks the call by the rules in @switchyard/calls; `index` is its position in the request,
   * `acceptTime` the time encode() will be given (a fast path may encode the call while checking it).
   */
  check(index: number, acceptTime: AcceptTime): IncomingCheck;
  /**
   * The accepted call with what ingest adds (its messageId, the accept time
   * as received_at and, when the client gave none, as timestamp), encoded as
   * a switchyard.v1.Call. Only for a call whose check() said ok.
   */
  encode(messageId: string, acceptTime: AcceptTime): EncodedCall;
  /**
   * Whether the source's blocks name this call: its type, or, for a track call, its event name.
   * Only for a call whose check() said ok, and only asked when the source blocks something.
   */
  blockedBy(blocks: BlockedCallSets): boolean;
}
