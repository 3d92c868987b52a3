import { CLIENT_FIELDS, COMMON_FIELDS, isoMillis, isWellFormedText, MAX_CALL_BYTES, quickAcceptJson } from "@switchyard/calls";
import { CALL_STRUCTS, CALL_TEXTS, PAYLOADS } from "./call-shape.js";
import { writeTimestamp, type ClientCallType } from "./client-call-encoder.js";
import { FastJsonCall, NEAR_LIMIT_BYTES, slab } from "./json-call-encoder.js";
import type { AcceptTime } from "./pass-through-call.js";
import { fieldTag, lengthTag, STRUCT_FIELD_NUMBERS, WireType } from "./tags.js";
import { ProtoWriter, writeVarint } from "./writer.js";

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
 * checked by the straightforward path; a body with anything unusual (not valid JSON as far as
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

const { STRUCT_FIELDS, ENTRY_KEY, ENTRY_VALUE, VALUE_NULL, VALUE_NUMBER, VALUE_STRING, VALUE_BOOL, VALUE_STRUCT, VALUE_LIST, LIST_VALUES } =
  STRUCT_FIELD_NUMBERS;

/** The one-byte tag of a length-delimited field of Struct, Value or ListValue (each is numbered below 16). */
function lengthTagByte(field: number): number {
  const tag = fieldTag(field, WireType.LEN);
  if (tag >= 0x80) throw new Error(`field ${field}: its tag takes more than a byte`);
  return tag;
}
const ENTRY_TAG = lengthTagByte(STRUCT_FIELDS);
const ENTRY_KEY_TAG = lengthTagByte(ENTRY_KEY);
const ENTRY_VALUE_TAG = lengthTagByte(ENTRY_VALUE);
const VALUE_STRING_TAG = lengthTagByte(VALUE_STRING);
const LIST_VALUES_TAG = lengthTagByte(LIST_VALUES);
/** google.protobuf.Value's number_value: a one-byte tag and 8 bytes. */
const VALUE_NUMBER_TAG = fieldTag(VALUE_NUMBER, WireType.I64);
const NUMBER_VALUE_BYTES = 9;
/** Ranges shorter than this are copied by hand: a native copy's call costs more. */
const HAND_COPY_BYTES = 16;

/**
 * The members of a call the fast path reads, each a slot: type and timestamp, the Call's texts and
 * Structs, and every payload's (from call-shape.ts, so the list follows the contract).
 */
const TEXT_KEYS = [
  "type",
  // Every Timestamp a client sets: the rules read them (quickAcceptJson leaves any but `timestamp` to them).
  ...CLIENT_FIELDS.filter((field) => field.kind === "timestamp").map((field) => field.key),
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
/** How writeCall writes each of the Call's own fields. */
const Own = { TEXT: 0, STRUCT: 1, TIMESTAMP: 2, RECEIVED_AT: 3 } as const;
/**
 * Where each field of the Call and its payloads is read from, with its tag, so that no name is looked up per call. The
 * Call's own are in the Call model's order, the order Call.encode writes them (a Timestamp other than `timestamp` never
 * gets here: quickAcceptJson leaves a call with one to the rules).
 */
const OWN_SLOTS = COMMON_FIELDS.flatMap(({ key, kind, rule, number }): { own: number; slot: number; field: number; tag: number }[] => {
  if (rule === "set_by_ingest") return [{ own: Own.RECEIVED_AT, slot: -1, field: number, tag: 0 }];
  if (kind === "text") return [{ own: Own.TEXT, slot: slotOf(key), field: number, tag: lengthTag(number) }];
  if (kind === "struct") return [{ own: Own.STRUCT, slot: slotOf(key), field: number, tag: 0 }];
  return key === "timestamp" ? [{ own: Own.TIMESTAMP, slot: slotOf(key), field: number, tag: 0 }] : [];
});
const PAYLOAD_SLOTS = Object.fromEntries(
  PAYLOADS.map((shape) => [
    shape.type,
    {
      field: shape.field,
      texts: shape.texts.map((text) => ({ slot: slotOf(text.key), tag: lengthTag(text.field) })),
      struct: shape.struct && { slot: slotOf(shape.struct.key), field: shape.struct.field },
    },
  ]),
) as Record<ClientCallType, { field: number; texts: { slot: number; tag: number }[]; struct: { slot: number; field: number } | undefined }>;
/** Every slot's key, undefined: the shape of the fields asked of quickAcceptJson. */
const FIELDS_TEMPLATE: Record<string, unknown> = Object.fromEntries(SLOT_KEYS.map((key) => [key, undefined]));
/** Buffer's own decoder of Latin-1 (here ASCII) text, without Buffer#toString's argument handling. */
interface NativeSlices {
  latin1Slice(start: number, end: number): string;
}
const TYPE_SLOT = slotOf("type");
/** The call types, so that a call's type is a known string rather than one decoded per call. */
const TYPE_NAMES = PAYLOADS.map((shape) => shape.type as string);
const TYPE_NAME_BYTES = TYPE_NAMES.map((name) => Buffer.from(name, "latin1"));
const SLOT_KEY_BYTES = SLOT_KEYS.map((key) => Buffer.from(key, "latin1"));
/** One more than the longest slot key's length. */
const MAX_SLOT_KEY_BYTES = Math.max(...SLOT_KEY_BYTES.map((key) => key.length)) + 1;
/**
 * The slots whose key has a given length and first byte, at `length * 256 + first byte`: a call's
 * member finds its slot (or that it has none) with one look rather than by trying every key.
 */
const SLOT_CANDIDATES: (number[] | undefined)[] = new Array(MAX_SLOT_KEY_BYTES * 256);
SLOT_KEY_BYTES.forEach((key, slot) => (SLOT_CANDIDATES[key.length * 256 + key[0]!] ??= []).push(slot));

/** What a slot holds: nothing, text without escapes, null, an object (Structs), anything else. */
const ABSENT = 0;
const TEXT = 1;
const NULL = 2;
const OBJECT = 3;
const OTHER = 4;

/** Thrown when the body is not (surely) valid JSON: the whole body takes the ordinary path, whose parser says why. */
const GIVE_UP = new Error("the body takes the ordinary path");
const EMPTY = Buffer.alloc(0);
const EMPTY_VIEW = new DataView(new ArrayBuffer(0));

/**
 * The batch body's calls, each written when it surely is valid, or undefined when the whole body
 * is to take the ordinary path. `acceptTime` is when the request was accepted (received_at, and the
 * timestamp of calls without one).
 */
export function transcodeBatchBody(body: Buffer, acceptTime: AcceptTime): TranscodedBatch | undefined {
  return reader.read(body, acceptTime);
}

/** 10^0 to 10^15, each exact as a double. */
const POWERS_OF_TEN = Array.from({ length: 16 }, (_, power) => 10 ** power);

/** Bytes that stand for themselves in a JSON string: not a control character, a quote or a backslash. */
const PLAIN = new Uint8Array(256);
for (let byte = 0x20; byte < 256; byte++) PLAIN[byte] = byte === QUOTE || byte === BACKSLASH ? 0 : 1;

/** `"` `\` `/` b f n r t */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

const PROTO_KEY = Buffer.from("__proto__");

/**
 * Whether any of the four bytes of `word` ends a string's plain run: a control character (under
 * 0x20), a quote or a backslash. Each test is the exact "some byte is less than n" or "some byte
 * is zero" bit trick on all four bytes at once.
 */
function endsText(word: number): boolean {
  const quote = word ^ 0x22222222;
  const backslash = word ^ 0x5c5c5c5c;
  return ((((word - 0x20202020) & ~word) | ((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash)) & 0x80808080) !== 0;
}

function isHex(byte: number | undefined): boolean {
  return byte !== undefined && ((byte >= ZERO && byte <= NINE) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46));
}

/** ProtoWriter.begin for a one-byte tag: returns the mark for ProtoWriter.end. */
function begin(writer: ProtoWriter, tagByte: number): number {
  writer.ensure(2);
  writer.buf[writer.pos++] = tagByte;
  return writer.pos++ - writer.start;
}

/** The scan of one body at a time (synchronously), its state in fields. */
class BodyReader {
  src: Buffer = EMPTY;
  /** The body's bytes for reading four at a time. */
  view: DataView = EMPTY_VIEW;
  pos = 0;
  end = 0;
  /** The call being read has something the fast path does not take. */
  unsure = false;
  /** Bytes by which JSON.stringify would write the call's numbers longer than the body does. */
  growth = 0;
  readonly slotKind = new Uint8Array(SLOT_COUNT);
  readonly slotStart = new Int32Array(SLOT_COUNT);
  readonly slotEnd = new Int32Array(SLOT_COUNT);
  /** A text slot's text is not ASCII. */
  readonly slotHigh = new Uint8Array(SLOT_COUNT);
  /** Each Struct of the call, written as it is read, then copied into the slab in field order. */
  readonly scratch = Array.from({ length: SLOT_COUNT - FIRST_STRUCT_SLOT }, () => new ProtoWriter(4096));
  /** The key spans of the objects being written, a run per open object (duplicates are looked for in it). */
  keySpans = new Int32Array(256);
  /** How much of keySpans is in use (a count rather than an array's length, which costs more to cut back). */
  keySpanCount = 0;
  /** The last string read: its content's span, and whether it has escapes. */
  stringStart = 0;
  stringEnd = 0;
  stringEscaped = false;
  /** writeTextEntry read a member's text but left it to be written the usual way. */
  textRead = false;
  /** It has a byte of 0x80 or more (non-ASCII text). */
  stringHigh = false;

  read(body: Buffer, acceptTime: AcceptTime): TranscodedBatch | undefined {
    this.src = body;
    this.view = new DataView(body.buffer, body.byteOffset, body.length);
    this.pos = 0;
    this.end = body.length;
    this.keySpanCount = 0;
    try {
      return this.readBody(acceptTime);
    } catch (error) {
      slab.discard();
      if (error === GIVE_UP) return undefined;
      throw error;
    } finally {
      this.src = EMPTY;
      this.view = EMPTY_VIEW;
    }
  }

  readBody(acceptTime: AcceptTime): TranscodedBatch | undefined {
    this.whitespace();
    this.expect(OPEN_BRACE);
    let writeKey: string | undefined;
    let calls: TranscodedBatchCall[] | undefined;
    this.whitespace();
    if (this.src[this.pos] === CLOSE_BRACE) throw GIVE_UP;
    for (;;) {
      this.whitespace();
      this.readString();
      if (this.stringEscaped) throw GIVE_UP;
      const key = this.stringEnd - this.stringStart <= 12 ? this.src.toString("latin1", this.stringStart, this.stringEnd) : "";
      this.colon();
      if (key === "batch") {
        if (calls !== undefined || this.src[this.pos] !== OPEN_BRACKET) throw GIVE_UP;
        calls = this.readCalls(acceptTime);
      } else if (key === "writeKey") {
        if (writeKey !== undefined || this.src[this.pos] !== QUOTE) throw GIVE_UP;
        this.readString();
        if (this.stringEscaped) throw GIVE_UP;
        writeKey = this.src.toString("utf8", this.stringStart, this.stringEnd);
      } else if (key === "context" || key === "integrations") {
        // Merged into every call by the batch endpoint: left to it.
        throw GIVE_UP;
      } else {
        // sentAt and anything else: the batch endpoint reads nothing else of the body.
        this.skipValue(0);
      }
      this.whitespace();
      if (this.src[this.pos] === COMMA) {
        this.pos++;
        continue;
      }
      this.expect(CLOSE_BRACE);
      break;
    }
    this.whitespace();
    if (this.pos !== this.end || calls === undefined) throw GIVE_UP;
    return { writeKey, calls };
  }

  readCalls(acceptTime: AcceptTime): TranscodedBatchCall[] {
    const calls: TranscodedBatchCall[] = [];
    this.pos++;
    this.whitespace();
    if (this.src[this.pos] === CLOSE_BRACKET) {
      this.pos++;
      return calls;
    }
    for (;;) {
      this.whitespace();
      const start = this.pos;
      if (this.src[this.pos] === OPEN_BRACE) calls.push(this.readCall(acceptTime));
      else {
        this.skipValue(0);
        calls.push(new TranscodedBatchCall(undefined, "", undefined, start, this.pos));
      }
      this.whitespace();
      if (this.src[this.pos] === COMMA) {
        this.pos++;
        continue;
      }
      this.expect(CLOSE_BRACKET);
      return calls;
    }
  }

  /** Reads one call (at its brace): written into the slab when surely valid, otherwise its span. */
  readCall(acceptTime: AcceptTime): TranscodedBatchCall {
    const start = this.pos;
    this.unsure = false;
    this.growth = 0;
    this.slotKind.fill(ABSENT);
    this.pos++;
    this.whitespace();
    if (this.src[this.pos] === CLOSE_BRACE) this.pos++;
    else {
      for (;;) {
        this.whitespace();
        this.readString();
        const slot = this.stringEscaped ? undefined : this.slotAt(this.stringStart, this.stringEnd);
        // An escaped key may spell any member; __proto__ is treated apart by parsed objects and spreads.
        if (this.stringEscaped || this.isProtoKey(this.stringStart, this.stringEnd)) this.unsure = true;
        this.colon();
        if (slot === undefined) this.skipValue(0);
        else this.readSlot(slot);
        this.whitespace();
        if (this.src[this.pos] === COMMA) {
          this.pos++;
          continue;
        }
        this.expect(CLOSE_BRACE);
        break;
      }
    }
    const callEnd = this.pos;
    if (!this.unsure && callEnd - start + this.growth <= MAX_CALL_BYTES - NEAR_LIMIT_BYTES) {
      const written = this.writeCall(acceptTime, start, callEnd);
      if (written) return written;
    }
    return new TranscodedBatchCall(undefined, "", undefined, start, callEnd);
  }

  readSlot(slot: number): void {
    // A repeated member: JSON.parse keeps the last, the fast path keeps to the usual.
    if (this.slotKind[slot] !== ABSENT) this.unsure = true;
    this.slotStart[slot] = this.pos;
    const byte = this.src[this.pos];
    if (slot >= FIRST_STRUCT_SLOT) {
      if (byte === OPEN_BRACE) {
        const writer = this.scratch[slot - FIRST_STRUCT_SLOT]!;
        writer.reset();
        this.readObject(writer, 0);
        this.slotKind[slot] = OBJECT;
      } else {
        this.skipValue(0);
        this.slotKind[slot] = OTHER;
      }
    } else if (byte === QUOTE) {
      this.readString();
      this.slotStart[slot] = this.stringStart;
      this.slotKind[slot] = this.stringEscaped ? OTHER : TEXT;
      this.slotHigh[slot] = this.stringHigh ? 1 : 0;
    } else if (byte === 0x6e) {
      this.literal("null");
      this.slotKind[slot] = NULL;
    } else {
      this.skipValue(0);
      this.slotKind[slot] = OTHER;
    }
    this.slotEnd[slot] = slot >= FIRST_STRUCT_SLOT || this.slotKind[slot] !== TEXT ? this.pos : this.stringEnd;
  }

  /**
   * The fields as JSON.parse and the batch endpoint would give them (an id that is null or "" is
   * dropped), asked of quickAcceptJson; when it passes, the call is written into the slab as
   * encodeCall writes it: ids, timestamp, context, integrations, received_at, then the payload.
   */
  writeCall(acceptTime: AcceptTime, start: number, callEnd: number): TranscodedBatchCall | undefined {
    // One shape for every call (absent members undefined, as quickAcceptJson reads them).
    const fields: Record<string, unknown> = { ...FIELDS_TEMPLATE };
    for (let slot = 0; slot < SLOT_COUNT; slot++) {
      const kind = this.slotKind[slot];
      if (kind === ABSENT) continue;
      const key = SLOT_KEYS[slot]!;
      if (kind === TEXT) {
        const text =
          slot === TYPE_SLOT
            ? this.typeAt(this.slotStart[slot]!, this.slotEnd[slot]!)
            : this.slotHigh[slot]
              ? this.src.toString("utf8", this.slotStart[slot], this.slotEnd[slot])
              : (this.src as unknown as NativeSlices).latin1Slice(this.slotStart[slot]!, this.slotEnd[slot]!);
        if (text === "" && (slot === USER_ID_SLOT || slot === ANONYMOUS_ID_SLOT)) this.slotKind[slot] = ABSENT;
        else fields[key] = text;
      } else if (kind === NULL && (slot === USER_ID_SLOT || slot === ANONYMOUS_ID_SLOT)) {
        this.slotKind[slot] = ABSENT;
      } else if (kind === OBJECT) {
        // The rules read the keys and values of integrations; of the others only that they are objects.
        fields[key] = key === "integrations" ? JSON.parse(this.src.toString("utf8", this.slotStart[slot], this.slotEnd[slot])) : {};
      } else return undefined;
    }
    if (!quickAcceptJson(fields)) return undefined;
    const type = fields.type as ClientCallType;
    const messageId = fields.messageId as string | undefined;
    const timestamp = fields.timestamp as string | undefined;
    const receivedAtMillis = acceptTime.date.getTime();
    const writer = slab;
    for (let index = 0; index < OWN_SLOTS.length; index++) {
      const { own, slot, field, tag } = OWN_SLOTS[index]!;
      if (own === Own.TEXT) {
        // An empty text is proto3's unset value: left out, as encodeCall leaves it out.
        if (this.slotKind[slot] === TEXT && this.slotEnd[slot]! > this.slotStart[slot]!) {
          this.copyField(writer, tag, this.slotStart[slot]!, this.slotEnd[slot]! - this.slotStart[slot]!);
        }
      } else if (own === Own.STRUCT) this.writeStruct(writer, field, slot);
      else if (own === Own.TIMESTAMP) writeTimestamp(writer, field, timestamp === undefined ? receivedAtMillis : isoMillis(timestamp));
      else writeTimestamp(writer, field, receivedAtMillis);
    }
    const shape = PAYLOAD_SLOTS[type];
    const payload = writer.begin(shape.field);
    for (const { slot, tag } of shape.texts) {
      // An empty text is proto3's unset value: left out, as encodeCall leaves it out.
      if (this.slotKind[slot] === TEXT && this.slotEnd[slot]! > this.slotStart[slot]!) {
        this.copyField(writer, tag, this.slotStart[slot]!, this.slotEnd[slot]! - this.slotStart[slot]!);
      }
    }
    if (shape.struct) this.writeStruct(writer, shape.struct.field, shape.struct.slot);
    writer.end(payload);
    const { chunk, offset, length } = writer.take();
    const fast = new FastJsonCall(chunk, offset, length, messageId);
    const event = typeof fields.event === "string" ? fields.event : undefined;
    return new TranscodedBatchCall(fast, type, event, start, callEnd);
  }

  writeStruct(writer: ProtoWriter, field: number, slot: number): void {
    if (this.slotKind[slot] !== OBJECT) return;
    const body = this.scratch[slot - FIRST_STRUCT_SLOT]!;
    const length = body.pos;
    writer.tag(field, WireType.LEN);
    writer.varint(length);
    writer.ensure(length);
    // Uint8Array#set: Buffer#copy's argument handling costs more than copying a few hundred bytes.
    writer.buf.set(length === body.buf.length ? body.buf : body.buf.subarray(0, length), writer.pos);
    writer.pos += length;
  }

  /**
   * Reads an object (at its brace) as the body of a google.protobuf.Struct, written into `writer`
   * once the call is known to be unusual no more; `depth` counts the containers around it.
   */
  readObject(writer: ProtoWriter, depth: number): void {
    if (depth >= MAX_FAST_DEPTH) this.unsure = true;
    if (this.unsure) return this.skipValue(depth);
    this.pos++;
    this.whitespace();
    if (this.src[this.pos] === CLOSE_BRACE) {
      this.pos++;
      return;
    }
    const firstKey = this.keySpanCount;
    let keys: Set<string> | undefined;
    for (;;) {
      this.whitespace();
      this.readString();
      const keyStart = this.stringStart;
      const keyEnd = this.stringEnd;
      if (!this.unsure) {
        // Integer-like keys come first in a parsed object, whatever their place; escaped ones may be anything.
        const first = this.src[keyStart];
        if (this.stringEscaped || (first !== undefined && first >= ZERO && first <= NINE) || this.isProtoKey(keyStart, keyEnd))
          this.unsure = true;
        else if ((this.keySpanCount - firstKey) / 2 < PAIRWISE_KEYS) {
          const spans = this.keySpans;
          const count = this.keySpanCount;
          const length = keyEnd - keyStart;
          for (let index = firstKey; index < count; index += 2) {
            const start = spans[index]!;
            if (spans[index + 1]! - start === length && this.sameBytes(start, spans[index + 1]!, keyStart, keyEnd)) this.unsure = true;
          }
          this.pushKey(keyStart, keyEnd);
        } else {
          if (keys === undefined) {
            keys = new Set();
            for (let index = firstKey; index < this.keySpanCount; index += 2)
              keys.add(this.src.toString("latin1", this.keySpans[index], this.keySpans[index + 1]));
          }
          const key = this.src.toString("latin1", keyStart, keyEnd);
          if (keys.has(key)) this.unsure = true;
          keys.add(key);
        }
      }
      this.colon();
      if (this.unsure) this.skipValue(depth + 1);
      else {
        const next = this.src[this.pos]!;
        if (next === MINUS || (next >= ZERO && next <= NINE)) this.writeNumberEntry(writer, keyStart, keyEnd);
        else if (next !== QUOTE || !this.writeTextEntry(writer, keyStart, keyEnd)) {
          const entry = begin(writer, ENTRY_TAG);
          // An empty key is proto3's default, left out as the generated encoder leaves it out.
          if (keyEnd > keyStart) this.copyField(writer, ENTRY_KEY_TAG, keyStart, keyEnd - keyStart);
          const value = begin(writer, ENTRY_VALUE_TAG);
          if (this.textRead) this.writeText(writer);
          else this.readValue(writer, depth + 1);
          writer.end(value);
          writer.end(entry);
        }
        this.textRead = false;
      }
      this.whitespace();
      if (this.src[this.pos] === COMMA) {
        this.pos++;
        continue;
      }
      this.expect(CLOSE_BRACE);
      this.keySpanCount = firstKey;
      return;
    }
  }

  /** Reads a value as the body of a google.protobuf.Value (what encodeCall's writeValueField writes inside its field). */
  readValue(writer: ProtoWriter, depth: number): void {
    const byte = this.src[this.pos];
    if (byte === QUOTE) {
      this.readString();
      this.writeText(writer);
    } else if (byte === OPEN_BRACE) {
      const struct = writer.begin(VALUE_STRUCT);
      this.readObject(writer, depth);
      writer.end(struct);
    } else if (byte === OPEN_BRACKET) {
      if (depth >= MAX_FAST_DEPTH) {
        this.unsure = true;
        return this.skipValue(depth);
      }
      const list = writer.begin(VALUE_LIST);
      this.pos++;
      this.whitespace();
      if (this.src[this.pos] === CLOSE_BRACKET) this.pos++;
      else {
        for (;;) {
          this.whitespace();
          if (this.unsure) this.skipValue(depth + 1);
          else {
            const item = begin(writer, LIST_VALUES_TAG);
            this.readValue(writer, depth + 1);
            writer.end(item);
          }
          this.whitespace();
          if (this.src[this.pos] === COMMA) {
            this.pos++;
            continue;
          }
          this.expect(CLOSE_BRACKET);
          break;
        }
      }
      writer.end(list);
    } else if (byte === 0x74) {
      this.literal("true");
      writer.tag(VALUE_BOOL, WireType.VARINT);
      writer.varint(1);
    } else if (byte === 0x66) {
      this.literal("false");
      writer.tag(VALUE_BOOL, WireType.VARINT);
      writer.varint(0);
    } else if (byte === 0x6e) {
      this.literal("null");
      writer.tag(VALUE_NULL, WireType.VARINT);
      writer.varint(0);
    } else {
      const value = this.readNumber();
      if (Number.isFinite(value)) writer.double(VALUE_NUMBER, value);
      else this.unsure = true;
    }
  }

  /** Skips a value, checking its syntax and counting its numbers' growth. */
  skipValue(depth: number): void {
    if (depth >= MAX_SCAN_DEPTH) throw GIVE_UP;
    const byte = this.src[this.pos];
    if (byte === QUOTE) return this.readString();
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      const close = byte === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
      this.pos++;
      this.whitespace();
      if (this.src[this.pos] === close) {
        this.pos++;
        return;
      }
      for (;;) {
        this.whitespace();
        if (close === CLOSE_BRACE) {
          this.readString();
          this.colon();
        }
        this.skipValue(depth + 1);
        this.whitespace();
        if (this.src[this.pos] === COMMA) {
          this.pos++;
          continue;
        }
        this.expect(close);
        return;
      }
    }
    if (byte === 0x74) return this.literal("true");
    if (byte === 0x66) return this.literal("false");
    if (byte === 0x6e) return this.literal("null");
    this.readNumber();
  }

  /** Writes the string just read as a Value's string_value. */
  writeText(writer: ProtoWriter): void {
    if (!this.stringEscaped) return this.copyField(writer, VALUE_STRING_TAG, this.stringStart, this.stringEnd - this.stringStart);
    const text = JSON.parse(this.src.toString("utf8", this.stringStart - 1, this.stringEnd + 1)) as string;
    // Text with a lone surrogate cannot be carried (the rules refuse it).
    if (!isWellFormedText(text)) this.unsure = true;
    else writer.string(VALUE_STRING, text);
  }

  /**
   * The usual member, a short key and short text without escapes, written in one go: every length
   * fits a byte, so none needs reserving and fixing up, and the text is copied as it is scanned.
   * False (the text read, `textRead` set) when the member is not such a one, for the caller to
   * write it the usual way.
   */
  writeTextEntry(writer: ProtoWriter, keyStart: number, keyEnd: number): boolean {
    const keyLength = keyEnd - keyStart;
    // Field sizes: the key's (left out when empty), then the Value's tag and length, and inside it
    // the text's tag and length: the longest text whose entry's length still fits a byte.
    const keyField = keyLength > 0 ? 2 + keyLength : 0;
    const maxText = 0x7f - keyField - 4;
    const src = this.src;
    // At the text's quote (readObject looked).
    let pos = this.pos;
    if (maxText < 0) return this.textLeft();
    writer.ensure(0x7f + 2);
    const buf = writer.buf;
    const entryAt = writer.pos;
    let at = entryAt + 2;
    if (keyLength > 0) {
      buf[at++] = ENTRY_KEY_TAG;
      buf[at++] = keyLength;
      for (let index = 0; index < keyLength; index++) buf[at++] = src[keyStart + index]!;
    }
    buf[at++] = ENTRY_VALUE_TAG;
    const valueLengthAt = at++;
    buf[at++] = VALUE_STRING_TAG;
    const textLengthAt = at++;
    const textStart = ++pos;
    const maxPos = textStart + maxText;
    // Four bytes at a time while none ends the text, then byte by byte.
    const wordsEnd = Math.min(maxPos, this.end) - 4;
    const view = this.view;
    while (pos <= wordsEnd) {
      const word = view.getUint32(pos, true);
      if (endsText(word)) break;
      buf[at] = word;
      buf[at + 1] = word >>> 8;
      buf[at + 2] = word >>> 16;
      buf[at + 3] = word >>> 24;
      at += 4;
      pos += 4;
    }
    let byte = src[pos]!;
    // Past the end, byte is undefined and PLAIN[undefined] too: the loop stops, and readString gives up.
    while (PLAIN[byte] === 1 && pos < maxPos) {
      buf[at++] = byte;
      byte = src[++pos]!;
    }
    // An escape, a control character, the body's end or text too long: read the usual way.
    if (byte !== QUOTE) return this.textLeft();
    const textLength = pos - textStart;
    buf[textLengthAt] = textLength;
    buf[valueLengthAt] = 2 + textLength;
    buf[entryAt] = ENTRY_TAG;
    buf[entryAt + 1] = at - entryAt - 2;
    writer.pos = at;
    this.pos = pos + 1;
    return true;
  }

  /** The member's text is left to the usual way: read (and checked) with readString. */
  private textLeft(): boolean {
    this.readString();
    this.textRead = true;
    return false;
  }

  /** A member whose value is a number, written in one go when its key is short. */
  writeNumberEntry(writer: ProtoWriter, keyStart: number, keyEnd: number): void {
    const value = this.readNumber();
    // JSON.parse reads 1e400 as Infinity, which the rules refuse.
    if (!Number.isFinite(value)) {
      this.unsure = true;
      return;
    }
    const keyLength = keyEnd - keyStart;
    const keyField = keyLength > 0 ? 2 + keyLength : 0;
    const entryBody = keyField + 2 + NUMBER_VALUE_BYTES;
    if (entryBody >= 0x80) {
      const entry = begin(writer, ENTRY_TAG);
      if (keyLength > 0) this.copyField(writer, ENTRY_KEY_TAG, keyStart, keyLength);
      const field = begin(writer, ENTRY_VALUE_TAG);
      writer.double(VALUE_NUMBER, value);
      writer.end(field);
      writer.end(entry);
      return;
    }
    const at = this.shortEntryHead(writer, entryBody, keyStart, keyLength, NUMBER_VALUE_BYTES);
    const buf = writer.buf;
    buf[at] = VALUE_NUMBER_TAG;
    writer.pos = buf.writeDoubleLE(value, at + 1);
  }

  /**
   * The start of a member whose lengths all fit a byte: the map entry's tag and length, the key
   * field (left out when empty), the Value's tag and length. Returns where the Value's body goes.
   */
  private shortEntryHead(writer: ProtoWriter, entryBody: number, keyStart: number, keyLength: number, valueBody: number): number {
    writer.ensure(entryBody + 2);
    const buf = writer.buf;
    const src = this.src;
    let at = writer.pos;
    buf[at++] = ENTRY_TAG;
    buf[at++] = entryBody;
    if (keyLength > 0) {
      buf[at++] = ENTRY_KEY_TAG;
      buf[at++] = keyLength;
      for (let index = 0; index < keyLength; index++) buf[at++] = src[keyStart + index]!;
    }
    buf[at++] = ENTRY_VALUE_TAG;
    buf[at++] = valueBody;
    return at;
  }

  /** The type at [start, textEnd): one of TYPE_NAMES when it is one, otherwise decoded. */
  typeAt(start: number, textEnd: number): string {
    for (let index = 0; index < TYPE_NAME_BYTES.length; index++) {
      const name = TYPE_NAME_BYTES[index]!;
      if (name.length === textEnd - start && name[0] === this.src[start] && this.sameRange(name, start)) return TYPE_NAMES[index]!;
    }
    return this.src.toString("utf8", start, textEnd);
  }

  pushKey(keyStart: number, keyEnd: number): void {
    if (this.keySpanCount + 2 > this.keySpans.length) {
      const grown = new Int32Array(this.keySpans.length * 2);
      grown.set(this.keySpans);
      this.keySpans = grown;
    }
    this.keySpans[this.keySpanCount++] = keyStart;
    this.keySpans[this.keySpanCount++] = keyEnd;
  }

  /** Copies src[start, start + length) as a length-delimited field with a one-byte tag. */
  copyField(writer: ProtoWriter, tag: number, start: number, length: number): void {
    writer.ensure(length + 10);
    const buf = writer.buf;
    let at = writer.pos;
    if (tag < 0x80) buf[at++] = tag;
    else at = writeVarint(buf, at, tag);
    if (length < 0x80) buf[at++] = length;
    else at = writeVarint(buf, at, length);
    if (length < HAND_COPY_BYTES) {
      const src = this.src;
      for (let index = 0; index < length; index++) buf[at + index] = src[start + index]!;
    } else this.src.copy(buf, at, start, start + length);
    writer.pos = at + length;
  }

  /** Reads a string (at its quote): its content's span and whether it has escapes, which are checked. */
  readString(): void {
    const src = this.src;
    let pos = this.pos;
    if (src[pos] !== QUOTE) throw GIVE_UP;
    const start = ++pos;
    let escaped = false;
    let high = 0;
    for (;;) {
      let byte = src[pos]!;
      // Past the end, byte is undefined and PLAIN[undefined] too: the loop stops and the checks below give up.
      while (PLAIN[byte] === 1) {
        high |= byte;
        byte = src[++pos]!;
      }
      if (byte === QUOTE) break;
      if (byte !== BACKSLASH) throw GIVE_UP;
      escaped = true;
      const next = src[pos + 1];
      if (next === 0x75) {
        for (let index = pos + 2; index < pos + 6; index++) if (!isHex(src[index])) throw GIVE_UP;
        pos += 6;
        continue;
      }
      if (next === undefined || !SIMPLE_ESCAPES.has(next)) throw GIVE_UP;
      pos += 2;
    }
    this.stringStart = start;
    this.stringEnd = pos;
    this.stringEscaped = escaped;
    this.stringHigh = high >= 0x80;
    this.pos = pos + 1;
  }

  /**
   * Reads a JSON number as JSON.parse does: an integer of up to 15 digits is exact as it is
   * summed, anything else is Number() of its text (the same correctly rounded reading).
   */
  readNumber(): number {
    const src = this.src;
    let pos = this.pos;
    const start = pos;
    let negative = false;
    if (src[pos] === MINUS) {
      negative = true;
      pos++;
    }
    // Every digit, fraction included, summed into one integer while it is exact.
    let value = 0;
    let digits = 0;
    let byte = src[pos];
    if (byte === ZERO) {
      byte = src[++pos];
      digits = 1;
    } else {
      while (byte !== undefined && byte >= ZERO && byte <= NINE) {
        value = value * 10 + (byte - ZERO);
        digits++;
        byte = src[++pos];
      }
      if (digits === 0) throw GIVE_UP;
    }
    let decimals = 0;
    if (byte === DOT) {
      byte = src[++pos];
      while (byte !== undefined && byte >= ZERO && byte <= NINE) {
        value = value * 10 + (byte - ZERO);
        decimals++;
        byte = src[++pos];
      }
      if (decimals === 0) throw GIVE_UP;
    }
    let exponent = false;
    if (byte === 0x65 || byte === 0x45) {
      exponent = true;
      pos++;
      if (src[pos] === 0x2b || src[pos] === MINUS) pos++;
      this.pos = pos;
      if (!this.digitsFollow()) throw GIVE_UP;
      pos = this.pos;
    }
    this.pos = pos;
    // Up to 15 digits, the integer is exact and so is 10^decimals: one division rounds correctly,
    // to what JSON.parse reads.
    if (!exponent && digits + decimals <= 15) {
      const magnitude = decimals === 0 ? value : value / POWERS_OF_TEN[decimals]!;
      return negative ? -magnitude : magnitude;
    }
    const number = Number(src.toString("latin1", start, pos));
    // Only an exponent can make JSON.stringify write the number longer than the body has it.
    if (exponent && Number.isFinite(number)) this.growth += Math.max(0, String(number).length - (pos - start));
    return number;
  }

  digitsFollow(): boolean {
    const start = this.pos;
    let byte = this.src[this.pos];
    while (byte !== undefined && byte >= ZERO && byte <= NINE) byte = this.src[++this.pos];
    return this.pos > start;
  }

  literal(text: "true" | "false" | "null"): void {
    for (let index = 0; index < text.length; index++) if (this.src[this.pos + index] !== text.charCodeAt(index)) throw GIVE_UP;
    this.pos += text.length;
  }

  expect(byte: number): void {
    if (this.src[this.pos] !== byte) throw GIVE_UP;
    this.pos++;
  }

  /** The colon after a key, whitespace around it allowed; compact JSON (none) in one look. */
  colon(): void {
    const src = this.src;
    const pos = this.pos;
    if (src[pos] === COLON && src[pos + 1]! > 0x20) {
      this.pos = pos + 1;
      return;
    }
    this.whitespace();
    this.expect(COLON);
    this.whitespace();
  }

  whitespace(): void {
    const src = this.src;
    let pos = this.pos;
    let byte = src[pos];
    if (byte === undefined || byte > 0x20) return;
    while (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) byte = src[++pos];
    this.pos = pos;
  }

  sameBytes(aStart: number, aEnd: number, bStart: number, bEnd: number): boolean {
    if (aEnd - aStart !== bEnd - bStart) return false;
    for (let index = 0; index < aEnd - aStart; index++) if (this.src[aStart + index] !== this.src[bStart + index]) return false;
    return true;
  }

  /** `__proto__`, which parsed objects and spreads treat apart from other keys. */
  isProtoKey(start: number, keyEnd: number): boolean {
    return keyEnd - start === PROTO_KEY.length && this.src[start] === PROTO_KEY[0] && this.sameRange(PROTO_KEY, start);
  }

  /** The slot of the key at [start, keyEnd), compared by hand (no string made); undefined for another key. */
  slotAt(start: number, keyEnd: number): number | undefined {
    const length = keyEnd - start;
    if (length >= MAX_SLOT_KEY_BYTES) return undefined;
    const candidates = SLOT_CANDIDATES[length * 256 + this.src[start]!];
    if (candidates === undefined) return undefined;
    for (let index = 0; index < candidates.length; index++) {
      const slot = candidates[index]!;
      if (this.sameRange(SLOT_KEY_BYTES[slot]!, start)) return slot;
    }
    return undefined;
  }

  sameRange(key: Buffer, start: number): boolean {
    for (let index = 1; index < key.length; index++) if (key[index] !== this.src[start + index]) return false;
    return true;
  }
}

const reader = new BodyReader();
