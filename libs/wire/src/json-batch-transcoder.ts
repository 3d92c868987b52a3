import { isoMillis, isWellFormedText, MAX_CALL_BYTES, quickAcceptJson } from "@switchyard/calls";
import { CallField, ListValueField, StructField, StructFieldsEntryField, ValueField } from "@switchyard/contracts";
import { CALL_STRUCTS, CALL_TEXTS, PAYLOAD_SHAPES, PAYLOADS } from "./call-shape.js";
import { writeTimestamp, type ClientCallType } from "./client-call-encoder.js";
import { FastJsonCall, NEAR_LIMIT_BYTES, slab } from "./json-call-encoder.js";
import type { AcceptTime } from "./pass-through-call.js";
import { WireType } from "./tags.js";
import { ProtoWriter } from "./writer.js";

/**
 * Ingest's HTTP fast path for a whole Segment batch body (POST /v1/batch): the
 * body's bytes are read once and each ordinary call is written straight to
 * the bytes of its switchyard.v1.Call, with no JSON.parse and no object per
 * call. The bytes are those encodeJsonCall writes for the call as JSON.parse
 * and the batch endpoint make it (json-batch-transcoder.test.ts holds the
 * whole HTTP outcome to the straightforward path).
 *
 * Conservative by design. A call with anything the transcoder is not sure of
 * (an escape in a field the rules read, a duplicate or integer-like or
 * escaped key, a lone surrogate, a number JSON cannot carry, deep nesting, a
 * size near the 32 KB limit, a field of an unexpected JSON type, anything the
 * quick rules do not pass) comes back as its byte span, to be parsed and
 * checked as before; a body with anything unusual (not valid JSON as far as
 * the scan can tell, a batch-level context or integrations to merge, a
 * non-text or escaped writeKey, a byte order mark) makes the whole function
 * return undefined. The quick rules are those of quickAcceptJson
 * (@switchyard/calls) themselves, asked of the call's fields as decoded.
 *
 * The call's JSON size needs no counting: JSON.stringify of the parsed call
 * is never longer than its span in the body (whitespace, escapes and
 * duplicates only shrink) except for numbers with an exponent (1e5 is
 * written 100000), whose growth is added.
 *
 * `body` must be valid UTF-8 (ingest refuses other bodies first), so text
 * without escapes is copied as bytes.
 */

/** One call of a transcoded batch: written (`fast`), or its span in the body for the ordinary path. */
export class TranscodedBatchCall {
  constructor(
    /** The call's bytes when it took the fast path. */
    readonly fast: FastJsonCall | undefined,
    /** Its type and (track) event, for blocking; set with `fast`. */
    readonly type: string,
    readonly event: string | undefined,
    /** Its span in the body: JSON.parse of it gives the call as JSON.parse of the body does. */
    readonly start: number,
    readonly end: number,
  ) {}
}

export interface TranscodedBatch {
  /** The body's writeKey (text); undefined when it has none. */
  writeKey: string | undefined;
  /** The batch's calls in order (none when "batch" is empty). */
  calls: TranscodedBatchCall[];
}

// Byte values.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** Containers nested inside a free-form field before the call goes the ordinary way (the rule allows about 32). */
const MAX_FAST_DEPTH = 20;
/** Containers nested anywhere before the whole body goes the ordinary way (its parser has no such limit). */
const MAX_SCAN_DEPTH = 64;
/** From this many keys on, an object's keys are compared through a Set rather than pairwise. */
const PAIRWISE_KEYS = 16;

// google.protobuf.Struct, its map entry, Value and ListValue.
const STRUCT_FIELDS = StructField.FIELDS;
const ENTRY_KEY = StructFieldsEntryField.KEY;
const ENTRY_VALUE = StructFieldsEntryField.VALUE;
const VALUE_NULL = ValueField.NULL_VALUE;
const VALUE_NUMBER = ValueField.NUMBER_VALUE;
const VALUE_STRING = ValueField.STRING_VALUE;
const VALUE_BOOL = ValueField.BOOL_VALUE;
const VALUE_STRUCT = ValueField.STRUCT_VALUE;
const VALUE_LIST = ValueField.LIST_VALUE;
const LIST_VALUES = ListValueField.VALUES;
const { TIMESTAMP, RECEIVED_AT } = CallField;

