import { protoCallToJson } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import { INVALID_UTF8, JsonObjectSize, jsonStringSize } from "./json-size.js";
import { enterMessage, walkStruct, type WalkNotes } from "./struct-walker.js";
import { decodeText, WireReader, WireType } from "./wire-reader.js";

/**
 * Reads a switchyard.v1.Call from its protobuf bytes in one pass, for the gRPC
 * fast path: the scalar fields and the payload's text fields are decoded, the
 * timestamps too, integrations fully (its values have rules); the free-form
 * Structs (context, traits, properties) are only checked to be well-formed and
 * measured, never decoded. Anything that is not valid wire data throws
 * MalformedWireError.
 */
export interface ScannedCall {
  /** The call's bytes, as the client sent them. */
  readonly bytes: Buffer;
  /**
   * The call as the generated decoder would return it, except that its
   * free-form Structs are `{}` placeholders (present or absent like the real
   * ones): every rule about them is "is an object", which the walk already
   * guarantees. `integrations` is decoded in full.
   */
  readonly outline: Call;
  /** The outline in Segment JSON shape, what the call rules check. */
  readonly json: Record<string, unknown>;
  /** An upper bound of the call's JSON size (see json-size.ts). */
  readonly jsonSizeBound: number;
  /**
   * The byte ranges to copy to the bus, as [start, end) pairs: every field but
   * timestamp and received_at (ingest writes both) and unknown fields (which
   * the decoder would drop).
   */
  readonly keptRanges: readonly number[];
  /** The bytes must not be passed through (see WalkNotes); decode and re-encode the call instead. */
  readonly irregular: boolean;
}

type PayloadCase = NonNullable<Call["payload"]>["$case"];

/**
 * The fields of one payload message: its text fields and its Struct, each by
 * tag and by property name in the generated type (which is also its JSON key).
 */
interface PayloadShape {
  readonly type: PayloadCase;
  readonly texts: readonly { readonly tag: number; readonly key: string }[];
  readonly structTag: number;
  readonly structKey: string;
}

function lengthTag(fieldNumber: number): number {
  return (fieldNumber << 3) | WireType.LEN;
}

/** `texts` and `struct` map field numbers to property names. */
function payloadShape(type: PayloadCase, texts: Record<number, string>, struct?: Record<number, string>): PayloadShape {
  const [structField, structKey] = Object.entries(struct ?? {})[0] ?? ["-1", ""];
  return {
    type,
    texts: Object.entries(texts).map(([field, key]) => ({ tag: lengthTag(Number(field)), key })),
    structTag: structKey ? lengthTag(Number(structField)) : -1,
    structKey,
  };
}

/** The payload oneof of Call (fields 10-16), by tag. */
const PAYLOADS = new Map<number, PayloadShape>([
  [lengthTag(10), payloadShape("identify", {}, { 1: "traits" })],
  [lengthTag(11), payloadShape("track", { 1: "event" }, { 2: "properties" })],
  [lengthTag(12), payloadShape("page", { 1: "name", 2: "category" }, { 3: "properties" })],
  [lengthTag(13), payloadShape("screen", { 1: "name", 2: "category" }, { 3: "properties" })],
  [lengthTag(14), payloadShape("group", { 1: "groupId" }, { 2: "traits" })],
  [lengthTag(15), payloadShape("alias", { 1: "previousId" })],
  [lengthTag(16), payloadShape("delete", {})],
]);

const MESSAGE_ID = lengthTag(1);
const USER_ID = lengthTag(2);
const ANONYMOUS_ID = lengthTag(3);
const TIMESTAMP = lengthTag(4);
const CONTEXT = lengthTag(5);
const INTEGRATIONS = lengthTag(6);
const RECEIVED_AT = lengthTag(7);
const TIMESTAMP_SECONDS = (1 << 3) | WireType.VARINT;
const TIMESTAMP_NANOS = (2 << 3) | WireType.VARINT;

