import { isoMillis, MAX_CALL_BYTES, quickAcceptJson } from "@switchyard/calls";
import { CallField } from "@switchyard/contracts";
import type { EncodedCall } from "./call-batch-encoder.js";
import { CALL_STRUCTS, CALL_TEXTS, PAYLOAD_SHAPES } from "./call-shape.js";
import { encodeCall, NestedTooDeeply, timestampJsonSize, type CallFields, type ClientCallType } from "./client-call-encoder.js";
import type { AcceptTime } from "./pass-through-call.js";
import { ProtoWriter, textFieldSize, Unrepresentable, writeTextField } from "./writer.js";

/**
 * Ingest's fast path for a call received as Segment JSON (HTTP): a call the
 * quick check (quickAcceptJson, @switchyard/calls) finds surely valid is
 * written straight from the parsed object by the client's encoder, with what
 * ingest adds (timestamp when the client gave none, received_at; the
 * messageId when it gave none is written in front at the end). The bytes are
 * those the straightforward path (checkCall, validCallToProto, Call.encode)
 * publishes for the same call, byte for byte (json-call-encoder.test.ts).
 *
 * Anything else returns undefined and is left to that path, so refusals read
 * exactly as that path words them: a call the quick check is unsure of, a value the encoder
 * cannot carry (NaN, a lone surrogate), nesting past the decoders' limit, and
 * a call whose JSON size is near the 32 KB limit.
 */

/** Calls are written one after the other into chunks this large, and stay there until published. */
const SLAB_BYTES = 64 * 1024;
/** Shared with the batch body transcoder (json-batch-transcoder.ts): one slab for every HTTP call. */
export const slab = new ProtoWriter(SLAB_BYTES);

/**
 * How close to MAX_CALL_BYTES a call's JSON may come on the fast path. The size is counted
 * exactly; the margin only keeps the boundary itself to checkCall, which defines it.
 */
export const NEAR_LIMIT_BYTES = 1024;

const { MESSAGE_ID } = CallField;

/** A call the fast path accepted: its bytes in the slab, and the messageId ingest gives it if it came without one. */
export class FastJsonCall {
  constructor(
    private readonly chunk: Buffer,
    private readonly offset: number,
    private readonly length: number,
    /** The client's messageId; undefined when ingest is to give it one. */
    readonly clientMessageId: string | undefined,
  ) {}

  /** The call as it goes on the bus, with `messageId` written first when the client sent none. */
  encoded(messageId: string): EncodedCall {
    return new SlabCall(this.chunk, this.offset, this.length, this.clientMessageId === undefined ? messageId : undefined);
  }
}

class SlabCall implements EncodedCall {
  readonly byteLength: number;

  constructor(
    private readonly chunk: Buffer,
    private readonly offset: number,
    private readonly length: number,
    private readonly addedMessageId: string | undefined,
  ) {
    this.byteLength = length + (addedMessageId === undefined ? 0 : textFieldSize(MESSAGE_ID, addedMessageId));
  }

  writeTo(target: Buffer, offset: number): number {
    const at = this.addedMessageId === undefined ? offset : writeTextField(target, offset, MESSAGE_ID, this.addedMessageId);
    return at + this.chunk.copy(target, at, this.offset, this.offset + this.length);
  }
}

/**
 * The call's bytes when it is surely valid, undefined when the rules must decide. `call` is the
 * call as the front door made it (the null and "" ids dropped, a batch's context and integrations
 * merged in); `jsonBytes` its JSON size when the caller already knows it, otherwise it is counted
 * as the encoder writes, equal to the UTF-8 size of JSON.stringify(call), which checkCall measures.
 */
export function encodeJsonCall(call: Record<string, unknown>, acceptTime: AcceptTime, jsonBytes?: number): FastJsonCall | undefined {
  if (!quickAcceptJson(call)) return undefined;
  const type = call.type as ClientCallType;
  const messageId = call.messageId as string | undefined;
  const clientTimestamp = call.timestamp as string | undefined;
  const receivedAtMillis = acceptTime.date.getTime();
  const timestampMillis = clientTimestamp === undefined ? receivedAtMillis : isoMillis(clientTimestamp);
  let size: number | undefined;
  try {
    size = encodeCall(slab, type, messageId, call as CallFields, timestampMillis, undefined, { receivedAtMillis });
    if (jsonBytes === undefined) size = callJsonSize(call, type, size, timestampMillis);
    else size = jsonBytes;
  } catch (error) {
    slab.discard();
    if (error instanceof Unrepresentable || error instanceof NestedTooDeeply) return undefined;
    throw error;
  }
  if (size === undefined || size > MAX_CALL_BYTES - NEAR_LIMIT_BYTES) {
    slab.discard();
    return undefined;
  }
  const { chunk, offset, length } = slab.take();
  return new FastJsonCall(chunk, offset, length, messageId);
}

/**
 * The UTF-8 size of JSON.stringify(call), from `encoded`, what encodeCall counted: it counted
 * the members it wrote (the timestamp as its full ISO text, also when ingest supplied it), so
 * the timestamp is counted as sent, or not at all, and the members it did not write are added
 * (unknown keys such as sentAt, a member the type does not have, an empty name). Undefined when
 * one of those is nested too deeply for JSON.stringify, as checkCall then refuses the call.
 */
function callJsonSize(call: Record<string, unknown>, type: ClientCallType, encoded: number, timestampMillis: number): number | undefined {
  const timestamp = call.timestamp as string | undefined;
  // The rule's ISO text is ASCII without anything JSON escapes.
  let size =
    encoded - timestampJsonSize(timestampMillis) + (timestamp === undefined ? -MEMBER_FRAME - "timestamp".length : timestamp.length + 2);
  const shape = PAYLOAD_SHAPES[type];
  for (const key in call) {
    const value = call[key];
    if (writtenMember(key, value, shape)) continue;
    const valueSize = jsonSize(value);
    if (valueSize === undefined) return undefined;
    // A comma (or the closing brace), the key, a colon, the value.
    size += 1 + jsonSize(key)! + 1 + valueSize;
  }
  return size;
}

/** The bytes of a member besides its key's characters and its value: comma, the key's quotes, colon. */
const MEMBER_FRAME = 4;

/** The Call's own texts and Structs (but messageId), which encodeCall writes when set. */
const OWN_WRITTEN_WHEN_SET = new Set([...CALL_TEXTS, ...CALL_STRUCTS].map((field) => field.key).filter((key) => key !== "messageId"));

/** Whether encodeCall wrote (and counted) the member: the call's own fields when set, the payload's when set. */
function writtenMember(key: string, value: unknown, shape: (typeof PAYLOAD_SHAPES)[ClientCallType]): boolean {
  if (key === "type" || key === "messageId" || key === "timestamp") return true;
  if (OWN_WRITTEN_WHEN_SET.has(key)) return Boolean(value);
  if (shape.struct?.key === key) return Boolean(value);
  for (const text of shape.texts) if (text.key === key) return Boolean(value);
  return false;
}

/** UTF-8 size of a value's JSON, or undefined when it is nested too deeply to serialise. */
function jsonSize(value: unknown): number | undefined {
  try {
    return Buffer.byteLength(JSON.stringify(value), "utf8");
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}
