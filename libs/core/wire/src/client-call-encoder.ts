import {
  COMMON_FIELDS,
  isoMillis,
  isFourDigitYearTime,
  ISO_TEXT_LENGTH,
  MAX_MESSAGE_LEVEL,
  valueFitsAtLevel,
  type CallKind,
  type ClientObjectKey,
  type ClientTextKey,
  type CommonField,
  type PAYLOAD_RULES,
} from "@switchyard/calls";
import { TimestampField } from "@switchyard/contracts";
import { PAYLOAD_SHAPES, type PayloadCase } from "./call-shape.js";
import { Unrepresentable, type ProtoWriter } from "./writer.js";
import { STRUCT_FIELD_NUMBERS, WireType } from "./tags.js";

/**
 * The client library's call encoder: writes a valid call as the bytes of a switchyard.v1.Call
 * (proto/switchyard/v1/calls.proto), straight from the object: the queue
 * keeps these bytes, not the object graph, and a batch request is the
 * concatenation of its calls. messageId is written first, so
 * it can be read back from the bytes (see messageIdOf).
 *
 * Free-form values become google.protobuf.Struct exactly as JSON.stringify
 * would write them: toJSON() is honoured (a Date becomes its ISO text),
 * undefined, functions and symbols are left out of objects and become null
 * in arrays. NaN, ±Infinity and text with a lone surrogate, which
 * JSON.stringify would write as null or U+FFFD, and a BigInt, which it
 * refuses, throw Unrepresentable (writer.ts): the call rules refuse them. The JSON
 * size is added up on the way, so no JSON text is ever built.
 *
 * The nesting limit is checked on the way too, level by level as
 * tooDeeplyNestedField (@switchyard/calls) counts them, so that no separate
 * walk over the call is needed and a circular object stops the walk: a value
 * nested too deeply throws NestedTooDeeply. What the encoder writes in place
 * of a value (a Date's toJSON() text) is counted as the value itself, as the
 * rule does, and what toJSON() returns is held to the limit as well.
 */

/** How encodeCall writes each of the Call's own fields. */
const Write = { MESSAGE_ID: 0, TEXT: 1, TIMESTAMP: 2, OTHER_TIMESTAMP: 3, CONTEXT: 4, STRUCT: 5, RECEIVED_AT: 6 } as const;
type Write = (typeof Write)[keyof typeof Write];

/** How encodeCall writes one of the Call's own fields. */
function writeOf({ key, kind, rule }: CommonField): Write {
  if (rule === "set_by_ingest") return Write.RECEIVED_AT;
  if (rule === "message_id") return Write.MESSAGE_ID;
  if (kind === "text") return Write.TEXT;
  if (kind === "struct") return key === "context" ? Write.CONTEXT : Write.STRUCT;
  return key === "timestamp" ? Write.TIMESTAMP : Write.OTHER_TIMESTAMP;
}

/** The Call's own fields as encodeCall writes them, in the Call model's order (the order Call.encode writes). */
const OWN_FIELDS: readonly { readonly write: Write; readonly field: number; readonly key: string }[] = COMMON_FIELDS.map((field) => ({
  write: writeOf(field),
  field: field.number,
  key: field.key,
}));

const { STRUCT_FIELDS, ENTRY_KEY, ENTRY_VALUE, VALUE_NULL, VALUE_NUMBER, VALUE_STRING, VALUE_BOOL, VALUE_STRUCT, VALUE_LIST, LIST_VALUES } =
  STRUCT_FIELD_NUMBERS;

/**
 * The size of one `"key":value` member of a JSON object and the comma before it. A call's JSON is
 * `{`, its members joined by commas, `}`: 1 plus its members so counted, as the first has no comma.
 * (A running number rather than an object per call: in a long-lived process, V8 drops the map of
 * short-lived objects at a major GC and the optimised encoder with it.) Keys are plain ASCII.
 */
function memberSize(key: string, valueSize: number): number {
  return 1 + key.length + 3 + valueSize;
}

/** Where the free-form fields start, counted as tooDeeplyNestedField counts (a call inside a CallBatch). */
const ROOT_LEVEL = 3;
const PAYLOAD_ROOT_LEVEL = 4;

/** The call types a client sends (delete notifications are made by the deletion API). */
export type ClientCallType = Exclude<PayloadCase, "delete">;

