import { isoTextOfTime, PAYLOAD_FIELD_NUMBERS } from "@switchyard/calls";
import { CallField, Timestamp } from "@switchyard/contracts";
import { readStructBytes } from "../call-batch-reader.js";
import { PAYLOADS } from "../call-shape.js";
import { UNUSUAL, type WireReader } from "../reader.js";
import { BODY_MEMBERS } from "./body-members.js";
import type { JsonBytes } from "./json-bytes.js";
import { writeStruct } from "./struct-json.js";

/** What the caller needs of a call besides its body. */
export interface WrittenCall {
  /** Where the messageId's text lies ([0, 0) for none): it is made a string only if needed. */
  messageIdStart: number;
  messageIdEnd: number;
  receivedAt: Date | undefined;
  /** Whether the call has a type (a payload); without one nothing was written. */
  hasPayload: boolean;
  /** Whether the call has an integrations object, which the caller must decode to apply. */
  hasIntegrations: boolean;
}

const { MESSAGE_ID, USER_ID, ANONYMOUS_ID, TIMESTAMP, CONTEXT, INTEGRATIONS, RECEIVED_AT } = CallField;

const fragment = (text: string) => Buffer.from(text, "utf8");

/** How a member is written: a text ("" when absent), a text only when set, a Struct ({} when absent). */
const TEXT = 0;
const TEXT_WHEN_SET = 1;
const OBJECT = 2;

/** One member, ready to write: where its field is (the call's or the payload's), its number, its `,"name":`. */
interface MemberPlan {
  readonly how: typeof TEXT | typeof TEXT_WHEN_SET | typeof OBJECT;
  readonly inCall: boolean;
  readonly field: number;
  readonly key: Buffer;
}

/** A payload's body, ready to write: its opening, its members, and the Struct it walks without showing (0: none). */
interface BodyPlan {
  readonly opening: Buffer;
  readonly members: readonly MemberPlan[];
  readonly hiddenStruct: number;
}

/** Each payload's plan, by its field number in Call; built once at load from BODY_MEMBERS and PAYLOAD_SHAPES. */
const BODY_PLANS: BodyPlan[] = [];
for (const shape of PAYLOADS) {
  const members = BODY_MEMBERS[shape.type].map((member): MemberPlan => {
    if ("userId" in member) {
      const how = member.userId === "always" ? TEXT : TEXT_WHEN_SET;
      return { how, inCall: true, field: USER_ID, key: fragment(`,${JSON.stringify(member.name ?? "userId")}:`) };
    }
    if ("object" in member) {
      if (shape.struct?.key !== member.object) throw new Error(`webhook body of ${shape.type}: ${member.object} is not its Struct`);
      return { how: OBJECT, inCall: false, field: shape.struct.field, key: fragment(`,${JSON.stringify(member.object)}:`) };
    }
    const text = shape.texts.find(({ key }) => key === member.text);
    if (!text) throw new Error(`webhook body of ${shape.type}: ${member.text} is not one of its text fields`);
    const key = fragment(`,${JSON.stringify(member.name ?? member.text)}:`);
    return { how: member.onlyWhenSet ? TEXT_WHEN_SET : TEXT, inCall: false, field: text.field, key };
  });
  const shown = members.some((member) => member.how === OBJECT);
  // Every body but delete's starts with version and type (§6.3).
  const opening = fragment(shape.type === "delete" ? '{"type":"delete"' : `{"version":1,"type":${JSON.stringify(shape.type)}`);
  BODY_PLANS[shape.field] = { opening, members, hiddenStruct: shape.struct && !shown ? shape.struct.field : 0 };
}

/** The payload oneof's fields, in number order. */
const PAYLOAD_FIELDS = PAYLOADS.map((shape) => shape.field);

const highestField = (fields: Record<string, number>) => Math.max(0, ...Object.values(fields));
/** Where each field of the call and of its payload message lies; see WireReader.fieldRanges. */
const callFields = new Int32Array(2 * (highestField(CallField) + 1));
const payloadFields = new Int32Array(2 * (Math.max(...Object.values(PAYLOAD_FIELD_NUMBERS).map(highestField)) + 1));

