import { BinaryReader } from "@bufbuild/protobuf/wire";
import {
  setMember,
  Timestamp,
  type Alias,
  type Call,
  type CallBatch,
  type Group,
  type Identify,
  type Page,
  type Screen,
  type Track,
} from "@switchyard/contracts";
// The generated decoder this one matches is the one with every Struct key kept (see struct-keys.ts).

/**
 * Decodes a switchyard.v1.CallBatch to exactly what the generated
 * `CallBatch.decode` returns (a property test holds the two equal, bad bytes
 * included), several times faster. The generated decoder turns every
 * google.protobuf.Struct into a message of map entries holding Value messages
 * holding `{ $case, value }` objects, then copies all of it into the plain
 * object it returns; this one builds the plain object directly. Delivery
 * decodes every call of every batch, and that copying was the largest cost it
 * had after the HTTP requests themselves.
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
    if (tag === 10) batch.batchId = reader.text();
    else if (tag === 18) batch.sourceId = reader.text();
    else if (tag === 26) batch.receivedAt = readTimestamp(reader, 1);
    else if (tag === 34) batch.calls.push(readCall(reader, reader.uint32(), 1));
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return batch;
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
  return (tag & 7) === 4 || tag === 0;
}

function readCall(reader: CallBatchReader, length: number, depth: number): Call {
  enter(depth);
  const end = reader.pos + length;
  const inner = depth + 1;
  const call: Call = {
    messageId: "",
    userId: "",
    anonymousId: "",
    timestamp: undefined,
    context: undefined,
    integrations: undefined,
    receivedAt: undefined,
    payload: undefined,
  };
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag) {
      case 10:
        call.messageId = reader.text();
        continue;
      case 18:
        call.userId = reader.text();
        continue;
      case 26:
        call.anonymousId = reader.text();
        continue;
      case 34:
        call.timestamp = readTimestamp(reader, inner);
        continue;
      case 42:
        call.context = readStruct(reader, reader.uint32(), inner);
        continue;
      case 50:
        call.integrations = readStruct(reader, reader.uint32(), inner);
        continue;
      case 58:
        call.receivedAt = readTimestamp(reader, inner);
        continue;
      case 82:
        call.payload = { $case: "identify", value: readIdentify(reader, reader.uint32(), inner) };
        continue;
      case 90:
        call.payload = { $case: "track", value: readTrack(reader, reader.uint32(), inner) };
        continue;
      case 98:
        call.payload = { $case: "page", value: readPageOrScreen(reader, reader.uint32(), inner) };
        continue;
      case 106:
        call.payload = { $case: "screen", value: readPageOrScreen(reader, reader.uint32(), inner) };
        continue;
      case 114:
        call.payload = { $case: "group", value: readGroup(reader, reader.uint32(), inner) };
        continue;
      case 122:
        call.payload = { $case: "alias", value: readAlias(reader, reader.uint32(), inner) };
        continue;
      case 130:
        call.payload = { $case: "delete", value: readDelete(reader, reader.uint32(), inner) };
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

function readIdentify(reader: CallBatchReader, length: number, depth: number): Identify {
  enter(depth);
  const end = reader.pos + length;
  const identify: Identify = { traits: undefined };
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === 10) identify.traits = readStruct(reader, reader.uint32(), depth + 1);
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return identify;
}

function readTrack(reader: CallBatchReader, length: number, depth: number): Track {
  enter(depth);
  const end = reader.pos + length;
  const track: Track = { event: "", properties: undefined };
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === 10) track.event = reader.text();
    else if (tag === 18) track.properties = readStruct(reader, reader.uint32(), depth + 1);
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return track;
}

/** Page and Screen have the same fields. */
function readPageOrScreen(reader: CallBatchReader, length: number, depth: number): Page & Screen {
  enter(depth);
  const end = reader.pos + length;
  const page: Page = { name: "", category: "", properties: undefined };
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === 10) page.name = reader.text();
    else if (tag === 18) page.category = reader.text();
    else if (tag === 26) page.properties = readStruct(reader, reader.uint32(), depth + 1);
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return page;
}

function readGroup(reader: CallBatchReader, length: number, depth: number): Group {
  enter(depth);
  const end = reader.pos + length;
  const group: Group = { groupId: "", traits: undefined };
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === 10) group.groupId = reader.text();
    else if (tag === 18) group.traits = readStruct(reader, reader.uint32(), depth + 1);
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return group;
}

function readAlias(reader: CallBatchReader, length: number, depth: number): Alias {
  enter(depth);
  const end = reader.pos + length;
  const alias: Alias = { previousId: "" };
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === 10) alias.previousId = reader.text();
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return alias;
}

function readDelete(reader: CallBatchReader, length: number, depth: number): Record<string, never> {
  enter(depth);
  const end = reader.pos + length;
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (endsMessage(tag)) break;
    reader.skip(tag & 7);
  }
  return {};
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
    if (tag === 10) {
      // A map entry (Struct.FieldsEntry): key = 1, value = 2.
      const entryEnd = readEntryStart(reader, depth + 1);
      let key = "";
      let value: unknown;
      while (reader.pos < entryEnd) {
        const entryTag = reader.uint32();
        if (entryTag === 10) key = reader.text();
        else if (entryTag === 18) value = readValue(reader, reader.uint32(), depth + 2);
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
      case 8:
        reader.int32();
        value = null;
        continue;
      case 17:
        value = reader.double();
        continue;
      case 26:
        value = reader.text();
        continue;
      case 32:
        value = reader.bool();
        continue;
      case 42:
        value = readStruct(reader, reader.uint32(), depth + 1);
        continue;
      case 50:
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
    if (tag === 10) values.push(readValue(reader, reader.uint32(), depth + 1));
    else if (endsMessage(tag)) break;
    else reader.skip(tag & 7);
  }
  return values;
}