/** The Call's level, counted like the decoder counts it: inside IngestBatchRequest, IngestCallRequest or CallBatch. */
const CALL_LEVEL = 2;

/** Where a text field's bytes are (-1 when absent) and, once decoded, its JSON size. */
class TextField {
  start = -1;
  end = -1;
  jsonSize = 0;
}

export function scanCall(bytes: Buffer): ScannedCall {
  const reader = new WireReader(bytes);
  const end = bytes.length;
  const notes: WalkNotes = { irregular: false };
  const messageId = new TextField();
  const userId = new TextField();
  const anonymousId = new TextField();
  const keptRanges: number[] = [];
  let timestamp: Date | undefined;
  let contextSize = -1;
  let integrations: { start: number; end: number; size: number } | undefined;
  let payload: ScannedPayload | undefined;

  while (reader.pos < end) {
    const fieldStart = reader.pos;
    const tag = reader.tag(end);
    let kept = true;
    if (tag === MESSAGE_ID) readTextRange(reader, end, messageId);
    else if (tag === USER_ID) readTextRange(reader, end, userId);
    else if (tag === ANONYMOUS_ID) readTextRange(reader, end, anonymousId);
    else if (tag === TIMESTAMP) {
      // The decoder keeps the last timestamp; ingest writes it back itself.
      timestamp = readTimestamp(reader, end, CALL_LEVEL + 1);
      kept = false;
    } else if (tag === CONTEXT) {
      if (contextSize >= 0) notes.irregular = true;
      contextSize = readStruct(reader, end, CALL_LEVEL + 1, notes);
    } else if (tag === INTEGRATIONS) {
      if (integrations) notes.irregular = true;
      const size = readStruct(reader, end, CALL_LEVEL + 1, notes);
      integrations = { start: fieldStart, end: reader.pos, size };
    } else if (tag === RECEIVED_AT) {
      // Set by ingest; a client's is checked like the decoder would, then dropped.
      readTimestamp(reader, end, CALL_LEVEL + 1);
      kept = false;
    } else {
      const shape = PAYLOADS.get(tag);
      if (shape) {
        if (payload) notes.irregular = true;
        payload = scanPayload(reader, end, shape, CALL_LEVEL + 1, notes);
      } else {
        // Unknown field, or a known one with the wrong wire type: the decoder skips both.
        reader.skipField(tag, end);
        kept = false;
      }
    }
    if (kept) keepRange(keptRanges, fieldStart, reader.pos);
  }

  const outline: Call = {
    messageId: textOf(bytes, messageId, notes),
    userId: textOf(bytes, userId, notes),
    anonymousId: textOf(bytes, anonymousId, notes),
    timestamp,
    context: contextSize >= 0 ? {} : undefined,
    // Small, and its values have rules: decoded in full, by the generated decoder (the field alone is a valid Call).
    integrations: integrations && Call.decode(bytes.subarray(integrations.start, integrations.end)).integrations,
    receivedAt: undefined,
    payload: payload && ({ $case: payload.type, value: payload.value } as Call["payload"]),
  };
  const json = protoCallToJson(outline);

  // The members protoCallToJson writes, in its order.
  const size = new JsonObjectSize();
  if (payload) size.add("type", payload.type.length + 2);
  if (outline.messageId !== "") size.add("messageId", messageId.jsonSize);
  if (outline.userId !== "") size.add("userId", userId.jsonSize);
  if (outline.anonymousId !== "") size.add("anonymousId", anonymousId.jsonSize);
  if (typeof json.timestamp === "string") size.add("timestamp", json.timestamp.length + 2);
  if (contextSize >= 0) size.add("context", contextSize);
  if (integrations) size.add("integrations", integrations.size);
  if (payload) payload.addMembers(size);

  return { bytes, outline, json, jsonSizeBound: size.total, keptRanges, irregular: notes.irregular };
}