/** A free-form field of the call nests deeper than the decoders accept (the max_depth rule); `field` names it. */
export class NestedTooDeeply extends Error {
  constructor(readonly field: string) {
    super(`${field}: is nested too deeply to be stored`);
  }
}

/** Thrown from the walk and turned into NestedTooDeeply, with the field's name, by encodeCall; never escapes. */
const TOO_DEEP = new Error("nested too deeply");

type Rules = typeof PAYLOAD_RULES;
/** Every payload's text fields (required ones included) and objects, by name, as PAYLOAD_RULES lists them. */
type PayloadTexts = {
  [K in CallKind]: Rules[K]["texts"][number] | (Rules[K]["required"] extends { field: infer F } ? F : never);
}[CallKind];
type PayloadObjects = Exclude<{ [K in CallKind]: Rules[K]["object"] }[CallKind], undefined>;

/**
 * The fields of a valid call the encoder reads: a call as the rules returned it, or a caller's
 * message that quickAccept took as it is (without type or messageId, which come separately). The
 * fields a call of its type must have are there. The payloads' fields follow PAYLOAD_RULES.
 */
export type CallFields = { [K in Exclude<ClientTextKey, "messageId">]?: string } & { [K in ClientObjectKey]?: object } & {
  [K in PayloadTexts]?: string;
} & { [K in PayloadObjects]?: object };

/**
 * What ingest adds when it encodes a call it received as JSON (the HTTP fast path): the accept
 * time as received_at, written in field-number order, so that the bytes are those the generated
 * encoder writes for the same call.
 */
export interface IngestFields {
  receivedAtMillis: number;
}

/** JSON sizes of the literals. */
const NULL_SIZE = 4;
const TRUE_SIZE = 4;
const FALSE_SIZE = 5;

/**
 * Writes a valid call as a Call message body, and returns the size of its JSON as ingest measures
 * it for the 32 KB and 500 KB limits: the UTF-8 bytes of the call in Segment JSON shape as ingest
 * reads it back (the timestamp as full ISO 8601 text). `timestampMillis` is the call's timestamp,
 * undefined when it has none; `library`, when given, is written as context.library in place of
 * the caller's; `ingest`, when given, adds ingest's received_at. A `messageId` left undefined is
 * neither written nor counted (ingest writes its own in front of the bytes). Throws
 * NestedTooDeeply naming the field that nests too deeply, Unrepresentable for a number that is not
 * finite, a lone surrogate or a BigInt; what was written of the call is then to be discarded.
 */
export function encodeCall(
  writer: ProtoWriter,
  type: ClientCallType,
  messageId: string | undefined,
  call: CallFields,
  timestampMillis: number | undefined,
  library?: object,
  ingest?: IngestFields,
): number {
  let json = 1 + memberSize("type", type.length + 2);
  const fields = call as Record<string, unknown>;
  let field = "";
  try {
    for (let index = 0; index < OWN_FIELDS.length; index++) {
      const own = OWN_FIELDS[index]!;
      const value = fields[own.key];
      switch (own.write) {
        case Write.MESSAGE_ID:
          if (messageId !== undefined) json += memberSize(own.key, writer.string(own.field, messageId));
          break;
        case Write.TEXT:
          if (value) json += memberSize(own.key, writer.string(own.field, value as string));
          break;
        case Write.TIMESTAMP:
          if (timestampMillis !== undefined) json += memberSize(own.key, writeTimestamp(writer, own.field, timestampMillis));
          break;
        case Write.OTHER_TIMESTAMP:
          // A Date, or ISO text the rules accepted.
          if (value !== undefined) {
            const millis = value instanceof Date ? value.getTime() : isoMillis(value as string);
            json += memberSize(own.key, writeTimestamp(writer, own.field, millis));
          }
          break;
        case Write.CONTEXT:
          field = own.key;
          if (value || library) {
            json += memberSize(own.key, writeStructField(writer, own.field, value ?? {}, ROOT_LEVEL, library && "library", library));
          }
          break;
        case Write.STRUCT:
          field = own.key;
          if (value) json += memberSize(own.key, writeStructField(writer, own.field, value, ROOT_LEVEL));
          break;
        case Write.RECEIVED_AT:
          // Not part of the call's JSON: ingest's own field.
          if (ingest) writeTimestamp(writer, own.field, ingest.receivedAtMillis);
          break;
      }
    }

    // The payload's texts (required ones are non-empty: the rules checked), then its Struct.
    const shape = PAYLOAD_SHAPES[type];
    const payload = writer.begin(shape.field);
    const texts = shape.texts;
    for (let index = 0; index < texts.length; index++) {
      const text = texts[index]!;
      const value = fields[text.key] as string | undefined;
      if (value) json += memberSize(text.key, writer.string(text.field, value));
    }
    const struct = shape.struct;
    if (struct) {
      field = struct.key;
      const value = fields[struct.key] as object | undefined;
      if (value) json += memberSize(struct.key, writeStructField(writer, struct.field, value, PAYLOAD_ROOT_LEVEL));
    }
    writer.end(payload);
  } catch (error) {
    if (error === TOO_DEEP) throw new NestedTooDeeply(field);
    throw error;
  }
  return json;
}

