import {
  containerSize,
  INVALID_UTF8,
  jsonNumberSize,
  jsonStringSize,
  FALSE_JSON_SIZE,
  memberSize,
  NULL_JSON_SIZE,
  TRUE_JSON_SIZE,
} from "./json-size.js";
import { MalformedWireError, WireType, type WireReader } from "./wire-reader.js";

/**
 * The deepest a message may be nested, counting as the generated decoder does
 * (the request is level 1, the Call level 2, and each message decoded inside
 * another one level more). The generated decoder throws beyond it, so a call
 * the fast path passes is one that delivery, which decodes a CallBatch whose
 * calls are at level 2 as well, can read.
 */
export const MAX_MESSAGE_LEVEL = 100;

/** Throws when a message at `level` would be nested deeper than the decoder allows. */
export function enterMessage(level: number): void {
  if (level > MAX_MESSAGE_LEVEL) throw new MalformedWireError(`messages nested deeper than ${MAX_MESSAGE_LEVEL} levels`);
}

/**
 * What a walk noticed besides the size. `irregular` marks bytes that are valid
 * protobuf but that the generated decoder would not re-encode to the same
 * message: unknown or mistyped fields (the decoder drops them), a repeated
 * singular message field (it keeps the last where protobuf merges), a map entry
 * or Value without a value, a Value with two kinds, a NULL_VALUE or bool not
 * encoded as 0 or 1, a `__proto__` key (the decoder's plain-object map loses
 * it), and text that is not valid UTF-8 (the decoder replaces it). Such a call
 * takes the exact path: decoded and re-encoded, as before the fast path.
 */
export interface WalkNotes {
  irregular: boolean;
}

// Tags (field number << 3 | wire type) of google.protobuf.Struct, its map entry, Value and ListValue.
const STRUCT_FIELDS = (1 << 3) | WireType.LEN;
const ENTRY_KEY = (1 << 3) | WireType.LEN;
const ENTRY_VALUE = (2 << 3) | WireType.LEN;
const VALUE_NULL = (1 << 3) | WireType.VARINT;
const VALUE_NUMBER = (2 << 3) | WireType.I64;
const VALUE_STRING = (3 << 3) | WireType.LEN;
const VALUE_BOOL = (4 << 3) | WireType.VARINT;
const VALUE_STRUCT = (5 << 3) | WireType.LEN;
const VALUE_LIST = (6 << 3) | WireType.LEN;
const LIST_VALUES = (1 << 3) | WireType.LEN;

/** `__proto__` in UTF-8: as a key of the decoder's plain object, it sets the prototype instead of adding a key. */
const PROTO_KEY = Buffer.from("__proto__");

/**
 * Checks that reader.buf[reader.pos, end) is well-formed google.protobuf.Struct
 * wire data at nesting `level`, without building anything, and returns the
 * size of its JSON (see json-size.ts). Throws MalformedWireError otherwise.
 * Recursion is bounded by MAX_MESSAGE_LEVEL.
 */
export function walkStruct(reader: WireReader, end: number, level: number, notes: WalkNotes): number {
  let members = 0;
  let membersSize = 0;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag !== STRUCT_FIELDS) {
      notes.irregular = true;
      reader.skipField(tag, end);
      continue;
    }
    const entryEnd = reader.delimitedEnd(end);
    enterMessage(level + 1);
    membersSize += walkEntry(reader, entryEnd, level + 1, notes);
    members++;
  }
  return containerSize(members, membersSize);
}

/** One map entry of a Struct: `"key":value`. */
function walkEntry(reader: WireReader, end: number, level: number, notes: WalkNotes): number {
  let keySize = 2; // an absent key is the empty string
  let valueSize = -1;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag === ENTRY_KEY) {
      const keyEnd = reader.delimitedEnd(end);
      keySize = jsonStringSize(reader.buf, reader.pos, keyEnd);
      if (keySize === INVALID_UTF8 || isProtoKey(reader.buf, reader.pos, keyEnd)) {
        notes.irregular = true;
        keySize = 0;
      }
      reader.pos = keyEnd;
    } else if (tag === ENTRY_VALUE) {
      if (valueSize >= 0) notes.irregular = true;
      const valueEnd = reader.delimitedEnd(end);
      enterMessage(level + 1);
      valueSize = walkValue(reader, valueEnd, level + 1, notes);
    } else {
      notes.irregular = true;
      reader.skipField(tag, end);
    }
  }
  if (valueSize < 0) {
    notes.irregular = true;
    valueSize = 0;
  }
  return memberSize(keySize, valueSize);
}

/** A google.protobuf.Value: exactly one of null, number, string, bool, struct or list. */
function walkValue(reader: WireReader, end: number, level: number, notes: WalkNotes): number {
  let kinds = 0;
  let size = 0;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    kinds++;
    switch (tag) {
      case VALUE_NULL:
        if (!reader.skipVarint(end) || reader.buf[reader.pos - 1] !== 0) notes.irregular = true;
        size = NULL_JSON_SIZE;
        break;
      case VALUE_NUMBER:
        reader.skipBytes(8, end);
        size = jsonNumberSize(reader.buf.readDoubleLE(reader.pos - 8));
        break;
      case VALUE_STRING: {
        const stringEnd = reader.delimitedEnd(end);
        size = jsonStringSize(reader.buf, reader.pos, stringEnd);
        if (size === INVALID_UTF8) notes.irregular = true;
        reader.pos = stringEnd;
        break;
      }
      case VALUE_BOOL:
        if (!reader.skipVarint(end)) notes.irregular = true;
        size = reader.buf[reader.pos - 1] === 1 ? TRUE_JSON_SIZE : FALSE_JSON_SIZE;
        break;
      case VALUE_STRUCT: {
        const structEnd = reader.delimitedEnd(end);
        enterMessage(level + 1);
        size = walkStruct(reader, structEnd, level + 1, notes);
        break;
      }
      case VALUE_LIST: {
        const listEnd = reader.delimitedEnd(end);
        enterMessage(level + 1);
        size = walkList(reader, listEnd, level + 1, notes);
        break;
      }
      default:
        kinds--;
        notes.irregular = true;
        reader.skipField(tag, end);
    }
  }
  if (kinds !== 1) notes.irregular = true;
  return size;
}

/** A google.protobuf.ListValue: `[value,value,...]`. */
function walkList(reader: WireReader, end: number, level: number, notes: WalkNotes): number {
  let members = 0;
  let membersSize = 0;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag !== LIST_VALUES) {
      notes.irregular = true;
      reader.skipField(tag, end);
      continue;
    }
    const valueEnd = reader.delimitedEnd(end);
    enterMessage(level + 1);
    membersSize += walkValue(reader, valueEnd, level + 1, notes);
    members++;
  }
  return containerSize(members, membersSize);
}

function isProtoKey(buf: Buffer, start: number, end: number): boolean {
  // Length and first byte rule out nearly every key before the (native, so costlier) comparison.
  return end - start === PROTO_KEY.length && buf[start] === PROTO_KEY[0] && buf.compare(PROTO_KEY, 0, PROTO_KEY.length, start, end) === 0;
}
