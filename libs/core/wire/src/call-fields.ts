import { FILTER_FIELD_NAMES, FILTER_OBJECT_NAMES } from "@switchyard/calls";
import { CallField } from "@switchyard/contracts";
import { CALL_TEXTS, PAYLOADS, type PayloadCase } from "./call-shape.js";
import { decodeText, UNUSUAL, WireReader } from "./reader.js";
import { entry, nextListValue, nextStructEntry, readValueKind, value } from "./struct-entries.js";
import { VALUE_BOOL, VALUE_LIST, VALUE_NULL, VALUE_NUMBER, VALUE_STRING, VALUE_STRUCT } from "./tags.js";
import { BODY_MEMBERS } from "./webhook-body/body-members.js";

/*
 * Finds one field of a switchyard.v1.Call in its bytes, named by a path as the webhook body
 * spells it ("type", "event", "userId", "properties.revenue", "context.app.version", ...), and
 * tells what JSON value the body has there, without decoding the call or writing its body: the
 * test a destination filter applies to every call (delivery compiles filters over it). A
 * property test holds it equal to looking the path up in the body of the decoded call.
 *
 * What is present is what the body shows (webhook-body/body-members.ts): an empty `userId`,
 * `anonymousId` or page `name` is absent, as the body leaves them out, while `messageId`, `event`,
 * `groupId` and a screen's `name` are there even when empty; `properties` (track, page) and
 * `traits` (identify, group) are objects, empty when the call has none, while a screen's
 * properties are not in the body at all. An alias's "User ID" and "Previous ID" are found as
 * `userId` and `previousId`. A text field of the call's own that the body leaves out (one added
 * to calls.proto) is present when set. A call without a payload has no body: nothing is present. Keys name
 * members of objects only: a path through an array, a string or a number finds nothing. Numbers
 * that are not finite are null, as the body writes them.
 *
 * Reads are the plain reads of WireReader: bytes in an encoding they leave to the decoder throw
 * UNUSUAL, and the caller then looks at the call's canonical encoding instead.
 */

/** The kind of JSON value a path finds; ABSENT: the body has nothing there. */
export const FieldKind = { ABSENT: 0, NULL: 1, BOOLEAN: 2, NUMBER: 3, STRING: 4, OBJECT: 5, ARRAY: 6 } as const;
export type FieldKind = (typeof FieldKind)[keyof typeof FieldKind];

/** A path into a call, resolved once: where it starts, and the keys of the objects below. */
export interface CallPath {
  readonly text: string;
  /** Index of the first name in ROOTS. */
  readonly root: number;
  /** Each key below the first name, as UTF-8, with its text. */
  readonly keys: readonly { readonly bytes: Buffer; readonly text: string }[];
}

/** How the body shows one of a payload's (or the call's) fields. */
const Shown = { NOT: 0, TEXT: 1, TEXT_WHEN_SET: 2, OBJECT: 3, OBJECT_WHEN_SET: 4, TYPE: 5 } as const;
type Shown = (typeof Shown)[keyof typeof Shown];

interface Access {
  readonly shown: Shown;
  /** The field is the call's own (else its payload's). */
  readonly inCall: boolean;
  readonly field: number;
}
const NOT_SHOWN: Access = { shown: Shown.NOT, inCall: true, field: 0 };

/** Every first name a path can have (@switchyard/calls' filter paths), by property name. */
const ROOTS: string[] = [...new Set([...FILTER_FIELD_NAMES, ...FILTER_OBJECT_NAMES])];
const ROOT_INDEX = new Map(ROOTS.map((name, index) => [name, index]));
/** First names under which keys can follow. */
const OBJECT_ROOTS = new Set(FILTER_OBJECT_NAMES);

/** How each root is shown in the body of each payload, by the payload's field number in Call. */
const ACCESS: Access[][] = [];
for (const shape of PAYLOADS) {
  const access: Access[] = ROOTS.map(() => NOT_SHOWN);
  const set = (name: string, value: Access) => (access[ROOT_INDEX.get(name)!] = value);
  set("type", { shown: Shown.TYPE, inCall: true, field: 0 });
  // The call's own texts the body does not carry (a field added to calls.proto) are there when set.
  for (const text of CALL_TEXTS) set(text.key, { shown: Shown.TEXT_WHEN_SET, inCall: true, field: text.field });
  set("messageId", { shown: Shown.TEXT, inCall: true, field: CallField.MESSAGE_ID });
  set("anonymousId", { shown: Shown.TEXT_WHEN_SET, inCall: true, field: CallField.ANONYMOUS_ID });
  set("context", { shown: Shown.OBJECT_WHEN_SET, inCall: true, field: CallField.CONTEXT });
  for (const member of BODY_MEMBERS[shape.type]) {
    if ("userId" in member) {
      set("userId", { shown: member.userId === "always" ? Shown.TEXT : Shown.TEXT_WHEN_SET, inCall: true, field: CallField.USER_ID });
    } else if ("object" in member) {
      set(member.object, { shown: Shown.OBJECT, inCall: false, field: shape.struct!.field });
    } else {
      const text = shape.texts.find(({ key }) => key === member.text)!;
      set(member.text, { shown: member.onlyWhenSet ? Shown.TEXT_WHEN_SET : Shown.TEXT, inCall: false, field: text.field });
    }
  }
  ACCESS[shape.field] = access;
}
const PAYLOAD_TYPES: PayloadCase[] = [];
for (const shape of PAYLOADS) PAYLOAD_TYPES[shape.field] = shape.type;

