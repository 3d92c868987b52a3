import type { ValidCall } from "@switchyard/calls";
import { ValidationError } from "./errors.js";
import type { ProtoWriter } from "./proto-writer.js";

/**
 * Writes a valid call as the bytes of a switchyard.v1.Call
 * (proto/switchyard/v1/calls.proto), straight from the object: the queue
 * keeps these bytes, not the object graph, and a batch request is the
 * concatenation of its calls. messageId is field 1 and is written first, so
 * it can be read back from the bytes (see messageIdOf).
 *
 * Free-form values become google.protobuf.Struct exactly as JSON.stringify
 * would write them: toJSON() is honoured (a Date becomes its ISO text),
 * undefined, functions and symbols are left out of objects and become null
 * in arrays, NaN and ±Infinity become null, and a BigInt is refused. The
 * JSON size is added up on the way, so no JSON text is ever built.
 */

// Field numbers of switchyard.v1.Call.
const MESSAGE_ID = 1;
const USER_ID = 2;
const ANONYMOUS_ID = 3;
const TIMESTAMP = 4;
const CONTEXT = 5;
const INTEGRATIONS = 6;
const PAYLOAD_FIELD = { identify: 10, track: 11, page: 12, screen: 13, group: 14, alias: 15 } as const;

// google.protobuf.Struct, its map entry, Value and ListValue.
const STRUCT_FIELDS = 1;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;
const VALUE_NULL = 1;
const VALUE_NUMBER = 2;
const VALUE_STRING = 3;
const VALUE_BOOL = 4;
const VALUE_STRUCT = 5;
const VALUE_LIST = 6;
const LIST_VALUES = 1;

/**
 * Adds up the size of a JSON object member by member: `{`, `"key":value` pairs joined by commas, `}`.
 * Keys passed here are plain ASCII without escapes.
 */
class JsonObjectSize {
  private members = 0;
  private bytes = 2;

  add(key: string, valueSize: number): void {
    this.bytes += key.length + 3 + valueSize + (this.members++ > 0 ? 1 : 0);
  }

  get total(): number {
    return this.bytes;
  }
}

/** JSON sizes of the literals. */
const NULL_SIZE = 4;
const TRUE_SIZE = 4;
const FALSE_SIZE = 5;

/**
 * Writes `call` (with its messageId already set) as a Call message body, and returns the size
 * of its JSON as ingest measures it for the 32 KB and 500 KB limits: the UTF-8 bytes of the call
 * in Segment JSON shape as ingest reads it back (the timestamp as full ISO 8601 text).
 */
export function encodeCall(writer: ProtoWriter, call: ValidCall & { messageId: string }, library?: object): number {
  const json = new JsonObjectSize();
  json.add("type", call.type.length + 2);
  json.add("messageId", writer.string(MESSAGE_ID, call.messageId));
  if (call.userId) json.add("userId", writer.string(USER_ID, call.userId));
  if (call.anonymousId) json.add("anonymousId", writer.string(ANONYMOUS_ID, call.anonymousId));
  if (call.timestamp !== undefined) json.add("timestamp", writeTimestamp(writer, TIMESTAMP, Date.parse(call.timestamp)));
  if (call.context || library) json.add("context", writeStructField(writer, CONTEXT, call.context ?? {}, library && ["library", library]));
  if (call.integrations) json.add("integrations", writeStructField(writer, INTEGRATIONS, call.integrations));

  const payload = writer.begin(PAYLOAD_FIELD[call.type]);
  switch (call.type) {
    case "identify":
      if (call.traits) json.add("traits", writeStructField(writer, 1, call.traits));
      break;
    case "track":
      json.add("event", writer.string(1, call.event));
      if (call.properties) json.add("properties", writeStructField(writer, 2, call.properties));
      break;
    case "page":
    case "screen":
      if (call.name) json.add("name", writer.string(1, call.name));
      if (call.category) json.add("category", writer.string(2, call.category));
      if (call.properties) json.add("properties", writeStructField(writer, 3, call.properties));
      break;
    case "group":
      json.add("groupId", writer.string(1, call.groupId));
      if (call.traits) json.add("traits", writeStructField(writer, 2, call.traits));
      break;
    case "alias":
      json.add("previousId", writer.string(1, call.previousId));
      break;
  }
  writer.end(payload);
  return json.total;
}

/**
 * google.protobuf.Timestamp as the generated code writes a Date: whole milliseconds, both parts
 * rounded toward zero. Returns the JSON size of its ISO 8601 text.
 */