/**
 * The members of a call the fast path reads, each a slot: type and timestamp, the Call's texts and
 * Structs, and every payload's (from call-shape.ts, so the list follows the contract).
 */
const TEXT_KEYS = [
  "type",
  "timestamp",
  ...CALL_TEXTS.map((text) => text.key),
  ...new Set(PAYLOADS.flatMap((shape) => shape.texts.map((text) => text.key))),
];
const STRUCT_KEYS = [
  ...CALL_STRUCTS.map((struct) => struct.key),
  ...new Set(PAYLOADS.flatMap((shape) => (shape.struct ? [shape.struct.key] : []))),
];
const SLOT_KEYS = [...TEXT_KEYS, ...STRUCT_KEYS];
const SLOTS = new Map(SLOT_KEYS.map((key, slot) => [key, slot]));
const FIRST_STRUCT_SLOT = TEXT_KEYS.length;
const SLOT_COUNT = SLOT_KEYS.length;
const slotOf = (key: string): number => SLOTS.get(key)!;
const [, USER_ID_SLOT, ANONYMOUS_ID_SLOT] = CALL_TEXTS.map((text) => slotOf(text.key)) as [number, number, number];
const LONGEST_SLOT_KEY = Math.max(...SLOT_KEYS.map((key) => key.length));

/** What a slot holds: nothing, text without escapes, null, an object (Structs), anything else. */
const ABSENT = 0;
const TEXT = 1;
const NULL = 2;
const OBJECT = 3;
const OTHER = 4;

/** Thrown when the body is not (surely) valid JSON: the whole body takes the ordinary path, whose parser says why. */
const GIVE_UP = new Error("the body takes the ordinary path");

// The scan's state, module-wide (one body at a time, synchronously).
let src: Buffer = Buffer.alloc(0);
let pos = 0;
let end = 0;
/** The call being read has something the fast path does not take. */
let unsure = false;
/** Bytes by which JSON.stringify would write the call's numbers longer than the body does. */
let growth = 0;
const slotKind = new Uint8Array(SLOT_COUNT);
const slotStart = new Int32Array(SLOT_COUNT);
const slotEnd = new Int32Array(SLOT_COUNT);
/** Each Struct of the call, written as it is read, then copied into the slab in field order. */
const scratch = Array.from({ length: SLOT_COUNT - FIRST_STRUCT_SLOT }, () => new ProtoWriter(4096));
/** The key spans of the objects being written, a run per open object (duplicates are looked for in it). */
const keySpans: number[] = [];

/** The last string read: its content's span, and whether it has escapes. */
let stringStart = 0;
let stringEnd = 0;
let stringEscaped = false;

/**
 * The batch body's calls, each written when it surely is valid, or undefined when the whole body
 * is to take the ordinary path. `acceptTime` is when the request was accepted (received_at, and the
 * timestamp of calls without one).
 */
export function transcodeBatchBody(body: Buffer, acceptTime: AcceptTime): TranscodedBatch | undefined {
  src = body;
  pos = 0;
  end = body.length;
  keySpans.length = 0;
  try {
    return readBody(acceptTime);
  } catch (error) {
    slab.discard();
    if (error === GIVE_UP) return undefined;
    throw error;
  } finally {
    src = EMPTY;
  }
}

const EMPTY = Buffer.alloc(0);

