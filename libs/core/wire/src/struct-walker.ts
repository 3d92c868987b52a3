import { MAX_MESSAGE_LEVEL } from "@switchyard/calls";
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
import { decodeText, MalformedWireError, type WireReader } from "./reader.js";
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

/**
 * The deepest a message may be nested, counting as the generated decoder does
 * (the request is level 1, the Call level 2, and each message decoded inside
 * another one level more). The generated decoder throws beyond it, so a call
 * the fast path passes is one that delivery, which decodes a CallBatch whose
 * calls are at level 2 as well, can read.
 */
export { MAX_MESSAGE_LEVEL };

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
 * encoded as 0 or 1, and a number that is not finite (which the call rules
 * refuse, naming its field: the exact path finds it). Such a call takes the
 * exact path: decoded and re-encoded by the generated code.
 * `invalidText` is the first text found that is not valid UTF-8 (the decoder
 * would replace it with U+FFFD): such a call is refused, naming the text.
 */
export interface WalkNotes {
  irregular: boolean;
  invalidText: InvalidTextPlace | undefined;
}

/**
 * Where the first text that is not UTF-8 lies. The walk finds it in a leaf and learns its path
 * while it returns: each entry puts its key in front, each list its index, the caller the field's
 * own key. Made only when such text is found, so a regular walk allocates nothing for it.
 */
export class InvalidTextPlace {
  /** The path's keys and list indices, outermost first. */
  readonly path: string[] = [];
  /** @param key the text is a key of the object at `path` rather than a value at it */
  constructor(readonly key: boolean) {}

  /** The path as the call rules name fields ("properties.tags.1"). */
  get field(): string {
    return this.path.join(".");
  }

  /** "<field>: must be valid UTF-8", or "<object>: keys must be valid UTF-8". */
  get message(): string {
    return `${this.field}: ${this.key ? "keys " : ""}must be valid UTF-8`;
  }
}

/** Marks the walk as having met text that is not UTF-8 (the first such text is the one named). */
export function noteInvalidText(notes: WalkNotes, key: boolean): void {
  notes.irregular = true;
  notes.invalidText ??= new InvalidTextPlace(key);
}

// Tags (field number << 3 | wire type) of google.protobuf.Struct, its map entry, Value and ListValue.

/**
 * Checks that reader.buf[reader.pos, end) is well-formed google.protobuf.Struct
 * wire data at nesting `level`, without building anything, and returns the
 * size of its JSON (see json-size.ts). Throws MalformedWireError otherwise.
 * Recursion is bounded by MAX_MESSAGE_LEVEL. Leaves reader.pos at `end`.
 */
export function walkStruct(reader: WireReader, end: number, level: number, notes: WalkNotes): number {
  const size = structSize(reader, reader.pos, end, level, notes);
  reader.pos = end;
  return size;
}

/*
 * The walk keeps its cursor in a local variable and reads the common case
 * straight from the buffer: one-byte tags and one-byte lengths, which is every
 * entry, key and value under 128 bytes. Anything else (a longer length, an
 * unknown or multi-byte tag) is handed to the WireReader, which checks every
 * rule. A field of a known number whose tag is written in more bytes than it
 * needs is therefore treated as unknown: the call becomes irregular and takes
 * the exact path, which is slower but right. Every message inside a Struct is
 * length-delimited, so each function is given the exact [start, end) of its
 * message.
 */

/**
 * Where the value of the length-delimited field whose tag ends before `pos`
 * starts: set by delimitedValueEnd, which returns where it ends. (Two results
 * without allocating: this runs for every key and value of every call.)
 */
let delimitedValueStart = 0;

/** Reads the length at `pos` and returns where the value after it ends; sets delimitedValueStart. Throws when it runs past `end`. */
function delimitedValueEnd(reader: WireReader, pos: number, end: number): number {
  if (pos < end) {
    const length = reader.buf[pos]!;
    if (length < 0x80) {
      delimitedValueStart = pos + 1;
      if (length > end - delimitedValueStart) throw new MalformedWireError("length runs past the end of the message");
      return delimitedValueStart + length;
    }
  }
  reader.pos = pos;
  const valueEnd = reader.delimitedEnd(end);
  delimitedValueStart = reader.pos;
  return valueEnd;
}