/**
 * The path as a CallPath, or undefined when the body has no such name: a first name the body
 * shows for some call (see ROOTS), then, under "properties", "traits" or "context", keys
 * separated by dots, none empty.
 */
export function callPath(path: string): CallPath | undefined {
  const [first, ...keys] = path.split(".");
  const root = ROOT_INDEX.get(first!);
  if (root === undefined) return undefined;
  if (keys.length > 0 && (!OBJECT_ROOTS.has(first!) || keys.some((key) => key === ""))) return undefined;
  return { text: path, root, keys: keys.map((key) => ({ bytes: Buffer.from(key, "utf8"), text: key })) };
}

const highestField = (fields: Record<string, number>) => Math.max(0, ...Object.values(fields));
const PAYLOAD_FIELDS = PAYLOADS.map((shape) => shape.field);
const MAX_PAYLOAD_FIELD = Math.max(
  ...PAYLOADS.flatMap((shape) => [...shape.texts.map((text) => text.field), ...(shape.struct ? [shape.struct.field] : [0])]),
);

/**
 * Looks paths up in one call at a time: `read` a call's bytes, then `find` as many paths as
 * needed. The call's fields are located on the first `find`; what it found is in `kind` and the
 * fields below, valid until the next `find`. One instance is reused for every call.
 */
export class CallFieldFinder {
  /** What the last find found. */
  kind: FieldKind = FieldKind.ABSENT;
  /** BOOLEAN: its value. */
  boolean = false;
  /** NUMBER: its value (finite). */
  number = 0;
  /** STRING, OBJECT, ARRAY: where its bytes are (a string's UTF-8, a Struct's or ListValue's fields); -1 for a type. */
  start = 0;
  end = 0;
  /** STRING of a path that names the call's type: the type. */
  private typeName = "";

  private reader = new WireReader(new Uint8Array(0));
  private callStart = 0;
  private callEnd = 0;
  private located = false;
  /** The payload's field number in Call; 0: none. */
  private payload = 0;
  private readonly callFields = new Int32Array(2 * (highestField(CallField) + 1));
  private readonly payloadFields = new Int32Array(2 * (MAX_PAYLOAD_FIELD + 1));

  /** Takes the call at [start, end) of `bytes`: the next finds look in it. */
  read(bytes: Uint8Array, start = 0, end = bytes.length): void {
    // A batch's calls share its buffer, and with it one reader.
    if (this.reader.buf !== bytes) this.reader = new WireReader(bytes);
    this.callStart = start;
    this.callEnd = end;
    this.located = false;
  }

  /** Looks a path up in the call; returns (and sets) `kind`. */
  find(path: CallPath): FieldKind {
    if (!this.located) this.locate();
    this.kind = FieldKind.ABSENT;
    if (this.payload === 0) return this.kind;
    const access = ACCESS[this.payload]![path.root]!;
    const fields = access.inCall ? this.callFields : this.payloadFields;
    const fieldStart = fields[2 * access.field]!;
    const fieldEnd = fields[2 * access.field + 1]!;
    const shown = access.shown;
    if (shown === Shown.NOT) return this.kind;
    if (shown === Shown.TYPE) {
      if (path.keys.length > 0) return this.kind;
      this.typeName = PAYLOAD_TYPES[this.payload]!;
      this.start = this.end = -1;
      return (this.kind = FieldKind.STRING);
    }
    if (shown === Shown.TEXT || shown === Shown.TEXT_WHEN_SET) {
      // An unset text is "" in the body, or left out of it.
      if (path.keys.length > 0 || (shown === Shown.TEXT_WHEN_SET && fieldEnd <= fieldStart)) return this.kind;
      this.start = Math.max(fieldStart, 0);
      this.end = Math.max(fieldEnd, 0);
      return (this.kind = FieldKind.STRING);
    }
    // An object: {} in the body when unset, or left out of it.
    if (shown === Shown.OBJECT_WHEN_SET && fieldStart < 0) return this.kind;
    this.start = Math.max(fieldStart, 0);
    this.end = Math.max(fieldEnd, 0);
    this.kind = FieldKind.OBJECT;
    return this.descend(path);
  }

  /** The text of a STRING found. */
  text(): string {
    return this.start < 0 ? this.typeName : decodeText(this.reader.buf, this.start, this.end);
  }