function readBody(acceptTime: AcceptTime): TranscodedBatch | undefined {
  whitespace();
  expect(OPEN_BRACE);
  let writeKey: string | undefined;
  let calls: TranscodedBatchCall[] | undefined;
  whitespace();
  if (src[pos] === CLOSE_BRACE) throw GIVE_UP;
  for (;;) {
    whitespace();
    readString();
    if (stringEscaped) throw GIVE_UP;
    const key = stringEnd - stringStart <= 12 ? src.toString("latin1", stringStart, stringEnd) : "";
    whitespace();
    expect(COLON);
    whitespace();
    if (key === "batch") {
      if (calls !== undefined || src[pos] !== OPEN_BRACKET) throw GIVE_UP;
      calls = readCalls(acceptTime);
    } else if (key === "writeKey") {
      if (writeKey !== undefined || src[pos] !== QUOTE) throw GIVE_UP;
      readString();
      if (stringEscaped) throw GIVE_UP;
      writeKey = src.toString("utf8", stringStart, stringEnd);
    } else if (key === "context" || key === "integrations") {
      // Merged into every call by the batch endpoint: left to it.
      throw GIVE_UP;
    } else {
      // sentAt and anything else: the batch endpoint reads nothing else of the body.
      skipValue(0);
    }
    whitespace();
    if (src[pos] === COMMA) {
      pos++;
      continue;
    }
    expect(CLOSE_BRACE);
    break;
  }
  whitespace();
  if (pos !== end || calls === undefined) throw GIVE_UP;
  return { writeKey, calls };
}

function readCalls(acceptTime: AcceptTime): TranscodedBatchCall[] {
  const calls: TranscodedBatchCall[] = [];
  pos++;
  whitespace();
  if (src[pos] === CLOSE_BRACKET) {
    pos++;
    return calls;
  }
  for (;;) {
    whitespace();
    const start = pos;
    if (src[pos] === OPEN_BRACE) calls.push(readCall(acceptTime));
    else {
      skipValue(0);
      calls.push(new TranscodedBatchCall(undefined, "", undefined, start, pos));
    }
    whitespace();
    if (src[pos] === COMMA) {
      pos++;
      continue;
    }
    expect(CLOSE_BRACKET);
    return calls;
  }
}

/** Reads one call (at its brace): written into the slab when surely valid, otherwise its span. */
function readCall(acceptTime: AcceptTime): TranscodedBatchCall {
  const start = pos;
  unsure = false;
  growth = 0;
  slotKind.fill(ABSENT);
  pos++;
  whitespace();
  if (src[pos] === CLOSE_BRACE) pos++;
  else {
    for (;;) {
      whitespace();
      readString();
      const keyLength = stringEnd - stringStart;
      const slot = !stringEscaped && keyLength <= LONGEST_SLOT_KEY ? SLOTS.get(src.toString("latin1", stringStart, stringEnd)) : undefined;
      // An escaped key may spell any member; __proto__ is treated apart by parsed objects and spreads.
      if (stringEscaped || isProtoKey(stringStart, stringEnd)) unsure = true;
      whitespace();
      expect(COLON);
      whitespace();
      if (slot === undefined) skipValue(0);
      else readSlot(slot);
      whitespace();
      if (src[pos] === COMMA) {
        pos++;
        continue;
      }
      expect(CLOSE_BRACE);
      break;
    }
  }
  const callEnd = pos;
  if (!unsure && callEnd - start + growth <= MAX_CALL_BYTES - NEAR_LIMIT_BYTES) {
    const written = writeCall(acceptTime, start, callEnd);
    if (written) return written;
  }
  return new TranscodedBatchCall(undefined, "", undefined, start, callEnd);
}

function readSlot(slot: number): void {
  // A repeated member: JSON.parse keeps the last, the fast path keeps to the usual.
  if (slotKind[slot] !== ABSENT) unsure = true;
  slotStart[slot] = pos;
  const byte = src[pos];
  if (slot >= FIRST_STRUCT_SLOT) {
    if (byte === OPEN_BRACE) {
      const writer = scratch[slot - FIRST_STRUCT_SLOT]!;
      writer.reset();
      readObject(writer, 0);
      slotKind[slot] = OBJECT;
    } else {
      skipValue(0);
      slotKind[slot] = OTHER;
    }
  } else if (byte === QUOTE) {
    readString();
    slotStart[slot] = stringStart;
    slotKind[slot] = stringEscaped ? OTHER : TEXT;
  } else if (byte === 0x6e) {
    literal("null");
    slotKind[slot] = NULL;
  } else {
    skipValue(0);
    slotKind[slot] = OTHER;
  }
  slotEnd[slot] = slot >= FIRST_STRUCT_SLOT || slotKind[slot] !== TEXT ? pos : stringEnd;
}