function writeTimestamp(writer: ProtoWriter, field: number, millis: number): number {
  const seconds = Math.trunc(millis / 1_000);
  const nanos = (millis % 1_000) * 1_000_000;
  const mark = writer.begin(field);
  if (seconds !== 0) {
    writer.tag(1, 0);
    writer.int64(seconds);
  }
  if (nanos !== 0) {
    writer.tag(2, 0);
    writer.int64(nanos);
  }
  writer.end(mark);
  // "YYYY-MM-DDTHH:MM:SS.mmmZ" with quotes for years 0000-9999; longer (±YYYYYY) outside them.
  return millis >= -62_167_219_200_000 && millis <= 253_402_300_799_999 ? 26 : new Date(millis).toISOString().length + 2;
}

function writeStructField(writer: ProtoWriter, field: number, object: Record<string, unknown>, extra?: [string, unknown]): number {
  const mark = writer.begin(field);
  const size = writeStructBody(writer, object, extra);
  writer.end(mark);
  return size;
}

/** Writes the members of a Struct, plus `extra` ([key, value]) in place of any member with its key; returns the JSON size. */
function writeStructBody(writer: ProtoWriter, object: object, extra?: [string, unknown]): number {
  let size = 2;
  let members = 0;
  for (const key in object) {
    if (!Object.prototype.hasOwnProperty.call(object, key) || key === extra?.[0]) continue;
    const value = jsonValue((object as Record<string, unknown>)[key], key);
    if (value === undefined || typeof value === "function" || typeof value === "symbol") continue;
    size += writeStructEntry(writer, key, value) + (members++ > 0 ? 1 : 0);
  }
  if (extra) size += writeStructEntry(writer, extra[0], extra[1]) + (members > 0 ? 1 : 0);
  return size;
}

function writeStructEntry(writer: ProtoWriter, key: string, value: unknown): number {
  const entry = writer.begin(STRUCT_FIELDS);
  const size = writer.string(ENTRY_KEY, key) + 1 + writeValueField(writer, ENTRY_VALUE, value);
  writer.end(entry);
  return size;
}

/** What JSON.stringify would serialise in place of `value`. */
function jsonValue(value: unknown, key: string): unknown {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  return value;
}

/** Writes one google.protobuf.Value; returns its JSON size. */
function writeValueField(writer: ProtoWriter, field: number, value: unknown): number {
  const mark = writer.begin(field);
  let size: number;
  switch (typeof value) {
    case "string":
      size = writer.string(VALUE_STRING, value);
      break;
    case "number":
      if (Number.isFinite(value)) {
        writer.double(VALUE_NUMBER, value);
        size = numberJsonSize(value);
      } else size = writeNull(writer);
      break;
    case "boolean":
      writer.tag(VALUE_BOOL, 0);
      writer.varint(value ? 1 : 0);
      size = value ? TRUE_SIZE : FALSE_SIZE;
      break;
    case "object":
      if (value === null) size = writeNull(writer);
      else if (Array.isArray(value)) size = writeList(writer, value);
      else {
        const struct = writer.begin(VALUE_STRUCT);
        size = writeStructBody(writer, value);
        writer.end(struct);
      }
      break;
    case "bigint":
      throw new ValidationError("", "type", "call: cannot be written as JSON: BigInt values are not JSON (rule: type)");
    default:
      // undefined, functions and symbols inside arrays: JSON writes null.
      size = writeNull(writer);
  }
  writer.end(mark);
  return size;
}

/** Characters of a finite number in JSON: small integers counted, the rest printed. */
function numberJsonSize(value: number): number {
  if (Number.isInteger(value) && value >= 0 && value < 1e9) {
    let digits = 1;
    for (let power = 10; value >= power; power *= 10) digits++;
    return digits;
  }
  return String(value).length;
}

function writeNull(writer: ProtoWriter): number {
  writer.tag(VALUE_NULL, 0);
  writer.varint(0);
  return NULL_SIZE;
}

function writeList(writer: ProtoWriter, items: readonly unknown[]): number {
  const list = writer.begin(VALUE_LIST);
  let size = 2 + (items.length > 0 ? items.length - 1 : 0);
  for (let index = 0; index < items.length; index++) {
    size += writeValueField(writer, LIST_VALUES, jsonValue(items[index], String(index)));
  }
  writer.end(list);
  return size;
}

/** The messageId of an encoded Call (field 1, written first by encodeCall). */
export function messageIdOf(bytes: Buffer, offset = 0): string {
  // Tag 0x0a, then a varint length, then the UTF-8 text.
  let pos = offset + 1;
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