function structSize(reader: WireReader, start: number, end: number, level: number, notes: WalkNotes): number {
  const buf = reader.buf;
  let pos = start;
  let members = 0;
  let membersSize = 0;
  while (pos < end) {
    if (buf[pos] !== STRUCT_FIELDS) {
      pos = skipOther(reader, pos, end, notes);
      continue;
    }
    const entryEnd = delimitedValueEnd(reader, pos + 1, end);
    const entryStart = delimitedValueStart;
    enterMessage(level + 1);
    const leafSize = level + 2 <= MAX_MESSAGE_LEVEL ? leafEntrySize(buf, entryStart, entryEnd) : NOT_A_LEAF;
    membersSize += leafSize !== NOT_A_LEAF ? leafSize : entrySize(reader, entryStart, entryEnd, level + 1, notes);
    members++;
    pos = entryEnd;
  }
  return containerSize(members, membersSize);
}

/** leafEntrySize's answer for an entry it leaves to entrySize. */
const NOT_A_LEAF = -1;

/**
 * The JSON size of a map entry in the layout nearly every entry has, or
 * NOT_A_LEAF: a key and then a Value holding a string, number, bool or null,
 * each in its canonical encoding with one-byte lengths, and nothing else. Such
 * an entry is measured here without a call per field; every other entry (a
 * nested Struct or list, longer text, anything irregular or malformed) goes
 * to entrySize, which reads it from the start again and applies every rule.
 */
function leafEntrySize(buf: Buffer, start: number, end: number): number {
  // Key: tag, one-byte length, text.
  if (end - start < 4 || buf[start] !== ENTRY_KEY) return NOT_A_LEAF;
  const keyLength = buf[start + 1]!;
  const keyStart = start + 2;
  const keyEnd = keyStart + keyLength;
  // Value: tag and one-byte length, which must close the entry exactly.
  if (keyLength >= 0x80 || keyEnd + 2 > end || buf[keyEnd] !== ENTRY_VALUE || keyEnd + 2 + buf[keyEnd + 1]! !== end) return NOT_A_LEAF;
  const kind = keyEnd + 2;
  let valueSize: number;
  switch (buf[kind]) {
    case VALUE_STRING: {
      const length = buf[kind + 1]!;
      if (kind + 2 + length !== end) return NOT_A_LEAF;
      valueSize = jsonStringSize(buf, kind + 2, end);
      break;
    }
    case VALUE_NUMBER: {
      if (kind + 9 !== end) return NOT_A_LEAF;
      const number = buf.readDoubleLE(kind + 1);
      // NaN and ±Infinity are refused by the call rules: entrySize marks the call for the exact path.
      if (!Number.isFinite(number)) return NOT_A_LEAF;
      valueSize = jsonNumberSize(number);
      break;
    }
    case VALUE_BOOL:
      if (kind + 2 !== end || buf[kind + 1]! > 1) return NOT_A_LEAF;
      valueSize = buf[kind + 1] === 1 ? TRUE_JSON_SIZE : FALSE_JSON_SIZE;
      break;
    case VALUE_NULL:
      if (kind + 2 !== end || buf[kind + 1] !== 0) return NOT_A_LEAF;
      valueSize = NULL_JSON_SIZE;
      break;
    default:
      return NOT_A_LEAF;
  }
  const keySize = jsonStringSize(buf, keyStart, keyEnd);
  if (valueSize === INVALID_UTF8 || keySize === INVALID_UTF8) return NOT_A_LEAF;
  return memberSize(keySize, valueSize);
}

/** Skips the field at `pos` with the reader, which refuses a malformed one; marks the walk irregular. Returns where the field ends. */
function skipOther(reader: WireReader, pos: number, end: number, notes: WalkNotes): number {
  reader.pos = pos;
  const tag = reader.tag(end);
  notes.irregular = true;
  reader.skipField(tag, end);
  return reader.pos;
}