/**
 * google.protobuf.Timestamp as the generated code writes a Date: whole milliseconds, both parts
 * rounded toward zero. Returns the JSON size of its ISO 8601 text.
 */
export function writeTimestamp(writer: ProtoWriter, field: number, millis: number): number {
  const seconds = Math.trunc(millis / 1_000);
  const nanos = (millis % 1_000) * 1_000_000;
  const mark = writer.begin(field);
  if (seconds !== 0) {
    writer.tag(TimestampField.SECONDS, WireType.VARINT);
    writer.int64(seconds);
  }
  if (nanos !== 0) {
    writer.tag(TimestampField.NANOS, WireType.VARINT);
    writer.int64(nanos);
  }
  writer.end(mark);
  return timestampJsonSize(millis);
}

/** The JSON size of a timestamp's full ISO 8601 text, as encodeCall counts it. */
export function timestampJsonSize(millis: number): number {
  // "YYYY-MM-DDTHH:MM:SS.mmmZ" with quotes for years 0000-9999; longer (±YYYYYY) outside them.
  return (isFourDigitYearTime(millis) ? ISO_TEXT_LENGTH : new Date(millis).toISOString().length) + 2;
}

function writeStructField(
  writer: ProtoWriter,
  field: number,
  object: object,
  level: number,
  extraKey?: string,
  extraValue?: unknown,
): number {
  const mark = writer.begin(field);
  const size = writeStructBody(writer, object, level, extraKey, extraValue);
  writer.end(mark);
  return size;
}

/**
 * Writes the members of a Struct standing at `level`, plus `extraKey: extraValue` in place of any
 * member with that key; returns the JSON size.
 */
function writeStructBody(writer: ProtoWriter, object: object, level: number, extraKey?: string, extraValue?: unknown): number {
  // The rule: the struct itself must fit, and each member's value, two levels deeper, even one
  // that JSON leaves out (undefined). Only near the limit do the members need counting.
  const valueLevel = level + 2;
  if (valueLevel > MAX_MESSAGE_LEVEL && (level > MAX_MESSAGE_LEVEL || Object.keys(object).length > 0)) throw TOO_DEEP;
  let size = 2;
  let members = 0;
  for (const key in object) {
    if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
    const member = (object as Record<string, unknown>)[key];
    if (key === extraKey) {
      // Replaced, but the rule counts the caller's value all the same.
      if (!valueFitsAtLevel(member, valueLevel)) throw TOO_DEEP;
      continue;
    }
    const value = jsonValue(member, key, valueLevel);
    if (value === undefined || typeof value === "function" || typeof value === "symbol") continue;
    size += writeStructEntry(writer, key, value, valueLevel) + (members++ > 0 ? 1 : 0);
  }
  if (extraKey !== undefined) size += writeStructEntry(writer, extraKey, extraValue, valueLevel) + (members > 0 ? 1 : 0);
  return size;
}

function writeStructEntry(writer: ProtoWriter, key: string, value: unknown, level: number): number {
  const entry = writer.begin(STRUCT_FIELDS);
  // An empty key is proto3's default: left out, as the generated encoder leaves it out ("" is 2 bytes of JSON).
  const keySize = key === "" ? 2 : writer.string(ENTRY_KEY, key);
  const size = keySize + 1 + writeValueField(writer, ENTRY_VALUE, value, level);
  writer.end(entry);
  return size;
}

