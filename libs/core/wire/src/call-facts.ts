import { CallField, type CallBatch } from "@switchyard/contracts";
import { readCallBatch } from "./call-batch-reader.js";
import { walkCallBatch } from "./call-batch-walker.js";
import { entry, nextStructEntry, readValueKind } from "./struct-entries.js";
import { PAYLOADS, type PayloadCase } from "./call-shape.js";
import { UNUSUAL, WireReader } from "./reader.js";
import { VALUE_BOOL, VALUE_LIST, VALUE_NULL, VALUE_NUMBER, VALUE_STRING, VALUE_STRUCT } from "./tags.js";

/** The JSON type of a value: what a schema records for each key. */
export type JsonValueType = "null" | "number" | "string" | "boolean" | "object" | "array";

/**
 * What a schema needs of each call of a CallBatch: its type, its name (the track
 * event, the page or screen name), when it was received, and the top-level keys
 * of its properties or traits with the JSON type of each value. Reused from
 * batch to batch (readBatchFacts resets it), so reading allocates little more
 * than the strings.
 */
export class BatchFacts {
  /** The batch's source_id. */
  sourceId = "";
  /** The batch's received_at in Unix milliseconds; NaN when unset. */
  receivedAtMillis = Number.NaN;
  /** How many calls the batch holds. */
  count = 0;
  /**
   * True when the batch was left to the generated decoder (an encoding the plain reads do not
   * take): the same facts at several times the cost, so ingest's ordinary batches must never be.
   */
  decodedWhole = false;
  /** Each call's payload case; undefined for a call without one. */
  readonly types: (PayloadCase | undefined)[] = [];
  /** Each call's track event or page/screen name; "" for other types. */
  readonly names: string[] = [];
  /** Each call's received_at in Unix milliseconds (as Date.getTime() gives it); NaN when unset. */
  readonly receivedAt: number[] = [];
  /** The keys of call i are keys[keyStarts[i]] up to keys[keyStarts[i + 1]], each once, with the type of its value. */
  readonly keyStarts: number[] = [0];
  readonly keys: string[] = [];
  readonly keyTypes: JsonValueType[] = [];

  reset(): void {
    this.sourceId = "";
    this.receivedAtMillis = Number.NaN;
    this.count = 0;
    this.decodedWhole = false;
    this.types.length = 0;
    this.names.length = 0;
    this.receivedAt.length = 0;
    this.keyStarts.length = 1;
    this.keys.length = 0;
    this.keyTypes.length = 0;
  }

  /** Appends a call whose keys were pushed since the previous call. */
  pushCall(type: PayloadCase | undefined, name: string, receivedAtMillis: number): void {
    this.types.push(type);
    this.names.push(name);
    this.receivedAt.push(receivedAtMillis);
    this.keyStarts.push(this.keys.length);
    this.count++;
  }

  /** Drops the keys pushed after `length` (a payload or Struct read again replaces the earlier one). */
  truncateKeys(length: number): void {
    if (this.keys.length === length) return;
    this.keys.length = length;
    this.keyTypes.length = length;
  }
}

/**
 * Reads the facts of every call of a switchyard.v1.CallBatch straight from its
 * bytes, without decoding what a schema does not need (context, integrations,
 * ids, nested values). What it returns equals what the generated decoder's
 * batch says (a property test holds them equal): the last occurrence of a field
 * wins, a Struct key keeps its first position and its last value's type, and
 * an entry without a value is left out. Bytes in an encoding the plain reads
 * leave alone (see WireReader) are decoded by readCallBatch instead, so such
 * input gives the same facts, or throws as the decoder does. Bytes the decoder
 * refuses only deep inside a part this reader skips (a malformed context) may
 * still give facts: only calls JetStream stored from ingest come this way.
 */
export function readBatchFacts(bytes: Uint8Array, into: BatchFacts = new BatchFacts()): BatchFacts {
  into.reset();
  try {
    readPlainBatch(new WireReader(bytes), bytes.length, into);
  } catch (error) {
    if (error !== UNUSUAL) throw error;
    into.reset();
    into.decodedWhole = true;
    factsOfDecoded(readCallBatch(bytes), into);
  }
  return into;
}

