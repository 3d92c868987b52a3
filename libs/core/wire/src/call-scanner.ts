import { COMMON_FIELDS, isoTextLength, protoCallToJson, ScannedText } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import { CALL_STRUCTS, CALL_TEXTS, MAX_PAYLOAD_TEXTS, PAYLOADS, type PayloadCase } from "./call-shape.js";
import { INVALID_UTF8, JsonObjectSize, jsonStringSize } from "./json-size.js";
import { enterMessage, InvalidTextPlace, walkStruct, type WalkNotes } from "./struct-walker.js";
import { decodeText, WireReader } from "./reader.js";
import { lengthTag, TIMESTAMP_NANOS, TIMESTAMP_SECONDS } from "./tags.js";

/**
 * Reads a switchyard.v1.Call from its protobuf bytes in one pass, for the gRPC
 * fast path: the payload kind, where each text field's bytes are, the
 * timestamps, integrations fully (its values have rules); the free-form
 * Structs (context, traits, properties) are only checked to be well-formed and
 * measured, never decoded. Of the text fields only messageId is decoded (the
 * response carries it); the others are measured where they lie. Anything that
 * is not valid wire data throws MalformedWireError.
 */
export interface ScannedCall {
  /** The call's bytes, as the client sent them. */
  readonly bytes: Buffer;
  /** The payload's kind; undefined when the call has none. */
  readonly type: PayloadCase | undefined;
  /** The client's messageId; "" when it sent none (proto3: empty means not set). */
  readonly messageId: string;
  /** The client's timestamp, as the generated code converts it. */
  readonly timestamp: Date | undefined;
  /** integrations, decoded in full by the generated decoder (small, and its values have rules). */
  readonly integrations: Call["integrations"];
  /**
   * UTF-8 bytes of a text field (0 when unset); PAYLOAD_TEXT_0 is the
   * payload's first text field (event, name, groupId or previousId),
   * PAYLOAD_TEXT_1 its second (category).
   */
  textBytes(field: TextFieldId): number;
  /** A text field decoded exactly as the generated decoder decodes it; "" when unset. */
  text(field: TextFieldId): string;
  /**
   * The call as the generated decoder would return it, except that its
   * free-form Structs are `{}` placeholders (present or absent like the real
   * ones): every rule about them is "is an object", which the walk already
   * guarantees. Built on demand (the rules' slow path, tests).
   */
  readonly outline: Call;
  /** The outline in Segment JSON shape, what the call rules check; built on demand. */
  readonly json: Record<string, unknown>;
  /** An upper bound of the call's JSON size (see json-size.ts). */
  readonly jsonSizeBound: number;
  /**
   * The byte ranges to copy to the bus, as [start, end) pairs: every field but
   * timestamp and received_at (ingest writes both) and unknown fields (which
   * the decoder would drop).
   */
  readonly keptRanges: readonly number[];
  /** The bytes must not be passed through (see WalkNotes); decode and re-encode the call instead. */
  readonly irregular: boolean;
  /**
   * The first text field, key or string value that is not valid UTF-8 (a messageId that is not
   * comes first, so a refusal never quotes it); undefined when all text is. Such a call is refused.
   */
  readonly invalidText: InvalidTextPlace | undefined;
}

export type { PayloadCase } from "./call-shape.js";

/** The text fields of a Call: its own (the Call model's, in its order), then the payload's by position (PAYLOAD_TEXT_0 + index). */
export const TextFieldId = ScannedText;
export type TextFieldId = ScannedText;
const TEXT_FIELDS = TextFieldId.PAYLOAD_TEXT_0 + MAX_PAYLOAD_TEXTS;
/**
 * What each scan's slots start as: every text range absent ([start, end) pairs by TextFieldId),
 * then every own Struct's JSON size absent (by CALL_STRUCTS index). Built by push and copied with
 * slice(), so it stays a packed array: one allocation a call.
 */
const NO_SLOTS: number[] = [];
for (let slot = 0; slot < 2 * TEXT_FIELDS + CALL_STRUCTS.length; slot++) NO_SLOTS.push(-1);
const FIRST_STRUCT_SLOT = 2 * TEXT_FIELDS;