const KEYS = {
  timestamp: fragment(',"timestamp":'),
  messageId: fragment(',"messageId":'),
  anonymousId: fragment(',"anonymousId":'),
  context: fragment(',"context":'),
};
const EMPTY_OBJECT = fragment("{}");
const CLOSE = 0x7d;

/** How deep the call's own Structs sit: in a batch, as readCallBatch counts (batch, call, Struct). */
const STRUCT_DEPTH = 2;

/**
 * Writes the webhook body of the switchyard.v1.Call at [start, end) of the
 * reader's bytes, without decoding it. This is the one definition of the body
 * (docs/contract.md §6.3-6.4): which members, named how, in which order.
 * Field order follows §6.3; every body also carries messageId, and
 * anonymousId and context when the call had them. Nothing else. Listed object
 * fields (properties, traits) are always present, empty when the call had
 * none, so receivers can rely on them.
 *
 * Two modes:
 * - Plain (`exact` false), for first attempts straight from a batch's bytes:
 *   every field the decoder reads as a message is walked once (the
 *   integrations, a screen's properties and the times too), and any field that
 *   occurs twice is left to the decoder, so bytes that pass here also decode.
 *   Throws UNUSUAL, having written part of a body, for anything it leaves to
 *   the decoder (see WireReader and struct-json.ts): the caller then decodes
 *   the batch instead.
 * - Exact (`exact` true), for bytes the generated encoder just wrote from a
 *   decoded call (webhook-body.ts): never throws UNUSUAL. Times the plain reads
 *   leave to the decoder are decoded, and a Struct whose JSON depends on
 *   JavaScript's object rules is decoded and written by JSON.stringify.
 *
 * Either way the bytes are what `JSON.stringify` of the body made from the
 * decoded call gives (a property test holds the two paths equal).
 */
export function writeWebhookBody(reader: WireReader, start: number, end: number, out: JsonBytes, exact = false): WrittenCall {
  reader.pos = start;
  reader.fieldRanges(end, callFields);
  // The payload oneof: a call with two payloads is left to the decoder, which reads both.
  let payload = 0;
  for (let index = 0; index < PAYLOAD_FIELDS.length; index++) {
    const field = PAYLOAD_FIELDS[index]!;
    if (!has(callFields, field)) continue;
    if (payload !== 0) throw UNUSUAL;
    payload = field;
  }
  const receivedAtMs = has(callFields, RECEIVED_AT) ? timestampMillis(reader, callFields, RECEIVED_AT, exact) : NaN;
  const timestampMs = has(callFields, TIMESTAMP) ? timestampMillis(reader, callFields, TIMESTAMP, exact) : NaN;
  const written: WrittenCall = {
    messageIdStart: Math.max(0, startOf(callFields, MESSAGE_ID)),
    messageIdEnd: Math.max(0, endOf(callFields, MESSAGE_ID)),
    receivedAt: Number.isNaN(receivedAtMs) ? undefined : new Date(receivedAtMs),
    hasPayload: payload !== 0,
    hasIntegrations: has(callFields, INTEGRATIONS),
  };
  // Structs the body does not show are still walked (and their JSON dropped), so that they are known to
  // decode; bytes the generated encoder wrote (exact) are known to.
  if (written.hasIntegrations && !exact) checkStruct(reader, callFields, INTEGRATIONS, out);
  if (!payload) {
    if (has(callFields, CONTEXT) && !exact) checkStruct(reader, callFields, CONTEXT, out);
    return written;
  }

  reader.pos = startOf(callFields, payload);
  reader.fieldRanges(endOf(callFields, payload), payloadFields);
  const plan = BODY_PLANS[payload]!;
  out.raw(plan.opening);
  const members = plan.members;
  for (let index = 0; index < members.length; index++) {
    const member = members[index]!;
    const fields = member.inCall ? callFields : payloadFields;
    if (member.how === OBJECT) object(reader, fields, member.field, member.key, out, exact);
    // Only when set: an empty page name, say, is left out.
    else if (member.how === TEXT || isSet(fields, member.field)) text(reader, fields, member.field, member.key, out);
  }
  // A Struct the body does not show (a screen's properties) is still read by the decoder: it must decode.
  if (plan.hiddenStruct !== 0 && has(payloadFields, plan.hiddenStruct) && !exact) {
    checkStruct(reader, payloadFields, plan.hiddenStruct, out, STRUCT_DEPTH + 1);
  }
  out.raw(KEYS.timestamp);
  out.plainString(isoTextOfTime(Number.isNaN(timestampMs) ? (Number.isNaN(receivedAtMs) ? Date.now() : receivedAtMs) : timestampMs));
  text(reader, callFields, MESSAGE_ID, KEYS.messageId, out);
  if (isSet(callFields, ANONYMOUS_ID)) text(reader, callFields, ANONYMOUS_ID, KEYS.anonymousId, out);
  if (has(callFields, CONTEXT)) {
    out.raw(KEYS.context);
    struct(reader, startOf(callFields, CONTEXT), endOf(callFields, CONTEXT), STRUCT_DEPTH, out, exact);
  }
  out.byte(CLOSE);
  return written;
}