/** One map entry of a Struct: `"key":value`. */
function entrySize(reader: WireReader, start: number, end: number, level: number, notes: WalkNotes): number {
  const buf = reader.buf;
  const noted = notes.invalidText;
  let pos = start;
  let keySize = 2; // an absent key is the empty string
  let keyStart = 0;
  let keyEnd = 0;
  let valueSize = -1;
  let ownKeyInvalid = false;
  while (pos < end) {
    const tag = buf[pos];
    if (tag === ENTRY_KEY) {
      keyEnd = delimitedValueEnd(reader, pos + 1, end);
      keyStart = delimitedValueStart;
      keySize = jsonStringSize(buf, keyStart, keyEnd);
      if (keySize === INVALID_UTF8) {
        if (notes.invalidText === noted) ownKeyInvalid = true;
        noteInvalidText(notes, true);
        keySize = 0;
      }
      pos = keyEnd;
    } else if (tag === ENTRY_VALUE) {
      if (valueSize >= 0) notes.irregular = true;
      const valueEnd = delimitedValueEnd(reader, pos + 1, end);
      enterMessage(level + 1);
      valueSize = valueJsonSize(reader, delimitedValueStart, valueEnd, level + 1, notes);
      pos = valueEnd;
    } else pos = skipOther(reader, pos, end, notes);
  }
  // Text found in this entry's value lies at its key (the last, which the decoder keeps); its own key lies at the object.
  if (notes.invalidText !== noted && !ownKeyInvalid) notes.invalidText!.path.unshift(decodeText(buf, keyStart, keyEnd));
  if (valueSize < 0) {
    notes.irregular = true;
    valueSize = 0;
  }
  return memberSize(keySize, valueSize);
}

/** A google.protobuf.Value: exactly one of null, number, string, bool, struct or list. */
function valueJsonSize(reader: WireReader, start: number, end: number, level: number, notes: WalkNotes): number {
  const buf = reader.buf;
  let pos = start;
  let kinds = 0;
  let size = 0;
  while (pos < end) {
    const tag = buf[pos]!;
    kinds++;
    switch (tag) {
      case VALUE_STRING: {
        const stringEnd = delimitedValueEnd(reader, pos + 1, end);
        size = jsonStringSize(buf, delimitedValueStart, stringEnd);
        if (size === INVALID_UTF8) noteInvalidText(notes, false);
        pos = stringEnd;
        break;
      }
      case VALUE_NUMBER: {
        if (end - pos < 9) throw new MalformedWireError("field runs past the end of the message");
        const number = buf.readDoubleLE(pos + 1);
        if (!Number.isFinite(number)) notes.irregular = true;
        size = jsonNumberSize(number);
        pos += 9;
        break;
      }
      case VALUE_NULL:
      case VALUE_BOOL: {
        reader.pos = pos + 1;
        if (!reader.skipVarint(end)) notes.irregular = true;
        const last = buf[reader.pos - 1];
        size = tag === VALUE_NULL ? NULL_JSON_SIZE : last === 1 ? TRUE_JSON_SIZE : FALSE_JSON_SIZE;
        if (tag === VALUE_NULL && last !== 0) notes.irregular = true;
        pos = reader.pos;
        break;
      }
      case VALUE_STRUCT: {
        const structEnd = delimitedValueEnd(reader, pos + 1, end);
        enterMessage(level + 1);
        size = structSize(reader, delimitedValueStart, structEnd, level + 1, notes);
        pos = structEnd;
        break;
      }
      case VALUE_LIST: {
        const listEnd = delimitedValueEnd(reader, pos + 1, end);
        enterMessage(level + 1);
        size = listSize(reader, delimitedValueStart, listEnd, level + 1, notes);
        pos = listEnd;
        break;
      }
      default:
        kinds--;
        pos = skipOther(reader, pos, end, notes);
    }
  }
  if (kinds !== 1) notes.irregular = true;
  return size;
}

/** A google.protobuf.ListValue: `[value,value,...]`. */
function listSize(reader: WireReader, start: number, end: number, level: number, notes: WalkNotes): number {
  const buf = reader.buf;
  let pos = start;
  let members = 0;
  let membersSize = 0;
  while (pos < end) {
    if (buf[pos] !== LIST_VALUES) {
      pos = skipOther(reader, pos, end, notes);
      continue;
    }
    const valueEnd = delimitedValueEnd(reader, pos + 1, end);
    enterMessage(level + 1);
    const noted = notes.invalidText;
    membersSize += valueJsonSize(reader, delimitedValueStart, valueEnd, level + 1, notes);
    if (notes.invalidText !== noted) notes.invalidText!.path.unshift(String(members));
    members++;
    pos = valueEnd;
  }
  return containerSize(members, membersSize);
}