  /** Whether the STRING found is exactly `text`, whose UTF-8 is `bytes`. */
  textIs(text: string, bytes: Uint8Array): boolean {
    return this.start < 0 ? this.typeName === text : this.textAt(this.start, this.end, text, bytes);
  }

  /** Whether the ARRAY found holds the string `text` (UTF-8 `bytes`). */
  arrayHoldsText(text: string, bytes: Uint8Array): boolean {
    const reader = this.reader;
    const listEnd = this.end;
    reader.pos = this.start;
    let found = false;
    for (let valueEnd = nextListValue(reader, listEnd); valueEnd >= 0; valueEnd = nextListValue(reader, listEnd)) {
      if (readValueKind(reader, reader.pos, valueEnd) === VALUE_STRING && this.textAt(value.start, value.end, text, bytes)) found = true;
      reader.pos = valueEnd;
    }
    return found;
  }

  /** Where the call's fields and its payload's are. */
  private locate(): void {
    const reader = this.reader;
    reader.pos = this.callStart;
    reader.fieldRanges(this.callEnd, this.callFields);
    this.payload = 0;
    for (const field of PAYLOAD_FIELDS) {
      if (this.callFields[2 * field]! < 0) continue;
      // Two payloads: the decoder keeps the last; left to it.
      if (this.payload !== 0) throw UNUSUAL;
      this.payload = field;
    }
    if (this.payload !== 0) {
      reader.pos = this.callFields[2 * this.payload]!;
      reader.fieldRanges(this.callFields[2 * this.payload + 1]!, this.payloadFields);
    }
    this.located = true;
  }

  /** From the OBJECT at [start, end), follows the path's keys. */
  private descend(path: CallPath): FieldKind {
    for (const key of path.keys) {
      if (this.kind !== FieldKind.OBJECT || !this.member(key.bytes, key.text)) return (this.kind = FieldKind.ABSENT);
    }
    return this.kind;
  }

  /**
   * In the Struct at [start, end), the member named by the key: the last entry with that key
   * and a value of some kind, as the decoder keeps it (it skips entries without one). Sets
   * what it found; false when there is no such member.
   */
  private member(key: Uint8Array, keyText: string): boolean {
    const reader = this.reader;
    const buf = reader.buf;
    let valueStart = -1;
    let valueEnd = -1;
    reader.pos = this.start;
    // The last entry with the key and a Value of some kind is the member, as the decoder keeps it.
    while (nextStructEntry(reader, this.end)) {
      const entryEnd = reader.pos;
      const found = entry;
      if (found.valueStart >= 0 && sameText(buf, found.keyStart, found.keyEnd, key, keyText)) {
        const start = found.valueStart;
        const end = found.valueEnd;
        if (readValueKind(reader, start, end) !== 0) {
          valueStart = start;
          valueEnd = end;
        }
      }
      reader.pos = entryEnd;
    }
    if (valueStart < 0) return false;
    this.value(valueStart, valueEnd);
    return true;
  }

  /** Sets `kind` and the fields below from the google.protobuf.Value at [start, end), which has a kind. */
  private value(start: number, end: number): void {
    switch (readValueKind(this.reader, start, end)) {
      case VALUE_NULL:
        this.kind = FieldKind.NULL;
        return;
      case VALUE_BOOL:
        this.kind = FieldKind.BOOLEAN;
        this.boolean = value.flag;
        return;
      case VALUE_NUMBER: {
        const number = this.reader.double(value.start);
        // The body writes NaN and the infinities as null.
        if (Number.isFinite(number)) {
          this.kind = FieldKind.NUMBER;
          this.number = number;
        } else this.kind = FieldKind.NULL;
        return;
      }
      case VALUE_STRING:
        this.kind = FieldKind.STRING;
        break;
      case VALUE_STRUCT:
        this.kind = FieldKind.OBJECT;
        break;
      case VALUE_LIST:
        this.kind = FieldKind.ARRAY;
        break;
    }
    this.start = value.start;
    this.end = value.end;
  }

  /** Whether the UTF-8 at [start, end) of the call's bytes reads as `text` (whose UTF-8 is `bytes`). */
  private textAt(start: number, end: number, text: string, bytes: Uint8Array): boolean {
    return sameText(this.reader.buf, start, end, bytes, text);
  }
}

/** Whether the UTF-8 at [start, end) of `buf` (start -1: none, the empty string) reads as `text`, whose UTF-8 is `bytes`. */
function sameText(buf: Buffer, start: number, end: number, bytes: Uint8Array, text: string): boolean {
  if (start < 0) return bytes.length === 0;
  const length = end - start;
  if (length === bytes.length) {
    let same = true;
    for (let i = 0; i < length && same; i++) same = buf[start + i] === bytes[i];
    if (same) return true;
  }
  // Bytes that are not UTF-8 read as U+FFFD, which `bytes` then cannot match as they are.
  return text.includes("\uFFFD") && decodeText(buf, start, end) === text;
}
