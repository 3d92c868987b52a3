import { UNUSUAL, type WireReader } from "../reader.js";
import { entry, nextListValue, nextStructEntry, readValueKind, value } from "../struct-entries.js";
import { VALUE_BOOL, VALUE_LIST, VALUE_NULL, VALUE_NUMBER, VALUE_STRING, VALUE_STRUCT } from "../tags.js";
import type { JsonBytes } from "./json-bytes.js";

/*
 * google.protobuf.Struct, Value and ListValue, written as JSON straight from
 * their bytes: the same text as JSON.stringify of what the decoder makes of
 * them (readCallBatch, call-batch-reader.ts), without making it.
 *
 * Where a decoded object's JSON depends on JavaScript's property rules, the
 * bytes are left to the decoder (UNUSUAL): keys that start with a digit
 * (integer-like keys are listed first), keys that are not ASCII (different
 * invalid UTF-8 can decode to the same key) and a key that repeats (the object
 * keeps its first position and last value). ("__proto__" is an ordinary key
 * to the decoder, see libs/core/contracts struct-keys.ts, and is written as it is.)
 * So is a field that occurs twice where one is expected:
 * the decoder reads every occurrence. Calls from ingest have none of these.
 */

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const NULL = Buffer.from("null");
const TRUE = Buffer.from("true");
const FALSE = Buffer.from("false");

/** Nested messages deeper than this are left to the decoder, whose recursion limit (100) then applies. */
const MAX_DEPTH = 60;
/** Keys of the objects being written, innermost last, as (start, length) pairs: for the repeated-key check. */
const keyStack = new Int32Array(2 * 1024);
let keyTop = 0;

/** The JSON object of the Struct at [start, end); `depth` counts the messages around it. */
export function writeStruct(reader: WireReader, start: number, end: number, depth: number, out: JsonBytes): void {
  if (depth > MAX_DEPTH) throw UNUSUAL;
  const keysBase = keyTop;
  try {
    writeEntries(reader, start, end, depth, keysBase, out);
  } finally {
    keyTop = keysBase;
  }
}

function writeEntries(reader: WireReader, start: number, end: number, depth: number, keysBase: number, out: JsonBytes): void {
  const bytes = reader.buf;
  out.byte(OPEN_OBJECT);
  let empty = true;
  reader.pos = start;
  while (nextStructEntry(reader, end)) {
    const entryEnd = reader.pos;
    const { valueStart, valueEnd } = entry;
    if (valueStart < 0) continue;
    // No key: the empty string.
    const keyStart = entry.keyStart < 0 ? entryEnd : entry.keyStart;
    const keyEnd = entry.keyStart < 0 ? entryEnd : entry.keyEnd;
    checkKey(bytes, keyStart, keyEnd, keysBase);

    const mark = out.mark();
    if (!empty) out.byte(COMMA);
    out.utf8String(bytes, keyStart, keyEnd);
    out.byte(COLON);
    if (writeValue(reader, valueStart, valueEnd, depth + 2, out)) {
      empty = false;
      if (keyTop === keyStack.length) throw UNUSUAL;
      keyStack[keyTop++] = keyStart;
      keyStack[keyTop++] = keyEnd - keyStart;
    } else {
      out.rewind(mark); // a Value without a kind: the decoder leaves the key out
    }
    reader.pos = entryEnd;
  }
  out.byte(CLOSE_OBJECT);
}

/**
 * The JSON of the Value at [start, end); false, with nothing written, when it has no kind.
 */
function writeValue(reader: WireReader, start: number, end: number, depth: number, out: JsonBytes): boolean {
  switch (readValueKind(reader, start, end)) {
    case VALUE_NULL:
      out.raw(NULL);
      return true;
    case VALUE_NUMBER:
      out.number(reader.double(value.start));
      return true;
    case VALUE_STRING:
      out.utf8String(reader.buf, value.start, value.end);
      return true;
    case VALUE_BOOL:
      out.raw(value.flag ? TRUE : FALSE);
      return true;
    case VALUE_STRUCT:
      writeStruct(reader, value.start, value.end, depth + 1, out);
      return true;
    case VALUE_LIST:
      writeList(reader, value.start, value.end, depth + 1, out);
      return true;
    default:
      return false;
  }
}

/** The JSON array of the ListValue at [start, end); a Value without a kind is null, as JSON.stringify writes undefined. */
function writeList(reader: WireReader, start: number, end: number, depth: number, out: JsonBytes): void {
  if (depth > MAX_DEPTH) throw UNUSUAL;
  out.byte(OPEN_ARRAY);
  let empty = true;
  reader.pos = start;
  for (let valueEnd = nextListValue(reader, end); valueEnd >= 0; valueEnd = nextListValue(reader, end)) {
    if (!empty) out.byte(COMMA);
    empty = false;
    if (!writeValue(reader, reader.pos, valueEnd, depth + 1, out)) out.raw(NULL);
    reader.pos = valueEnd;
  }
  out.byte(CLOSE_ARRAY);
}

/** Throws UNUSUAL for a key whose place or value in the decoded object JSON.stringify would not keep as written. */
function checkKey(bytes: Uint8Array, start: number, end: number, keysBase: number): void {
  const length = end - start;
  if (length > 0 && bytes[start]! >= 0x30 && bytes[start]! <= 0x39) throw UNUSUAL;
  for (let i = start; i < end; i++) if (bytes[i]! > 0x7f) throw UNUSUAL;
  for (let k = keysBase; k < keyTop; k += 2) {
    if (keyStack[k + 1] !== length) continue;
    const other = keyStack[k]!;
    let same = true;
    for (let i = 0; i < length && same; i++) same = bytes[start + i] === bytes[other + i];
    if (same) throw UNUSUAL;
  }
}
