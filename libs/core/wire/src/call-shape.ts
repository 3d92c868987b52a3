import {
  callPayloadField,
  CLIENT_FIELDS,
  PAYLOAD_RULES,
  payloadFieldNumber,
  payloadTextsOf,
  type CallKind,
  type PayloadCase,
  type PayloadRule,
} from "@switchyard/calls";

/**
 * The shape of a switchyard.v1.Call as the hand-written wire code needs it:
 * which fields are text and which are free-form Structs, by generated field
 * number and by property name in the generated type (which is also the JSON
 * key). The call scan, the UTF-8 check, the batch decoder and the client's
 * encoder all read their fields from here. The payloads' fields are not
 * listed here but derived from libs/core/calls' PAYLOAD_RULES (see PAYLOAD_SHAPES).
 */

export type { PayloadCase };

/** One field of a message: its number and its property name (and JSON key). */
export interface FieldShape {
  readonly field: number;
  readonly key: string;
}

/** A payload message: its text fields in number order, then its Struct, if it has one. */
export interface PayloadShape {
  readonly type: PayloadCase;
  /** The payload's field number in Call. */
  readonly field: number;
  readonly texts: readonly FieldShape[];
  readonly struct: FieldShape | undefined;
}

/** A payload's shape from its rule: texts (required one included) in number order, then its object as the Struct. */
function shapeOf<T extends PayloadCase>(type: T): PayloadShape & { readonly type: T } {
  const rule: PayloadRule | undefined = type === "delete" ? undefined : PAYLOAD_RULES[type as CallKind];
  const field = (key: string): FieldShape => ({ field: payloadFieldNumber(type, key), key });
  const texts = rule ? payloadTextsOf(rule).map(field) : [];
  texts.sort((a, b) => a.field - b.field);
  return { type, field: callPayloadField(type), texts, struct: rule?.object === undefined ? undefined : field(rule.object) };
}

/**
 * Every payload, by case, built once at load from PAYLOAD_RULES (libs/core/calls, the one table of a
 * call's payload fields) and the generated field numbers, looked up by name. A delete request is
 * not a kind the rules accept: it has no fields (a test in libs/core/calls holds every generated payload
 * field to the table, Delete's included).
 */
export const PAYLOAD_SHAPES: { readonly [T in PayloadCase]: PayloadShape & { readonly type: T } } = {
  identify: shapeOf("identify"),
  track: shapeOf("track"),
  page: shapeOf("page"),
  screen: shapeOf("screen"),
  group: shapeOf("group"),
  alias: shapeOf("alias"),
  delete: shapeOf("delete"),
};

/** The payloads in Call field order. */
export const PAYLOADS: readonly PayloadShape[] = Object.values(PAYLOAD_SHAPES).sort((a, b) => a.field - b.field);

/** The Call's own text fields, from the Call model in its order (messageId, field 1, first: the scan decodes it). */
export const CALL_TEXTS: readonly FieldShape[] = CLIENT_FIELDS.filter((field) => field.kind === "text").map(({ number, key }) => ({
  field: number,
  key,
}));

/** The Call's own Structs, from the Call model. */
export const CALL_STRUCTS: readonly FieldShape[] = CLIENT_FIELDS.filter((field) => field.kind === "struct").map(({ number, key }) => ({
  field: number,
  key,
}));

/** The most text fields a payload has (the scan keeps a slot for each). */
export const MAX_PAYLOAD_TEXTS = Math.max(...PAYLOADS.map((shape) => shape.texts.length));
