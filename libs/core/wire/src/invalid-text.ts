import { isUtf8 } from "node:buffer";
import { CALL_STRUCTS, CALL_TEXTS, PAYLOADS, type PayloadShape } from "./call-shape.js";
import { decodeText, WireReader } from "./reader.js";
import { ENTRY_KEY, ENTRY_VALUE, lengthTag, LIST_VALUES, STRUCT_FIELDS, VALUE_LIST, VALUE_STRING, VALUE_STRUCT } from "./tags.js";

/**
 * Where a Call's text is not valid UTF-8. Protobuf `string` fields must be
 * UTF-8; the generated decoder would replace broken bytes with U+FFFD and the
 * call would be stored altered, so such a call is refused instead, naming the
 * field. Only run for a call whose scan found such text (ScannedCall.invalidText),
 * so it may be plain and allocate: the bytes are known to be well-formed.
 */
export interface InvalidText {
  /** JSON path of the field, as the call rules name fields ("properties.name", "context" for a key). */
  field: string;
  /** "<field>: must be valid UTF-8", or "<object>: keys must be valid UTF-8". */
  message: string;
}

/** The Call's own text fields and Structs, by tag. */
const CALL_TEXT_TAGS = new Map(CALL_TEXTS.map(({ field, key }) => [lengthTag(field), key]));
const CALL_STRUCT_TAGS = new Map(CALL_STRUCTS.map(({ field, key }) => [lengthTag(field), key]));
/** Each payload's text fields and Struct, by tag inside the payload message; the payloads by their tag in Call. */
const PAYLOAD_FIELDS = new Map(PAYLOADS.map((shape) => [lengthTag(shape.field), payloadFields(shape)]));

function payloadFields(shape: PayloadShape): Map<number, { key: string; struct: boolean }> {
  const fields = new Map(shape.texts.map(({ field, key }) => [lengthTag(field), { key, struct: false }]));
  if (shape.struct) fields.set(lengthTag(shape.struct.field), { key: shape.struct.key, struct: true });
  return fields;
}

// google.protobuf.Struct, its map entry, Value and ListValue.

/** The first text in the Call's bytes that is not valid UTF-8, in the order of the bytes; undefined when all is. */
export function invalidTextIn(bytes: Buffer): InvalidText | undefined {
  const reader = new WireReader(bytes);
  const end = bytes.length;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    const text = CALL_TEXT_TAGS.get(tag);
    const struct = CALL_STRUCT_TAGS.get(tag);
    const payload = PAYLOAD_FIELDS.get(tag);
    let problem: InvalidText | undefined;
    if (text !== undefined) problem = textProblem(reader, end, text);
    else if (struct !== undefined) problem = structProblem(reader, reader.delimitedEnd(end), struct);
    else if (payload !== undefined) problem = payloadProblem(reader, reader.delimitedEnd(end), payload);
    else reader.skipField(tag, end);
    if (problem) return problem;
  }
  return undefined;
}

function payloadProblem(reader: WireReader, end: number, shape: Map<number, { key: string; struct: boolean }>): InvalidText | undefined {
  while (reader.pos < end) {
    const tag = reader.tag(end);
    const field = shape.get(tag);
    let problem: InvalidText | undefined;
    if (field === undefined) reader.skipField(tag, end);
    else if (field.struct) problem = structProblem(reader, reader.delimitedEnd(end), field.key);
    else problem = textProblem(reader, end, field.key);
    if (problem) return problem;
  }
  return undefined;
}

function textProblem(reader: WireReader, end: number, path: string): InvalidText | undefined {
  const length = reader.length(end);
  const start = reader.pos;
  reader.pos += length;
  return isUtf8(reader.buf.subarray(start, reader.pos)) ? undefined : { field: path, message: `${path}: must be valid UTF-8` };
}

function structProblem(reader: WireReader, end: number, path: string): InvalidText | undefined {
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag !== STRUCT_FIELDS) {
      reader.skipField(tag, end);
      continue;
    }
    const entryEnd = reader.delimitedEnd(end);
    // The value may come before the key: its path is known only at the entry's end.
    let key = "";
    const values: number[] = [];
    while (reader.pos < entryEnd) {
      const entryTag = reader.tag(entryEnd);
      if (entryTag === ENTRY_KEY) {
        const length = reader.length(entryEnd);
        const start = reader.pos;
        reader.pos += length;
        if (!isUtf8(reader.buf.subarray(start, reader.pos))) return { field: path, message: `${path}: keys must be valid UTF-8` };
        key = decodeText(reader.buf, start, reader.pos);
      } else if (entryTag === ENTRY_VALUE) {
        const valueEnd = reader.delimitedEnd(entryEnd);
        values.push(reader.pos, valueEnd);
        reader.pos = valueEnd;
      } else reader.skipField(entryTag, entryEnd);
    }
    for (let index = 0; index < values.length; index += 2) {
      reader.pos = values[index]!;
      const problem = valueProblem(reader, values[index + 1]!, `${path}.${key}`);
      if (problem) return problem;
    }
    reader.pos = entryEnd;
  }
  return undefined;
}

function valueProblem(reader: WireReader, end: number, path: string): InvalidText | undefined {
  while (reader.pos < end) {
    const tag = reader.tag(end);
    let problem: InvalidText | undefined;
    if (tag === VALUE_STRING) problem = textProblem(reader, end, path);
    else if (tag === VALUE_STRUCT) problem = structProblem(reader, reader.delimitedEnd(end), path);
    else if (tag === VALUE_LIST) problem = listProblem(reader, reader.delimitedEnd(end), path);
    else reader.skipField(tag, end);
    if (problem) return problem;
  }
  return undefined;
}

function listProblem(reader: WireReader, end: number, path: string): InvalidText | undefined {
  let index = 0;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag !== LIST_VALUES) {
      reader.skipField(tag, end);
      continue;
    }
    const problem = valueProblem(reader, reader.delimitedEnd(end), `${path}.${index++}`);
    if (problem) return problem;
  }
  return undefined;
}