/**
 * The fields as JSON.parse and the batch endpoint would give them (an id that is null or "" is
 * dropped), asked of quickAcceptJson; when it passes, the call is written into the slab as
 * encodeCall writes it: ids, timestamp, context, integrations, received_at, then the payload.
 */
function writeCall(acceptTime: AcceptTime, start: number, callEnd: number): TranscodedBatchCall | undefined {
  const fields: Record<string, unknown> = {};
  for (let slot = 0; slot < SLOT_COUNT; slot++) {
    const kind = slotKind[slot];
    if (kind === ABSENT) continue;
    const key = SLOT_KEYS[slot]!;
    if (kind === TEXT) {
      const text = src.toString("utf8", slotStart[slot], slotEnd[slot]);
      if (text === "" && (slot === USER_ID_SLOT || slot === ANONYMOUS_ID_SLOT)) slotKind[slot] = ABSENT;
      else fields[key] = text;
    } else if (kind === NULL && (slot === USER_ID_SLOT || slot === ANONYMOUS_ID_SLOT)) {
      slotKind[slot] = ABSENT;
    } else if (kind === OBJECT) {
      // The rules read the keys and values of integrations; of the others only that they are objects.
      fields[key] = key === "integrations" ? JSON.parse(src.toString("utf8", slotStart[slot], slotEnd[slot])) : {};
    } else return undefined;
  }
  if (!quickAcceptJson(fields)) return undefined;
  const type = fields.type as ClientCallType;
  const messageId = fields.messageId as string | undefined;
  const timestamp = fields.timestamp as string | undefined;
  const receivedAtMillis = acceptTime.date.getTime();
  const writer = slab;
  for (const text of CALL_TEXTS) {
    const slot = slotOf(text.key);
    if (slotKind[slot] === TEXT) writer.bytes(text.field, src, slotStart[slot], slotEnd[slot]! - slotStart[slot]!);
  }
  writeTimestamp(writer, TIMESTAMP, timestamp === undefined ? receivedAtMillis : isoMillis(timestamp));
  for (const struct of CALL_STRUCTS) writeStruct(writer, struct.field, slotOf(struct.key));
  writeTimestamp(writer, RECEIVED_AT, receivedAtMillis);
  const shape = PAYLOAD_SHAPES[type];
  const payload = writer.begin(shape.field);
  for (const text of shape.texts) {
    const slot = slotOf(text.key);
    // An empty text is proto3's unset value: left out, as encodeCall leaves it out.
    if (slotKind[slot] === TEXT && slotEnd[slot]! > slotStart[slot]!) {
      writer.bytes(text.field, src, slotStart[slot], slotEnd[slot]! - slotStart[slot]!);
    }
  }
  if (shape.struct) writeStruct(writer, shape.struct.field, slotOf(shape.struct.key));
  writer.end(payload);
  const { chunk, offset, length } = writer.take();
  const fast = new FastJsonCall(chunk, offset, length, messageId);
  const event = typeof fields.event === "string" ? fields.event : undefined;
  return new TranscodedBatchCall(fast, type, event, start, callEnd);
}

function writeStruct(writer: ProtoWriter, field: number, slot: number): void {
  if (slotKind[slot] !== OBJECT) return;
  const body = scratch[slot - FIRST_STRUCT_SLOT]!;
  writer.bytes(field, body.buf, 0, body.pos);
}

/**
 * Reads an object (at its brace) as the body of a google.protobuf.Struct, written into `writer`
 * once the call is known to be unusual no more; `depth` counts the containers around it.
 */