/** What the scan does with each of the Call's own fields (the Call model's), by tag. */
const Own = { NONE: 0, TEXT: 1, STRUCT: 2, INTEGRATIONS: 3, TIMESTAMP: 4, INGEST_TIMESTAMP: 5, OTHER_TIMESTAMP: 6 } as const;
const OWN_TAGS = Math.max(...COMMON_FIELDS.map((field) => field.tag)) + 1;
const OWN_ACTION = new Uint8Array(OWN_TAGS);
/** The field's TextFieldId, or its CALL_STRUCTS index. */
const OWN_SLOT = new Uint8Array(OWN_TAGS);
for (const field of COMMON_FIELDS) {
  if (field.rule === "set_by_ingest") OWN_ACTION[field.tag] = field.kind === "timestamp" ? Own.INGEST_TIMESTAMP : Own.NONE;
  else if (field.kind === "text") {
    OWN_ACTION[field.tag] = Own.TEXT;
    OWN_SLOT[field.tag] = CALL_TEXTS.findIndex((text) => text.key === field.key);
  } else if (field.kind === "struct") {
    OWN_ACTION[field.tag] = field.rule === "integrations" ? Own.INTEGRATIONS : Own.STRUCT;
    OWN_SLOT[field.tag] = CALL_STRUCTS.findIndex((struct) => struct.key === field.key);
  } else OWN_ACTION[field.tag] = field.key === "timestamp" ? Own.TIMESTAMP : Own.OTHER_TIMESTAMP;
}
/** The integrations Struct's CALL_STRUCTS index. */
const INTEGRATIONS_SLOT = CALL_STRUCTS.findIndex((struct) => struct.key === "integrations");

/**
 * The fields of one payload message, as the scan compares them: its text
 * fields and its Struct, each by tag and by property name in the generated
 * type (which is also its JSON key).
 */
interface PayloadScanShape {
  readonly type: PayloadCase;
  readonly texts: readonly { readonly tag: number; readonly key: string }[];
  readonly structTag: number;
  readonly structKey: string;
}

/** The payload oneof of Call, by tag. */
const PAYLOAD_TAGS = new Map<number, PayloadScanShape>(
  PAYLOADS.map((shape) => [
    lengthTag(shape.field),
    {
      type: shape.type,
      texts: shape.texts.map(({ field, key }) => ({ tag: lengthTag(field), key })),
      structTag: shape.struct ? lengthTag(shape.struct.field) : -1,
      structKey: shape.struct?.key ?? "",
    },
  ]),
);

/** The Call's level, counted like the decoder counts it: inside IngestBatchRequest, IngestCallRequest or CallBatch. */
const CALL_LEVEL = 2;

/** The JSON keys of a Call's own text fields, by TextFieldId, and of its own Structs. */
const CALL_TEXT_KEYS = CALL_TEXTS.map((text) => text.key);
const CALL_STRUCT_KEYS = CALL_STRUCTS.map((struct) => struct.key);

/**
 * What one scan found. Plain numeric fields rather than an object per text
 * field or payload: ingest scans every call, and what it allocates per call
 * it pays for again in garbage collection.
 */
class CallScan implements ScannedCall, WalkNotes {
  irregular = false;
  invalidText: InvalidTextPlace | undefined = undefined;
  payload: PayloadScanShape | undefined = undefined;
  messageId = "";
  timestamp: Date | undefined = undefined;
  integrations: Call["integrations"] = undefined;
  jsonSizeBound = 0;
  /** JSON size of the payload's Struct; -1 when absent. */
  payloadStructSize = -1;
  readonly keptRanges: number[] = [];
  /**
   * [start, end) of each text field's last occurrence, by TextFieldId; then the JSON size of each
   * own Struct, from FIRST_STRUCT_SLOT by CALL_STRUCTS index. -1 when absent.
   */
  readonly slots: number[] = NO_SLOTS.slice();

  constructor(readonly bytes: Buffer) {}

  get type(): PayloadCase | undefined {
    return this.payload?.type;
  }

  textBytes(field: TextFieldId): number {
    const start = this.slots[2 * field]!;
    return start < 0 ? 0 : this.slots[2 * field + 1]! - start;
  }

  get outline(): Call {
    const payload = this.payload;
    let value: Record<string, unknown> | undefined;
    if (payload) {
      value = {};
      payload.texts.forEach(({ key }, index) => (value![key] = this.text(TextFieldId.PAYLOAD_TEXT_0 + index)));
      if (payload.structTag >= 0) value[payload.structKey] = this.payloadStructSize >= 0 ? {} : undefined;
    }
    const call: Record<string, unknown> = {};
    for (let index = 0; index < COMMON_FIELDS.length; index++) {
      const field = COMMON_FIELDS[index]!;
      const action = OWN_ACTION[field.tag];
      if (action === Own.TEXT) call[field.key] = this.text(OWN_SLOT[field.tag]!);
      else if (action === Own.STRUCT) call[field.key] = this.slots[FIRST_STRUCT_SLOT + OWN_SLOT[field.tag]!]! >= 0 ? {} : undefined;
      else call[field.key] = undefined;
    }
    call.timestamp = this.timestamp;
    call.integrations = this.integrations;
    call.payload = payload && ({ $case: payload.type, value } as Call["payload"]);
    return call as unknown as Call;
  }