/** The facts of a batch the decoder returned. */
function factsOfDecoded(batch: CallBatch, facts: BatchFacts): void {
  facts.sourceId = batch.sourceId;
  facts.receivedAtMillis = batch.receivedAt ? batch.receivedAt.getTime() : Number.NaN;
  for (const call of batch.calls) {
    const payload = call.payload;
    let name = "";
    let struct: Record<string, unknown> | undefined;
    switch (payload?.$case) {
      case "track":
        name = payload.value.event;
        struct = payload.value.properties;
        break;
      case "page":
      case "screen":
        name = payload.value.name;
        struct = payload.value.properties;
        break;
      case "identify":
      case "group":
        struct = payload.value.traits;
        break;
    }
    if (struct) {
      for (const [key, value] of Object.entries(struct)) {
        facts.keys.push(key);
        facts.keyTypes.push(jsonTypeOf(value));
      }
    }
    facts.pushCall(payload?.$case, name, call.receivedAt ? call.receivedAt.getTime() : Number.NaN);
  }
}

function jsonTypeOf(value: unknown): JsonValueType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  switch (typeof value) {
    case "number":
      return "number";
    case "string":
      return "string";
    case "boolean":
      return "boolean";
    default:
      return "object";
  }
}

/** A payload as this reader needs it: its field in Call, and those of its name text and its Struct (-1: none). */
interface PayloadFactsShape {
  readonly type: PayloadCase;
  readonly field: number;
  readonly nameField: number;
  readonly structField: number;
}

/** The payload field that names a call, by payload: only track, page and screen calls have a name. */
const NAME_KEYS: Partial<Record<PayloadCase, string>> = { track: "event", page: "name", screen: "name" };

const PAYLOAD_FACTS: readonly PayloadFactsShape[] = PAYLOADS.map((shape) => ({
  type: shape.type,
  field: shape.field,
  nameField: shape.texts.find((text) => text.key === NAME_KEYS[shape.type])?.field ?? -1,
  structField: shape.struct?.field ?? -1,
}));

/** Where a call's and a payload's length-delimited fields lie (see WireReader.fieldRanges); reused call after call. */
const CALL_SLOTS = new Int32Array(2 * (Math.max(CallField.RECEIVED_AT, CallField.TIMESTAMP, ...PAYLOADS.map((shape) => shape.field)) + 1));
const PAYLOAD_SLOTS = new Int32Array(2 * (Math.max(...PAYLOAD_FACTS.flatMap((shape) => [shape.nameField, shape.structField])) + 1));

/** A wide Struct's keys already pushed for the call being read, with their index in facts.keys (see keyIndex). Reused. */
const seenKeys = new Map<string, number>();

/** Texts up to this many bytes are looked up in the cache below; longer ones are rare and decoded each time. */
const CACHED_TEXT_BYTES = 64;
const TEXT_SLOTS = 4096;

/**
 * The strings of recently read short texts (keys and names, which repeat from call to call), by
 * a hash of their bytes: a text seen before costs a hash and a compare instead of a new string
 * (and the garbage it leaves). The same bytes always give the same string, invalid UTF-8 included.
 */
class TextCache {
  private readonly bytes: (Buffer | undefined)[] = new Array<Buffer | undefined>(TEXT_SLOTS).fill(undefined);
  private readonly strings: string[] = new Array<string>(TEXT_SLOTS).fill("");

  text(buf: Buffer, start: number, end: number): string {
    const length = end - start;
    if (length > CACHED_TEXT_BYTES) return buf.toString("utf8", start, end);
    let hash = 0x811c9dc5 ^ length;
    for (let at = start; at < end; at++) hash = Math.imul(hash ^ buf[at]!, 0x01000193);
    const slot = (hash >>> 0) & (TEXT_SLOTS - 1);
    const known = this.bytes[slot];
    if (known !== undefined && known.length === length) {
      let same = true;
      for (let index = 0; index < length; index++) {
        if (known[index] !== buf[start + index]) {
          same = false;
          break;
        }
      }
      if (same) return this.strings[slot]!;
    }
    const text = buf.toString("utf8", start, end);
    this.bytes[slot] = Buffer.from(buf.subarray(start, end));
    this.strings[slot] = text;
    return text;
  }
}

const texts = new TextCache();

function readPlainBatch(reader: WireReader, end: number, facts: BatchFacts): void {
  walkCallBatch(reader, end, {
    sourceId: (batch, start, fieldEnd) => (facts.sourceId = texts.text(batch.buf, start, fieldEnd)),
    receivedAt: (batch, start, fieldEnd) => (facts.receivedAtMillis = Math.trunc(batch.timestampMillis(start, fieldEnd))),
    call: (batch, _start, fieldEnd) => readPlainCall(batch, fieldEnd, facts),
  });
}

/**
 * A call's facts from where its fields lie (WireReader.fieldRanges, which leaves a repeated field
 * to the decoder). Of two payloads of different kinds the later one is the call's, as the
 * decoder's oneof keeps it.
 */