function readObject(writer: ProtoWriter, depth: number): void {
  if (depth >= MAX_FAST_DEPTH) unsure = true;
  if (unsure) return skipValue(depth);
  pos++;
  whitespace();
  if (src[pos] === CLOSE_BRACE) {
    pos++;
    return;
  }
  const firstKey = keySpans.length;
  let keys: Set<string> | undefined;
  for (;;) {
    whitespace();
    readString();
    const keyStart = stringStart;
    const keyEnd = stringEnd;
    if (!unsure) {
      // Integer-like keys come first in a parsed object, whatever their place; escaped ones may be anything.
      const first = src[keyStart];
      if (stringEscaped || (first !== undefined && first >= ZERO && first <= NINE) || isProtoKey(keyStart, keyEnd)) unsure = true;
      else if ((keySpans.length - firstKey) / 2 < PAIRWISE_KEYS) {
        for (let index = firstKey; index < keySpans.length; index += 2) {
          if (sameBytes(keySpans[index]!, keySpans[index + 1]!, keyStart, keyEnd)) unsure = true;
        }
        keySpans.push(keyStart, keyEnd);
      } else {
        if (keys === undefined) {
          keys = new Set();
          for (let index = firstKey; index < keySpans.length; index += 2)
            keys.add(src.toString("latin1", keySpans[index], keySpans[index + 1]));
        }
        const key = src.toString("latin1", keyStart, keyEnd);
        if (keys.has(key)) unsure = true;
        keys.add(key);
      }
    }
    whitespace();
    expect(COLON);
    whitespace();
    if (unsure) skipValue(depth + 1);
    else {
      const entry = writer.begin(STRUCT_FIELDS);
      // An empty key is proto3's default, left out as the generated encoder leaves it out.
      if (keyEnd > keyStart) writer.bytes(ENTRY_KEY, src, keyStart, keyEnd - keyStart);
      const value = writer.begin(ENTRY_VALUE);
      readValue(writer, depth + 1);
      writer.end(value);
      writer.end(entry);
    }
    whitespace();
    if (src[pos] === COMMA) {
      pos++;
      continue;
    }
    expect(CLOSE_BRACE);
    keySpans.length = firstKey;
    return;
  }
}

/** Reads a value as the body of a google.protobuf.Value (what encodeCall's writeValueField writes inside its field). */
function readValue(writer: ProtoWriter, depth: number): void {
  const byte = src[pos];
  if (byte === QUOTE) {
    readString();
    if (!stringEscaped) writer.bytes(VALUE_STRING, src, stringStart, stringEnd - stringStart);
    else {
      const text = JSON.parse(src.toString("utf8", stringStart - 1, stringEnd + 1)) as string;
      // Text with a lone surrogate cannot be carried (the rules refuse it).
      if (!isWellFormedText(text)) unsure = true;
      else writer.string(VALUE_STRING, text);
    }
  } else if (byte === OPEN_BRACE) {
    const struct = writer.begin(VALUE_STRUCT);
    readObject(writer, depth);
    writer.end(struct);
  } else if (byte === OPEN_BRACKET) {
    if (depth >= MAX_FAST_DEPTH) {
      unsure = true;
      return skipValue(depth);
    }
    const list = writer.begin(VALUE_LIST);
    pos++;
    whitespace();
    if (src[pos] === CLOSE_BRACKET) pos++;
    else {
      for (;;) {
        whitespace();
        if (unsure) skipValue(depth + 1);
        else {
          const item = writer.begin(LIST_VALUES);
          readValue(writer, depth + 1);
          writer.end(item);
        }
        whitespace();
        if (src[pos] === COMMA) {
          pos++;
          continue;
        }
        expect(CLOSE_BRACKET);
        break;
      }
    }
    writer.end(list);
  } else if (byte === 0x74) {
    literal("true");
    writer.tag(VALUE_BOOL, WireType.VARINT);
    writer.varint(1);
  } else if (byte === 0x66) {
    literal("false");
    writer.tag(VALUE_BOOL, WireType.VARINT);
    writer.varint(0);
  } else if (byte === 0x6e) {
    literal("null");
    writer.tag(VALUE_NULL, WireType.VARINT);
    writer.varint(0);
  } else {
    const value = readNumber();
    if (Number.isFinite(value)) writer.double(VALUE_NUMBER, value);
    else unsure = true;
  }
}

/** Skips a value, checking its syntax and counting its numbers' growth. */
function skipValue(depth: number): void {
  if (depth >= MAX_SCAN_DEPTH) throw GIVE_UP;
  const byte = src[pos];
  if (byte === QUOTE) return readString();
  if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
    const close = byte === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
    pos++;
    whitespace();
    if (src[pos] === close) {
      pos++;
      return;
    }
    for (;;) {
      whitespace();
      if (close === CLOSE_BRACE) {
        readString();
        whitespace();
        expect(COLON);
        whitespace();
      }
      skipValue(depth + 1);
      whitespace();
      if (src[pos] === COMMA) {
        pos++;
        continue;
      }
      expect(close);
      return;
    }
  }
  if (byte === 0x74) return literal("true");
  if (byte === 0x66) return literal("false");
  if (byte === 0x6e) return literal("null");
  readNumber();
}