  get json(): Record<string, unknown> {
    return protoCallToJson(this.outline);
  }

  text(field: number): string {
    const start = this.slots[2 * field]!;
    return start < 0 ? "" : decodeText(this.bytes, start, this.slots[2 * field + 1]!);
  }

  /** Measures a text field as JSON, for the members protoCallToJson writes; marks text that is not UTF-8 (invalidText). */
  textJsonSize(field: number): number {
    const start = this.slots[2 * field]!;
    if (start < 0) return 2;
    const size = jsonStringSize(this.bytes, start, this.slots[2 * field + 1]!);
    if (size !== INVALID_UTF8) return size;
    this.irregular = true;
    if (this.invalidText === undefined || field === TextFieldId.MESSAGE_ID) {
      this.invalidText = new InvalidTextPlace(false);
      this.invalidText.path.push(this.textKey(field));
    }
    return 0;
  }

  /** A text field's JSON key: the Call's own, or the current payload's. */
  private textKey(field: number): string {
    return field < TextFieldId.PAYLOAD_TEXT_0 ? CALL_TEXT_KEYS[field]! : this.payload!.texts[field - TextFieldId.PAYLOAD_TEXT_0]!.key;
  }
}

export function scanCall(bytes: Buffer): ScannedCall {
  const scan = new CallScan(bytes);
  const reader = new WireReader(bytes);
  const end = bytes.length;
  const keptRanges = scan.keptRanges;
  let integrationsStart = -1;

  while (reader.pos < end) {
    const fieldStart = reader.pos;
    const tag = reader.tag(end);
    let kept = true;
    const action = tag < OWN_TAGS ? OWN_ACTION[tag]! : Own.NONE;
    if (action === Own.TEXT) readTextRange(reader, end, scan, OWN_SLOT[tag]!);
    else if (action === Own.STRUCT) {
      const slot = FIRST_STRUCT_SLOT + OWN_SLOT[tag]!;
      if (scan.slots[slot]! >= 0) scan.irregular = true;
      scan.slots[slot] = readStruct(reader, end, CALL_LEVEL + 1, scan, CALL_STRUCT_KEYS[OWN_SLOT[tag]!]!);
    } else if (action === Own.INTEGRATIONS) {
      if (integrationsStart >= 0) scan.irregular = true;
      integrationsStart = fieldStart;
      scan.slots[FIRST_STRUCT_SLOT + INTEGRATIONS_SLOT] = readStruct(
        reader,
        end,
        CALL_LEVEL + 1,
        scan,
        CALL_STRUCT_KEYS[INTEGRATIONS_SLOT]!,
      );
      // Small, and its values have rules: decoded in full, by the generated decoder (the field alone is a valid Call).
      scan.integrations = Call.decode(bytes.subarray(fieldStart, reader.pos)).integrations;
    } else if (action === Own.TIMESTAMP) {
      // The decoder keeps the last timestamp; ingest writes it back itself.
      scan.timestamp = readTimestamp(reader, end, CALL_LEVEL + 1);
      kept = false;
    } else if (action === Own.INGEST_TIMESTAMP) {
      // Set by ingest; a client's is checked like the decoder would, then dropped.
      readTimestamp(reader, end, CALL_LEVEL + 1);
      kept = false;
    } else if (action === Own.OTHER_TIMESTAMP) {
      // A Timestamp the quick rules do not know: checked, and the call takes the exact path.
      readTimestamp(reader, end, CALL_LEVEL + 1);
      scan.irregular = true;
    } else {
      const shape = PAYLOAD_TAGS.get(tag);
      if (shape) {
        if (scan.payload) scan.irregular = true;
        scanPayload(reader, end, shape, CALL_LEVEL + 1, scan);
      } else {
        // Unknown field, or a known one with the wrong wire type: the decoder skips both.
        reader.skipField(tag, end);
        kept = false;
      }
    }
    if (kept) keepRange(keptRanges, fieldStart, reader.pos);
  }

  const messageIdStart = scan.slots[2 * TextFieldId.MESSAGE_ID]!;
  if (messageIdStart >= 0) scan.messageId = decodeText(bytes, messageIdStart, scan.slots[2 * TextFieldId.MESSAGE_ID + 1]!);
  scan.jsonSizeBound = jsonSizeOf(scan);
  return scan;
}

/**
 * The JSON size of the members protoCallToJson writes: the type, non-empty
 * texts, the timestamp's ISO text, present Structs. Measuring a text also
 * finds text that is not UTF-8, which makes the call irregular.
 */