function readPlainCall(reader: WireReader, end: number, facts: BatchFacts): void {
  reader.fieldRanges(end, CALL_SLOTS);
  const received = CALL_SLOTS[2 * CallField.RECEIVED_AT]!;
  // As a Date holds it: whole milliseconds.
  const receivedAt = received < 0 ? Number.NaN : Math.trunc(reader.timestampMillis(received, CALL_SLOTS[2 * CallField.RECEIVED_AT + 1]!));
  const timestamp = CALL_SLOTS[2 * CallField.TIMESTAMP]!;
  // Not a fact, but read all the same: in a damaged one (a varint running past its end) the decoder
  // reads on into the call's next fields and loses them; this then leaves it the call.
  if (timestamp >= 0) reader.timestampMillis(timestamp, CALL_SLOTS[2 * CallField.TIMESTAMP + 1]!);
  let shape: PayloadFactsShape | undefined;
  let payloadStart = -1;
  for (const candidate of PAYLOAD_FACTS) {
    const start = CALL_SLOTS[2 * candidate.field]!;
    if (start > payloadStart) {
      shape = candidate;
      payloadStart = start;
    }
  }
  let name = "";
  if (shape) {
    reader.pos = payloadStart;
    name = readPlainPayload(reader, CALL_SLOTS[2 * shape.field + 1]!, shape, facts);
  }
  reader.pos = end;
  facts.pushCall(shape?.type, name, receivedAt);
}

/** Reads a payload's name and its Struct's keys; returns the name. */
function readPlainPayload(reader: WireReader, end: number, shape: PayloadFactsShape, facts: BatchFacts): string {
  reader.fieldRanges(end, PAYLOAD_SLOTS);
  const nameStart = shape.nameField < 0 ? -1 : PAYLOAD_SLOTS[2 * shape.nameField]!;
  const name = nameStart < 0 ? "" : texts.text(reader.buf, nameStart, PAYLOAD_SLOTS[2 * shape.nameField + 1]!);
  const structStart = shape.structField < 0 ? -1 : PAYLOAD_SLOTS[2 * shape.structField]!;
  if (structStart >= 0) {
    reader.pos = structStart;
    readPlainStructKeys(reader, PAYLOAD_SLOTS[2 * shape.structField + 1]!, facts);
  }
  return name;
}

function readPlainStructKeys(reader: WireReader, end: number, facts: BatchFacts): void {
  seenKeys.clear();
  const structStart = facts.keys.length;
  while (nextStructEntry(reader, end)) {
    // An entry without a value is left out; a repeated key keeps its place and takes the last type.
    if (entry.valueStart < 0) continue;
    const entryEnd = reader.pos;
    const key = entry.keyStart < 0 ? "" : texts.text(reader.buf, entry.keyStart, entry.keyEnd);
    const type = JSON_TYPE_BY_TAG[readValueKind(reader, entry.valueStart, entry.valueEnd)];
    reader.pos = entryEnd;
    if (type === undefined) continue;
    const at = keyIndex(facts.keys, structStart, key);
    if (at === -1) {
      facts.keys.push(key);
      facts.keyTypes.push(type);
    } else {
      facts.keyTypes[at] = type;
    }
  }
}

/** Up to this many keys, a Struct's keys are compared one by one; from then on through seenKeys. */
const PAIRWISE_KEYS = 16;

/**
 * Where `key` already is among keys[start..], or -1. An encoder writes each key once, so this is
 * nearly always -1: a few compares (of the same strings, from the text cache) for the usual
 * handful of keys, and seenKeys, filled on first use, for wide Structs.
 */
function keyIndex(keys: string[], start: number, key: string): number {
  const count = keys.length - start;
  if (count < PAIRWISE_KEYS) {
    for (let at = start; at < keys.length; at++) if (keys[at] === key) return at;
    return -1;
  }
  if (count === PAIRWISE_KEYS) for (let at = start; at < keys.length; at++) seenKeys.set(keys[at]!, at);
  const at = seenKeys.get(key);
  if (at !== undefined) return at;
  seenKeys.set(key, keys.length);
  return -1;
}

/** A Value's JSON type by its kind's tag (readValueKind); a Value without a kind has none. */
const JSON_TYPE_BY_TAG: Record<number, JsonValueType | undefined> = {
  [VALUE_NULL]: "null",
  [VALUE_NUMBER]: "number",
  [VALUE_STRING]: "string",
  [VALUE_BOOL]: "boolean",
  [VALUE_STRUCT]: "object",
  [VALUE_LIST]: "array",
};