/** Reads a string (at its quote): its content's span and whether it has escapes, which are checked. */
function readString(): void {
  if (src[pos] !== QUOTE) throw GIVE_UP;
  const start = ++pos;
  let escaped = false;
  for (;;) {
    if (pos >= end) throw GIVE_UP;
    const byte = src[pos]!;
    if (byte === QUOTE) break;
    if (byte < 0x20) throw GIVE_UP;
    if (byte === BACKSLASH) {
      escaped = true;
      const next = src[pos + 1];
      if (next === 0x75) {
        for (let index = pos + 2; index < pos + 6; index++) if (!isHex(src[index])) throw GIVE_UP;
        pos += 6;
        continue;
      }
      if (next === undefined || !SIMPLE_ESCAPES.has(next)) throw GIVE_UP;
      pos += 2;
      continue;
    }
    pos++;
  }
  stringStart = start;
  stringEnd = pos;
  stringEscaped = escaped;
  pos++;
}

/** `"` `\` `/` b f n r t */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

function isHex(byte: number | undefined): boolean {
  return byte !== undefined && ((byte >= ZERO && byte <= NINE) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46));
}

/**
 * Reads a JSON number as JSON.parse does: an integer of up to 15 digits is exact as it is
 * summed, anything else is Number() of its text (the same correctly rounded reading).
 */
function readNumber(): number {
  const start = pos;
  let negative = false;
  if (src[pos] === MINUS) {
    negative = true;
    pos++;
  }
  let value = 0;
  let digits = 0;
  let byte = src[pos];
  if (byte === ZERO) {
    pos++;
    digits = 1;
  } else {
    while (byte !== undefined && byte >= ZERO && byte <= NINE) {
      value = value * 10 + (byte - ZERO);
      digits++;
      byte = src[++pos];
    }
    if (digits === 0) throw GIVE_UP;
  }
  let simple = digits <= 15;
  byte = src[pos];
  if (byte === DOT) {
    simple = false;
    pos++;
    if (!digitsFollow()) throw GIVE_UP;
    byte = src[pos];
  }
  let exponent = false;
  if (byte === 0x65 || byte === 0x45) {
    simple = false;
    exponent = true;
    pos++;
    if (src[pos] === 0x2b || src[pos] === MINUS) pos++;
    if (!digitsFollow()) throw GIVE_UP;
  }
  if (simple) return negative ? -value : value;
  const number = Number(src.toString("latin1", start, pos));
  // Only an exponent can make JSON.stringify write the number longer than the body has it.
  if (exponent && Number.isFinite(number)) growth += Math.max(0, String(number).length - (pos - start));
  return number;
}

function digitsFollow(): boolean {
  const start = pos;
  let byte = src[pos];
  while (byte !== undefined && byte >= ZERO && byte <= NINE) byte = src[++pos];
  return pos > start;
}

function literal(text: "true" | "false" | "null"): void {
  for (let index = 0; index < text.length; index++) if (src[pos + index] !== text.charCodeAt(index)) throw GIVE_UP;
  pos += text.length;
}

function expect(byte: number): void {
  if (src[pos] !== byte) throw GIVE_UP;
  pos++;
}

function whitespace(): void {
  let byte = src[pos];
  while (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) byte = src[++pos];
}

function sameBytes(aStart: number, aEnd: number, bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let index = 0; index < aEnd - aStart; index++) if (src[aStart + index] !== src[bStart + index]) return false;
  return true;
}

const PROTO_KEY = Buffer.from("__proto__");

/** `__proto__`, which parsed objects and spreads treat apart from other keys. */
function isProtoKey(start: number, keyEnd: number): boolean {
  return keyEnd - start === PROTO_KEY.length && src.compare(PROTO_KEY, 0, PROTO_KEY.length, start, keyEnd) === 0;
}
