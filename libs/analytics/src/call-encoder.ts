import type { ValidCall } from "@switchyard/calls";
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
 * in arrays, and NaN and ±Infinity become null.
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

/** Writes `call` (with its messageId already set) as a Call message body. */
export function encodeCall(writer: ProtoWriter, call: ValidCall & { messageId: string }): void {
  writer.string(MESSAGE_ID, call.messageId);
  if (call.userId) writer.string(USER_ID, call.userId);
  if (call.anonymousId) writer.string(ANONYMOUS_ID, call.anonymousId);
  if (call.timestamp !== undefined) writeTimestamp(writer, TIMESTAMP, Date.parse(call.timestamp));
  if (call.context) writeStructField(writer, CONTEXT, call.context);
  if (call.integrations) writeStructField(writer, INTEGRATIONS, call.integrations);

  const payload = writer.begin(PAYLOAD_FIELD[call.type]);
  switch (call.type) {
    case "identify":
      if (call.traits) writeStructField(writer, 1, call.traits);
      break;
    case "track":
      writer.string(1, call.event);
      if (call.properties) writeStructField(writer, 2, call.properties);
      break;
    case "page":
    case "screen":
      if (call.name) writer.string(1, call.name);
      if (call.category) writer.string(2, call.category);
      if (call.properties) writeStructField(writer, 3, call.properties);
      break;
    case "group":
      writer.string(1, call.groupId);
      if (call.traits) writeStructField(writer, 2, call.traits);
      break;
    case "alias":
      writer.string(1, call.previousId);
      break;
  }
  writer.end(payload);
}

/** google.protobuf.Timestamp as the generated code writes a Date: whole milliseconds, both parts rounded toward zero. */
function writeTimestamp(writer: ProtoWriter, field: number, millis: number): void {
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
}

function writeStructField(writer: ProtoWriter, field: number, object: Record<string, unknown>): void {
  const mark = writer.begin(field);
  writeStructBody(writer, object);
  writer.end(mark);
}

function writeStructBody(writer: ProtoWriter, object: object): void {
  for (const key in object) {
    if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
    const value = jsonValue((object as Record<string, unknown>)[key], key);
    if (value === undefined || typeof value === "function" || typeof value === "symbol") continue;
    const entry = writer.begin(STRUCT_FIELDS);
    writer.string(ENTRY_KEY, key);
    writeValueField(writer, ENTRY_VALUE, value);
    writer.end(entry);
  }
}

/** What JSON.stringify would serialise in place of `value`. */
function jsonValue(value: unknown, key: string): unknown {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  return value;
}

function writeValueField(writer: ProtoWriter, field: number, value: unknown): void {
  const mark = writer.begin(field);
  switch (typeof value) {
    case "string":
      writer.string(VALUE_STRING, value);
      break;
    case "number":
      if (Number.isFinite(value)) writer.double(VALUE_NUMBER, value);
      else writeNull(writer);
      break;
    case "boolean":
      writer.tag(VALUE_BOOL, 0);
      writer.varint(value ? 1 : 0);
      break;
    case "object":
      if (value === null) writeNull(writer);
      else if (Array.isArray(value)) writeList(writer, value);
      else {
        const struct = writer.begin(VALUE_STRUCT);
        writeStructBody(writer, value);
        writer.end(struct);
      }
      break;
    default:
      // undefined, functions and symbols inside arrays: JSON writes null.
      writeNull(writer);
  }
  writer.end(mark);
}

function writeNull(writer: ProtoWriter): void {
  writer.tag(VALUE_NULL, 0);
  writer.varint(0);
}

function writeList(writer: ProtoWriter, items: readonly unknown[]): void {
  const list = writer.begin(VALUE_LIST);
  for (let index = 0; index < items.length; index++) {
    writeValueField(writer, LIST_VALUES, jsonValue(items[index], String(index)));
  }
  writer.end(list);
}

/** The messageId of an encoded Call (field 1, written first by encodeCall). */
export function messageIdOf(bytes: Uint8Array): string {
  // Tag 0x0a, then a varint length, then the UTF-8 text.
  let pos = 1;
  let length = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[pos++]!;
    length |= (byte & 0x7f) << shift;
    if (byte < 0x80) break;
    shift += 7;
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset + pos, length).toString("utf8");
}
