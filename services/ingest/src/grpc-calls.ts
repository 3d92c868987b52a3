import { checkCall, MAX_BATCH_BYTES, MAX_CALL_BYTES, MAX_ID_LENGTH, passesQuickly, protoCallToJson } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import { ServiceError } from "@switchyard/platform";
import type { IncomingCall, IncomingCheck } from "./incoming-call.js";
import { JsonCall } from "./json-call.js";
import { scanCall, TextFieldId, type ScannedCall } from "@switchyard/wire";
import type { BlockedCallSets } from "@switchyard/workspace";
import { PassThroughCall, type AcceptTime } from "@switchyard/wire";
import { MalformedWireError } from "@switchyard/wire";

/**
 * gRPC calls arrive as protobuf bytes. Each is scanned once (wire/call-scanner.ts)
 * and then takes one of three routes:
 *
 * - WireCall, the fast path: checked by the shared rules on what the scan
 *   found (the quick rules of @switchyard/calls; the zod schema on a small outline of the call
 *   when those cannot tell) and published from the client's own bytes, so the
 *   free-form Structs are never decoded or re-encoded;
 * - JsonCall, the exact path: decoded in full and re-encoded by the generated
 *   code; taken when the bytes are irregular (see WalkNotes) or
 *   the JSON-size bound is over the 32 KB limit, so the exact size decides;
 * - MalformedCall: bytes that are not a valid Call, refused on their own; or
 *   a Call with text that is not UTF-8, refused naming the field (rule utf8)
 *   rather than stored with U+FFFD in place of the broken bytes.
 */

/** A call taking the fast path. Its JSON-size bound is within the per-call limit. */
export class WireCall implements IncomingCall {
  constructor(private readonly scanned: ScannedCall) {}

  get clientMessageId(): string | undefined {
    return this.scanned.messageId || undefined;
  }

  get jsonSizeBound(): number {
    return this.scanned.jsonSizeBound;
  }

  check(index: number): IncomingCheck {
    if (passesQuickly(this.scanned)) return { ok: true, messageId: this.clientMessageId };
    const check = checkCall(this.scanned.json, index, this.scanned.jsonSizeBound);
    return check.ok ? { ok: true, messageId: check.call.messageId } : check;
  }

  encode(messageId: string, acceptTime: AcceptTime): PassThroughCall {
    return new PassThroughCall(this.scanned, messageId, acceptTime);
  }

  blockedBy(blocks: BlockedCallSets): boolean {
    const type = this.scanned.type;
    if (type === undefined) return false;
    if (blocks.types.has(type)) return true;
    // A track call's first payload text is its event; decoded only when some event is blocked.
    return type === "track" && blocks.trackEvents.size > 0 && blocks.trackEvents.has(this.scanned.text(TextFieldId.PAYLOAD_TEXT_0));
  }

  /** The exact JSON size, for when the sum of the bounds is over the batch limit. */
  exactJsonSize(): number {
    return jsonSizeOf(protoCallToJson(Call.decode(this.scanned.bytes)));
  }
}

/** What a MalformedCall is refused with, besides its index and messageId. */
interface Refusal {
  field: string;
  rule: string;
  message: string;
}

/** Bytes that are not a valid Call (rule "malformed"), or whose text is not UTF-8 (rule "utf8"): refused on their own. */
export class MalformedCall implements IncomingCall {
  readonly clientMessageId = undefined;
  private readonly refusal: Refusal;

  /**
   * @param problem what is wrong with the bytes, or the refusal itself
   * @param wireBytes its size in the request, which counts toward the batch limit in place of JSON it does not have
   * @param messageId the client's messageId for the rejection, when it is readable
   */
  constructor(
    problem: string | Refusal,
    readonly wireBytes: number,
    private readonly messageId = "",
  ) {
    this.refusal =
      typeof problem === "string" ? { field: "", rule: "malformed", message: `call: is not a valid protobuf Call (${problem})` } : problem;
  }

  check(index: number): IncomingCheck {
    return { ok: false, rejection: { index, messageId: this.messageId, ...this.refusal } };
  }

  encode(): never {
    throw new Error("a malformed call is never accepted");
  }

  blockedBy(): boolean {
    return false;
  }
}

export type GrpcCall = WireCall | JsonCall | MalformedCall;

/** Scans one call's bytes and picks its route. */
export function grpcCall(bytes: Buffer): GrpcCall {
  let scanned: ScannedCall;
  try {
    scanned = scanCall(bytes);
  } catch (error) {
    if (error instanceof MalformedWireError) return new MalformedCall(error.message, bytes.length);
    throw error;
  }
  const invalid = scanned.invalidText;
  if (invalid) {
    // The client's messageId identifies the refusal, unless it is the text that is not UTF-8.
    const messageId = invalid.field === "messageId" ? "" : scanned.messageId.slice(0, MAX_ID_LENGTH);
    return new MalformedCall({ field: invalid.field, message: invalid.message, rule: "utf8" }, bytes.length, messageId);
  }
  if (!scanned.irregular && scanned.jsonSizeBound <= MAX_CALL_BYTES) return new WireCall(scanned);
  return decodedCall(bytes);
}

function decodedCall(bytes: Buffer): JsonCall | MalformedCall {
  let call: Call;
  try {
    call = Call.decode(bytes);
  } catch (error) {
    // Not expected after a successful scan, which is stricter than the decoder; refuse the call rather than the request.
    return new MalformedCall(error instanceof Error ? error.message : "cannot be decoded", bytes.length);
  }
  const json = protoCallToJson(call);
  return new JsonCall(json, jsonSizeOf(json));
}

/**
 * The calls of one IngestBatch request. Throws INVALID_ARGUMENT when they are
 * over 500 KB of JSON in all: the bounds decide when they are under, exact
 * sizes otherwise. A malformed call has no JSON and counts its bytes instead,
 * so a request cannot carry any amount of them for free.
 */
export function grpcBatchCalls(callBytes: readonly Buffer[]): GrpcCall[] {
  const calls = callBytes.map(grpcCall);
  const bounded = calls.reduce((sum, call) => sum + (call instanceof WireCall ? call.jsonSizeBound : exactSizeOf(call)), 0);
  if (bounded <= MAX_BATCH_BYTES) return calls;
  const total = calls.reduce((sum, call) => sum + (call instanceof WireCall ? call.exactJsonSize() : exactSizeOf(call)), 0);
  if (total > MAX_BATCH_BYTES) {
    throw new ServiceError(
      "INVALID_ARGUMENT",
      `batch is ${total} bytes of JSON; the limit is ${MAX_BATCH_BYTES} bytes (${MAX_BATCH_BYTES / 1024} KB): split it`,
    );
  }
  return calls;
}

function exactSizeOf(call: JsonCall | MalformedCall): number {
  return call instanceof JsonCall ? (call.jsonBytes ?? 0) : call.wireBytes;
}

function jsonSizeOf(json: unknown): number {
  return Buffer.byteLength(JSON.stringify(json), "utf8");
}
