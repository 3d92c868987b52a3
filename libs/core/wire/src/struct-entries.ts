import { UNUSUAL, type WireReader } from "./reader.js";
import {
  ENTRY_KEY,
  ENTRY_VALUE,
  LIST_VALUES,
  STRUCT_FIELDS,
  VALUE_BOOL,
  VALUE_LIST,
  VALUE_NULL,
  VALUE_NUMBER,
  VALUE_STRING,
  VALUE_STRUCT,
} from "./tags.js";

/*
 * The plain reads of google.protobuf.Struct, its map entries, Value and ListValue, for the readers
 * that work on a call's bytes instead of decoding it: the webhook body's JSON (struct-json.ts), a
 * filter's field lookup (call-fields.ts) and a schema's key facts (call-facts.ts). Whatever the
 * generated decoder would merge or choose between (a key or a value twice in one entry, a Value
 * with two kinds) throws UNUSUAL, as does any encoding the plain reads leave to it: the caller then
 * decodes instead. Each function reads into one shared result object, so nothing is allocated per
 * entry; a caller copies what it needs before it reads a nested message.
 *
 * The one other reader of Structs is ingest's scan (struct-walker.ts): it reads under the
 * decoder's rules rather than the plain ones (checked reads that refuse malformed bytes and walk
 * groups and repeats as the decoder does), unrolled for the gRPC hot path.
 */

/** Where an entry's key and value lie; -1 for one the entry does not have. */
export interface StructEntry {
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
}

/** What nextStructEntry found last. */
export const entry: StructEntry = { keyStart: -1, keyEnd: -1, valueStart: -1, valueEnd: -1 };

/**
 * Reads the next map entry of the Struct at [reader.pos, end) into `entry`, skipping other fields;
 * false when none is left (the reader is then at `end`). Leaves the reader at the entry's end.
 */
export function nextStructEntry(reader: WireReader, end: number): boolean {
  while (reader.pos < end) {
    const tag = reader.varint32();
    if (tag !== STRUCT_FIELDS) {
      reader.skip(tag, end);
      continue;
    }
    const entryEnd = reader.fieldEnd(end);
    let keyStart = -1;
    let keyEnd = -1;
    let valueStart = -1;
    let valueEnd = -1;
    while (reader.pos < entryEnd) {
      const entryTag = reader.varint32();
      if (entryTag === ENTRY_KEY || entryTag === ENTRY_VALUE) {
        const fieldEnd = reader.fieldEnd(entryEnd);
        if (entryTag === ENTRY_KEY) {
          if (keyStart >= 0) throw UNUSUAL;
          keyStart = reader.pos;
          keyEnd = fieldEnd;
        } else {
          if (valueStart >= 0) throw UNUSUAL;
          valueStart = reader.pos;
          valueEnd = fieldEnd;
        }
        reader.pos = fieldEnd;
      } else {
        reader.skip(entryTag, entryEnd);
      }
    }
    if (reader.pos !== entryEnd) throw UNUSUAL;
    entry.keyStart = keyStart;
    entry.keyEnd = keyEnd;
    entry.valueStart = valueStart;
    entry.valueEnd = valueEnd;
    return true;
  }
  if (reader.pos !== end) throw UNUSUAL;
  return false;
}

/** A Value's kind: its tag (VALUE_NULL, VALUE_NUMBER, ...), 0 when it has none; where its bytes lie; a bool's value. */
export interface ValueKind {
  tag: number;
  /** A number's eight bytes, or a string's, Struct's or ListValue's. */
  start: number;
  end: number;
  flag: boolean;
}

/** What readValueKind found last. */
export const value: ValueKind = { tag: 0, start: 0, end: 0, flag: false };

/** Reads the kind of the Value at [start, end) into `value` and returns its tag (0: it has none). Leaves the reader at `end`. */
export function readValueKind(reader: WireReader, start: number, end: number): number {
  let kind = 0;
  reader.pos = start;
  while (reader.pos < end) {
    const tag = reader.varint32();
    switch (tag) {
      case VALUE_NULL:
      case VALUE_NUMBER:
      case VALUE_STRING:
      case VALUE_BOOL:
      case VALUE_STRUCT:
      case VALUE_LIST:
        if (kind !== 0) throw UNUSUAL;
        kind = tag;
        break;
      default:
        reader.skip(tag, end);
        continue;
    }
    if (tag === VALUE_NULL) reader.nonZeroVarint();
    else if (tag === VALUE_BOOL) value.flag = reader.nonZeroVarint();
    else if (tag === VALUE_NUMBER) {
      value.start = reader.pos;
      reader.pos += 8;
      value.end = reader.pos;
    } else {
      value.end = reader.fieldEnd(end);
      value.start = reader.pos;
      reader.pos = value.end;
    }
  }
  if (reader.pos !== end) throw UNUSUAL;
  value.tag = kind;
  return kind;
}

/**
 * Where the next Value of the ListValue at [reader.pos, end) ends, skipping other fields (the
 * Value starts at reader.pos); -1 when none is left (the reader is then at `end`).
 */
export function nextListValue(reader: WireReader, end: number): number {
  while (reader.pos < end) {
    const tag = reader.varint32();
    if (tag === LIST_VALUES) return reader.fieldEnd(end);
    reader.skip(tag, end);
  }
  if (reader.pos !== end) throw UNUSUAL;
  return -1;
}