/** Where a field recorded by WireReader.fieldRanges starts (-1: absent) and ends. */
function startOf(fields: Int32Array, field: number): number {
  return fields[2 * field]!;
}

function endOf(fields: Int32Array, field: number): number {
  return fields[2 * field + 1]!;
}

/** Whether a field is present. */
function has(fields: Int32Array, field: number): boolean {
  return startOf(fields, field) >= 0;
}

/** Whether a string field is present and not empty. */
function isSet(fields: Int32Array, field: number): boolean {
  return endOf(fields, field) > startOf(fields, field);
}

/** `key` and a string field's JSON ("" when absent). */
function text(reader: WireReader, fields: Int32Array, field: number, key: Buffer, out: JsonBytes): void {
  out.raw(key);
  if (has(fields, field)) out.utf8String(reader.buf, startOf(fields, field), endOf(fields, field));
  else out.plainString("");
}

/** `key` and a Struct field's JSON ({} when absent). */
function object(reader: WireReader, fields: Int32Array, field: number, key: Buffer, out: JsonBytes, exact: boolean): void {
  out.raw(key);
  if (has(fields, field)) struct(reader, startOf(fields, field), endOf(fields, field), STRUCT_DEPTH + 1, out, exact);
  else out.raw(EMPTY_OBJECT);
}

/** A Struct's JSON; in exact mode, one the plain walk leaves to the decoder is decoded and written by JSON.stringify. */
function struct(reader: WireReader, start: number, end: number, depth: number, out: JsonBytes, exact: boolean): void {
  if (!exact) return writeStruct(reader, start, end, depth, out);
  const mark = out.mark();
  try {
    writeStruct(reader, start, end, depth, out);
  } catch (error) {
    if (error !== UNUSUAL) throw error;
    out.rewind(mark);
    out.jsonText(JSON.stringify(readStructBytes(reader.buf.subarray(start, end))));
  }
}

/** A Timestamp field's milliseconds; in exact mode, one the plain read leaves to the decoder is decoded. */
function timestampMillis(reader: WireReader, fields: Int32Array, field: number, exact: boolean): number {
  const start = startOf(fields, field);
  const end = endOf(fields, field);
  if (!exact) return reader.timestampMillis(start, end);
  try {
    return reader.timestampMillis(start, end);
  } catch (error) {
    if (error !== UNUSUAL) throw error;
    // As the generated decoder makes its Date of them.
    const { seconds, nanos } = Timestamp.decode(reader.buf.subarray(start, end));
    let millis = seconds * 1_000;
    millis += nanos / 1_000_000;
    return millis;
  }
}

/** Walks a Struct for its errors only: what it writes is dropped. */
function checkStruct(reader: WireReader, fields: Int32Array, field: number, out: JsonBytes, depth = STRUCT_DEPTH): void {
  const mark = out.mark();
  writeStruct(reader, startOf(fields, field), endOf(fields, field), depth, out);
  out.rewind(mark);
}