function jsonSizeOf(scan: CallScan): number {
  const size = new JsonObjectSize();
  const payload = scan.payload;
  if (payload) size.add("type", payload.type.length + 2);
  for (let field = 0; field < CALL_TEXT_KEYS.length; field++) {
    const jsonSize = scan.textJsonSize(field);
    if (scan.textBytes(field as TextFieldId) > 0) size.add(CALL_TEXT_KEYS[field]!, jsonSize);
  }
  if (scan.timestamp) size.add("timestamp", isoTextLength(scan.timestamp) + 2);
  for (let index = 0; index < CALL_STRUCT_KEYS.length; index++) {
    const structSize = scan.slots[FIRST_STRUCT_SLOT + index]!;
    if (structSize >= 0) size.add(CALL_STRUCT_KEYS[index]!, structSize);
  }
  if (payload) {
    for (let index = 0; index < payload.texts.length; index++) {
      const field = (TextFieldId.PAYLOAD_TEXT_0 + index) as TextFieldId;
      const jsonSize = scan.textJsonSize(field);
      if (scan.textBytes(field) > 0) size.add(payload.texts[index]!.key, jsonSize);
    }
    if (scan.payloadStructSize >= 0) size.add(payload.structKey, scan.payloadStructSize);
  }
  return size.total;
}

/** A payload message: its text fields' ranges and its Struct, checked and measured. The last payload wins, as in the decoder. */
function scanPayload(reader: WireReader, callEnd: number, shape: PayloadScanShape, level: number, scan: CallScan): void {
  const end = reader.delimitedEnd(callEnd);
  enterMessage(level);
  // An earlier payload's texts are dropped, but the decoder reads them too: they must be UTF-8 as well.
  if (scan.payload) for (let field = TextFieldId.PAYLOAD_TEXT_0; field < TEXT_FIELDS; field++) scan.textJsonSize(field);
  scan.payload = shape;
  scan.payloadStructSize = -1;
  const ranges = scan.slots;
  for (let slot = 2 * TextFieldId.PAYLOAD_TEXT_0; slot < 2 * TEXT_FIELDS; slot++) ranges[slot] = -1;
  // At most a few text fields a payload: a lookup by position is all it needs.
  const texts = shape.texts;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    let text = 0;
    while (text < texts.length && texts[text]!.tag !== tag) text++;
    if (text < texts.length) readTextRange(reader, end, scan, (TextFieldId.PAYLOAD_TEXT_0 + text) as TextFieldId);
    else if (tag === shape.structTag) {
      if (scan.payloadStructSize >= 0) scan.irregular = true;
      scan.payloadStructSize = readStruct(reader, end, level + 1, scan, shape.structKey);
    } else {
      scan.irregular = true;
      reader.skipField(tag, end);
    }
  }
}

/** A length-delimited Struct field, whose JSON key is `key`: checked and measured. */
function readStruct(reader: WireReader, end: number, level: number, notes: WalkNotes, key: string): number {
  const structEnd = reader.delimitedEnd(end);
  enterMessage(level);
  const noted = notes.invalidText;
  const size = walkStruct(reader, structEnd, level, notes);
  if (notes.invalidText !== noted) notes.invalidText!.path.unshift(key);
  return size;
}

/** A google.protobuf.Timestamp, converted to a Date exactly as the generated code converts it. */
function readTimestamp(reader: WireReader, callEnd: number, level: number): Date {
  const end = reader.delimitedEnd(callEnd);
  enterMessage(level);
  let seconds = 0;
  let nanos = 0;
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag === TIMESTAMP_SECONDS) seconds = reader.int64(end);
    else if (tag === TIMESTAMP_NANOS) nanos = reader.int32(end);
    else reader.skipField(tag, end);
  }
  let millis = seconds * 1_000;
  millis += nanos / 1_000_000;
  return new Date(millis);
}

/** Records where a text field's bytes are; the last occurrence wins, as in the decoder. */
function readTextRange(reader: WireReader, end: number, scan: CallScan, field: TextFieldId): void {
  const length = reader.length(end);
  // An earlier occurrence is replaced, but the decoder reads it too: it must be UTF-8 as well (jsonSizeOf checks the last).
  if (scan.slots[2 * field]! >= 0) scan.textJsonSize(field);
  scan.slots[2 * field] = reader.pos;
  reader.pos += length;
  scan.slots[2 * field + 1] = reader.pos;
}

/** Adds [start, end) to the ranges, merging it with the previous one when they touch. */
function keepRange(ranges: number[], start: number, end: number): void {
  if (ranges.length > 0 && ranges[ranges.length - 1] === start) ranges[ranges.length - 1] = end;
  else ranges.push(start, end);
}
