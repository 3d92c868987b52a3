import { BinaryReader } from "@bufbuild/protobuf/wire";
import { CALL_FIELDS, setMember, Timestamp, type Call, type CallBatch } from "@switchyard/contracts";
import { PAYLOADS, type PayloadCase } from "./call-shape.js";
import {
  BATCH_CALLS as CALLS,
  BATCH_ID,
  BATCH_RECEIVED_AT,
  BATCH_SOURCE_ID as SOURCE_ID,
  ENTRY_KEY,
  ENTRY_VALUE,
  lengthTag,
  LIST_VALUES,
  STRUCT_FIELDS,
  VALUE_BOOL,
  VALUE_LIST,
  VALUE_NULL,
  VALUE_NUMBER,
  VALUE_STRING,
  VALUE_STRUCT,
  WireType,
} from "./tags.js";
// The generated decoder this one matches is the one with every Struct key kept (see struct-keys.ts).

/**
 * Decodes a switchyard.v1.CallBatch to exactly what the generated
 * `CallBatch.decode` returns (a property test holds the two equal, bad bytes
 * included), for less. The generated decoder turns every
 * google.protobuf.Struct into a message of map entries holding Value messages
 * holding `{ $case, value }` objects, then copies all of it into the plain
 * object it returns; this one builds the plain object directly, sparing
 * delivery that copying wherever it decodes a batch.
 *
 * Written in the generated decoder's shape, so its edge cases stay the same:
 * the last occurrence of a field wins (embedded messages are replaced, not
 * merged), unknown fields and fields with an unexpected wire type are skipped,
 * an end-group or zero tag ends the message being read, and more than 100
 * nested messages throw.
 */
export function readCallBatch(bytes: Uint8Array): CallBatch {
  const reader = new CallBatchReader(bytes);
  enter(0);
  const batch: CallBatch = { batchId: "", sourceId: "", receivedAt: undefined, calls: [] };
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag === BATCH_ID) batch.batchId = reader.text();
    else if (tag === SOURCE_ID) batch.sourceId = reader.text();
    else if (tag === BATCH_RECEIVED_AT) batch.receivedAt = readTimestamp(reader, 1);
    else if (tag === CALLS) batch.calls.push(readCall(reader, reader.uint32(), 1));
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return batch;
}

// Tags of the fields read, from the generated field numbers.

/** A payload message as this decoder reads it: its text fields, then its Struct, by tag and property name. */
interface PayloadReadShape {
  readonly type: PayloadCase;
  readonly texts: readonly { readonly tag: number; readonly key: string }[];
  readonly structTag: number;
  readonly structKey: string;
  /** The generated decoder's empty message: "" for a text, undefined for the Struct, keys in number order (a Struct may come before a text). */
  readonly empty: readonly { readonly key: string; readonly value: "" | undefined }[];
}

/** How one of Call's own fields (not the payload) is read. */
const enum Read {
  TEXT,
  STRUCT,
  TIMESTAMP,
}

/** Call's own fields by tag, from the Call model (tags are small: a sparse array is the quickest lookup). */
const CALL_FIELD_BY_TAG: ({ readonly key: string; readonly read: Read } | undefined)[] = [];
/** The generated decoder's empty Call: "" for a text, undefined for the rest, keys in number order. */
const EMPTY_CALL: Record<string, unknown> = {};
for (const field of CALL_FIELDS) {
  if (field.kind === "payload") continue;
  CALL_FIELD_BY_TAG[field.tag] = {
    key: field.json,
    read: field.kind === "text" ? Read.TEXT : field.kind === "struct" ? Read.STRUCT : Read.TIMESTAMP,
  };
  EMPTY_CALL[field.json] = field.kind === "text" ? "" : undefined;
}
EMPTY_CALL.payload = undefined;

/** The payloads by their tag in Call (tags are small: a sparse array is the quickest lookup). */
const PAYLOAD_BY_TAG: (PayloadReadShape | undefined)[] = [];
for (const shape of PAYLOADS) {
  PAYLOAD_BY_TAG[lengthTag(shape.field)] = {
    type: shape.type,
    texts: shape.texts.map(({ field, key }) => ({ tag: lengthTag(field), key })),
    structTag: shape.struct ? lengthTag(shape.struct.field) : -1,
    structKey: shape.struct?.key ?? "",
    empty: [
      ...shape.texts.map((text) => ({ ...text, value: "" as const })),
      ...(shape.struct ? [{ ...shape.struct, value: undefined }] : []),
    ]
      .sort((a, b) => a.field - b.field)
      .map(({ key, value }) => ({ key, value })),
  };
}

/**
 * A google.protobuf.Struct's bytes as the plain object the generated code
 * makes of them (see readStruct); for the body writer's exact mode.
 */
export function readStructBytes(bytes: Uint8Array): Record<string, unknown> {
  return readStruct(new CallBatchReader(bytes), bytes.length, 0);
}

/**
 * A BinaryReader whose `text()` reads a string field the way `string()` does,
 * but decoded by Buffer straight from the batch's bytes: `string()` builds an
 * array of char codes (or a view) per string, and a batch has thousands of
 * strings. Invalid UTF-8 becomes U+FFFD the same way (the tests compare).
 */
class CallBatchReader extends BinaryReader {
  // Not `view`: BinaryReader has a private DataView of that name.
  private readonly textBytes: Buffer;