/**
 * What JSON.stringify would serialise in place of `value` (at `level`), found under `key` (an
 * array index is given as a number and turned into text only for toJSON).
 */
function jsonValue(value: unknown, key: string | number, level: number): unknown {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    // The rule counts the value itself, not what is written in its place.
    if (!valueFitsAtLevel(value, level)) throw TOO_DEEP;
    return (value as { toJSON(key: string): unknown }).toJSON(String(key));
  }
  return value;
}

/** Writes one google.protobuf.Value, standing at `level`; returns its JSON size. */
function writeValueField(writer: ProtoWriter, field: number, value: unknown, level: number): number {
  const mark = writer.begin(field);
  let size: number;
  switch (typeof value) {
    case "string":
      size = writer.string(VALUE_STRING, value);
      break;
    case "number":
      writer.double(VALUE_NUMBER, value);
      size = numberJsonSize(value);
      break;
    case "boolean":
      writer.tag(VALUE_BOOL, WireType.VARINT);
      writer.varint(value ? 1 : 0);
      size = value ? TRUE_SIZE : FALSE_SIZE;
      break;
    case "object":
      if (value === null) size = writeNull(writer);
      else if (Array.isArray(value)) size = writeList(writer, value, level);
      else {
        const struct = writer.begin(VALUE_STRUCT);
        size = writeStructBody(writer, value, level + 1);
        writer.end(struct);
      }
      break;
    case "bigint":
      throw new Unrepresentable("bigint");
    default:
      // undefined, functions and symbols inside arrays: JSON writes null.
      size = writeNull(writer);
  }
  writer.end(mark);
  return size;
}

/**
 * Characters of a finite number in JSON: small integers and amounts with up to three decimals
 * counted, the rest printed. JSON writes the shortest decimal that reads back as the same number,
 * so an amount has k decimals for the least k at which rounding it to k decimals gives it back
 * (Math.round finds that rounding exactly while the scaled amount is far from 2^53: below 10^9).
 */
function numberJsonSize(value: number): number {
  if (Number.isInteger(value)) return value >= 0 && value < 1e9 ? integerDigits(value) : String(value).length;
  const magnitude = Math.abs(value);
  if (magnitude >= 0.001 && magnitude < 1e6) {
    for (let decimals = 1, scale = 10; decimals <= 3; decimals++, scale *= 10) {
      if (Math.round(magnitude * scale) / scale === magnitude) {
        return (value < 0 ? 1 : 0) + integerDigits(Math.floor(magnitude)) + 1 + decimals;
      }
    }
  }
  return String(value).length;
}

/** Decimal digits of an integer from 0 to 10^9. */
function integerDigits(value: number): number {
  let digits = 1;
  for (let power = 10; value >= power; power *= 10) digits++;
  return digits;
}

function writeNull(writer: ProtoWriter): number {
  writer.tag(VALUE_NULL, WireType.VARINT);
  writer.varint(0);
  return NULL_SIZE;
}

/** Writes the ListValue of a Value standing at `level`; returns its JSON size. */
function writeList(writer: ProtoWriter, items: readonly unknown[], level: number): number {
  // The rule: the list one level below its value, each item two; some() and the rule's every()
  // both pass over the holes of a sparse array (which JSON writes as null).
  const itemLevel = level + 2;
  if (itemLevel > MAX_MESSAGE_LEVEL && (level + 1 > MAX_MESSAGE_LEVEL || items.some(() => true))) throw TOO_DEEP;
  const list = writer.begin(VALUE_LIST);
  let size = 2 + (items.length > 0 ? items.length - 1 : 0);
  for (let index = 0; index < items.length; index++) {
    size += writeValueField(writer, LIST_VALUES, jsonValue(items[index], index, itemLevel), itemLevel);
  }
  writer.end(list);
  return size;
}

/** The messageId of an encoded Call (written first by encodeCall). */
export function messageIdOf(bytes: Buffer, offset = 0): string {
  // The tag (skipped), then a varint length, then the UTF-8 text.
  let pos = offset;
  while (bytes[pos++]! >= 0x80);
  let length = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[pos++]!;
    length |= (byte & 0x7f) << shift;
    if (byte < 0x80) break;
    shift += 7;
  }
  return bytes.toString("utf8", pos, pos + length);
}