/** A scanned payload message: the generated type's value, with a `{}` placeholder for its Struct. */
class ScannedPayload {
  constructor(
    readonly type: PayloadCase,
    readonly value: Record<string, unknown>,
    private readonly texts: readonly { key: string; field: TextField | undefined }[],
    private readonly structKey: string,
    private readonly structSize: number,
  ) {}

  /** Adds the members protoCallToJson writes for this payload: non-empty texts, a present Struct. */
  addMembers(size: JsonObjectSize): void {
    for (const { key, field } of this.texts) if (field && this.value[key] !== "") size.add(key, field.jsonSize);
    if (this.structSize >= 0) size.add(this.structKey, this.structSize);
  }
}

function scanPayload(reader: WireReader, callEnd: number, shape: PayloadShape, level: number, notes: WalkNotes): ScannedPayload {
  const end = reader.delimitedEnd(callEnd);
  enterMessage(level);
  // At most two text fields a payload: a lookup by position is all it needs.
  const texts = shape.texts.map(({ key }) => ({ key, field: undefined as TextField | undefined }));
  let structSize = -1;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    const index = textIndexOf(shape, tag);
    if (index >= 0) {
      const text = texts[index]!;
      text.field ??= new TextField();
      readTextRange(reader, end, text.field);
    } else if (tag === shape.structTag) {
      if (structSize >= 0) notes.irregular = true;
      structSize = readStruct(reader, end, level + 1, notes);
    } else {
      notes.irregular = true;
      reader.skipField(tag, end);
    }
  }

  const value: Record<string, unknown> = {};
  for (const { key, field } of texts) value[key] = field ? textOf(reader.buf, field, notes) : "";
  if (shape.structTag >= 0) value[shape.structKey] = structSize >= 0 ? {} : undefined;
  return new ScannedPayload(shape.type, value, texts, shape.structKey, structSize);
}

function textIndexOf(shape: PayloadShape, tag: number): number {
  for (let index = 0; index < shape.texts.length; index++) if (shape.texts[index]!.tag === tag) return index;
  return -1;
}

/** A length-delimited Struct field: checked and measured. */
function readStruct(reader: WireReader, end: number, level: number, notes: WalkNotes): number {
  const structEnd = reader.delimitedEnd(end);
  enterMessage(level);
  return walkStruct(reader, structEnd, level, notes);
}

/** A google.protobuf.Timestamp, converted to a Date exactly as the generated code converts it. */
function readTimestamp(reader: WireReader, callEnd: number, level: number): Date {
  const end = reader.delimitedEnd(callEnd);
  enterMessage(level);
  let seconds = 0;
  let nanos = 0;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag === TIMESTAMP_SECONDS) seconds = reader.int64(end);
    else if (tag === TIMESTAMP_NANOS) nanos = reader.int32(end);
    else reader.skipField(tag, end);
  }
  let millis = seconds * 1_000;
  millis += nanos / 1_000_000;
  return new Date(millis);
}

/** Records where a text field's bytes are; the last occurrence wins, as in the decoder. */
function readTextRange(reader: WireReader, end: number, field: TextField): void {
  const length = reader.length(end);
  field.start = reader.pos;
  field.end = reader.pos + length;
  reader.pos = field.end;
}

/** Decodes a text field and measures its JSON; text that is not valid UTF-8 makes the call irregular. */
function textOf(bytes: Buffer, field: TextField, notes: WalkNotes): string {
  if (field.start < 0) return "";
  field.jsonSize = jsonStringSize(bytes, field.start, field.end);
  if (field.jsonSize === INVALID_UTF8) notes.irregular = true;
  return decodeText(bytes, field.start, field.end);
}

/** Adds [start, end) to the ranges, merging it with the previous one when they touch. */
function keepRange(ranges: number[], start: number, end: number): void {
  if (ranges.length > 0 && ranges[ranges.length - 1] === start) ranges[ranges.length - 1] = end;
  else ranges.push(start, end);
}