  constructor(bytes: Uint8Array) {
    super(bytes);
    this.textBytes = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  text(): string {
    const length = this.uint32();
    const start = this.pos;
    this.pos += length;
    if (this.pos > this.len) throw new RangeError("premature EOF");
    return this.textBytes.toString("utf8", start, this.pos);
  }
}

/** The generated decoders' limit: a message nested in 100 others is refused. */
const RECURSION_LIMIT = 100;

/** `depth`: how many messages enclose the one about to be read. */
function enter(depth: number): void {
  if (depth >= RECURSION_LIMIT) throw new Error("protobuf decode recursion limit exceeded");
}

function endsMessage(tag: number): boolean {
  return (tag & 7) === WireType.END_GROUP || tag === 0;
}

function readCall(reader: CallBatchReader, length: number, depth: number): Call {
  enter(depth);
  const end = reader.pos + length;
  const inner = depth + 1;
  const call = { ...EMPTY_CALL } as unknown as Call;
  const fields = call as unknown as Record<string, unknown>;
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag < CALL_FIELD_BY_TAG.length ? CALL_FIELD_BY_TAG[tag] : undefined;
    if (field) {
      fields[field.key] =
        field.read === Read.TEXT
          ? reader.text()
          : field.read === Read.STRUCT
            ? readStruct(reader, reader.uint32(), inner)
            : readTimestamp(reader, inner);
      continue;
    }
    const payload = tag < PAYLOAD_BY_TAG.length ? PAYLOAD_BY_TAG[tag] : undefined;
    if (payload) {
      const value = readPayload(reader, reader.uint32(), inner, payload);
      call.payload = { $case: payload.type, value } as Call["payload"];
      continue;
    }
    if (endsMessage(tag)) break;
    reader.skip(tag & 7);
  }
  return call;
}

/** google.protobuf.Timestamp as the generated Call decoder converts it: a Date of its milliseconds. */
function readTimestamp(reader: CallBatchReader, depth: number): Date {
  // The generated Timestamp decoder (int64 range checks included), at the same nesting depth.
  (reader as unknown as { __tsProtoDecodeDepth: number }).__tsProtoDecodeDepth = depth;
  const { seconds, nanos } = Timestamp.decode(reader, reader.uint32());
  let millis = (seconds || 0) * 1_000;
  millis += (nanos || 0) / 1_000_000;
  return new Date(millis);
}

/**
 * A payload message, as the generated decoder makes it: every field present
 * (texts "", the Struct undefined) in field order, then the values read.
 */
function readPayload(reader: CallBatchReader, length: number, depth: number, shape: PayloadReadShape): Record<string, unknown> {
  enter(depth);
  const end = reader.pos + length;
  const texts = shape.texts;
  const payload: Record<string, unknown> = {};
  const empty = shape.empty;
  for (let index = 0; index < empty.length; index++) payload[empty[index]!.key] = empty[index]!.value;
  while (reader.pos < end) {
    const tag = reader.uint32();
    let text = 0;
    while (text < texts.length && texts[text]!.tag !== tag) text++;
    if (text < texts.length) payload[texts[text]!.key] = reader.text();
    else if (tag === shape.structTag) payload[shape.structKey] = readStruct(reader, reader.uint32(), depth + 1);
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return payload;
}

/**
 * google.protobuf.Struct as a plain object. Entries without a value are left
 * out; a repeated key keeps its first position and its last value; the key
 * "__proto__" is an ordinary member: all as the (patched, see struct-keys.ts)
 * generated decode-then-unwrap does it.
 */
function readStruct(reader: CallBatchReader, length: number, depth: number): Record<string, unknown> {
  enter(depth);
  const end = reader.pos + length;
  const object: Record<string, unknown> = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === STRUCT_FIELDS) {
      // A map entry (Struct.FieldsEntry): a key and a value.
      const entryEnd = readEntryStart(reader, depth + 1);
      let key = "";
      let value: unknown;
      while (reader.pos < entryEnd) {
        const entryTag = reader.uint32();
        if (entryTag === ENTRY_KEY) key = reader.text();
        else if (entryTag === ENTRY_VALUE) value = readValue(reader, reader.uint32(), depth + 2);
        else if (endsMessage(entryTag)) break;
        else reader.skip(entryTag & 7);
      }
      if (value !== undefined) setMember(object, key, value);
    } else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return object;
}

function readEntryStart(reader: CallBatchReader, depth: number): number {
  const length = reader.uint32();
  enter(depth);
  return reader.pos + length;
}

/** google.protobuf.Value as its plain value: null, number, string, boolean, object, array; undefined without a kind. */
function readValue(reader: CallBatchReader, length: number, depth: number): unknown {
  enter(depth);
  const end = reader.pos + length;
  let value: unknown;
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag) {
      case VALUE_NULL:
        reader.int32();
        value = null;
        continue;
      case VALUE_NUMBER:
        value = reader.double();
        continue;
      case VALUE_STRING:
        value = reader.text();
        continue;
      case VALUE_BOOL:
        value = reader.bool();
        continue;
      case VALUE_STRUCT:
        value = readStruct(reader, reader.uint32(), depth + 1);
        continue;
      case VALUE_LIST:
        value = readList(reader, reader.uint32(), depth + 1);
        continue;
    }
    if (endsMessage(tag)) break;
    reader.skip(tag & 7);
  }
  return value;
}

/** google.protobuf.ListValue as an array; a Value without a kind is an undefined element. */
function readList(reader: CallBatchReader, length: number, depth: number): unknown[] {
  enter(depth);
  const end = reader.pos + length;
  const values: unknown[] = [];
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === LIST_VALUES) values.push(readValue(reader, reader.uint32(), depth + 1));
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return values;
}
