import { AliasField, CallField, GroupField, IdentifyField, PageField, ScreenField, TrackField, type Call } from "@switchyard/contracts";

/**
 * The shape of a switchyard.v1.Call as the hand-written wire code needs it:
 * which fields are text and which are free-form Structs, by generated field
 * number and by property name in the generated type (which is also the JSON
 * key). The call scan, the UTF-8 check, the batch decoder and the client's
 * encoder all read their fields from here, so a text or Struct field added to
 * a payload in the .proto is added here once.
 */

/** The payload oneof's case names (the generated `$case`). */
export type PayloadCase = NonNullable<Call["payload"]>["$case"];

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

/** Every payload, by case; tsc refuses a case the generated Call has and this table lacks. */
export const PAYLOAD_SHAPES: { readonly [T in PayloadCase]: PayloadShape & { readonly type: T } } = {
  identify: { type: "identify", field: CallField.IDENTIFY, texts: [], struct: { field: IdentifyField.TRAITS, key: "traits" } },
  track: {
    type: "track",
    field: CallField.TRACK,
    texts: [{ field: TrackField.EVENT, key: "event" }],
    struct: { field: TrackField.PROPERTIES, key: "properties" },
  },
  page: {
    type: "page",
    field: CallField.PAGE,
    texts: [
      { field: PageField.NAME, key: "name" },
      { field: PageField.CATEGORY, key: "category" },
    ],
    struct: { field: PageField.PROPERTIES, key: "properties" },
  },
  screen: {
    type: "screen",
    field: CallField.SCREEN,
    texts: [
      { field: ScreenField.NAME, key: "name" },
      { field: ScreenField.CATEGORY, key: "category" },
    ],
    struct: { field: ScreenField.PROPERTIES, key: "properties" },
  },
  group: {
    type: "group",
    field: CallField.GROUP,
    texts: [{ field: GroupField.GROUP_ID, key: "groupId" }],
    struct: { field: GroupField.TRAITS, key: "traits" },
  },
  alias: { type: "alias", field: CallField.ALIAS, texts: [{ field: AliasField.PREVIOUS_ID, key: "previousId" }], struct: undefined },
  delete: { type: "delete", field: CallField.DELETE, texts: [], struct: undefined },
};

/** The payloads in Call field order. */
export const PAYLOADS: readonly PayloadShape[] = Object.values(PAYLOAD_SHAPES).sort((a, b) => a.field - b.field);

/** The Call's own text fields (messageId first: the scan decodes it). */
export const CALL_TEXTS: readonly FieldShape[] = [
  { field: CallField.MESSAGE_ID, key: "messageId" },
  { field: CallField.USER_ID, key: "userId" },
  { field: CallField.ANONYMOUS_ID, key: "anonymousId" },
];

/** The Call's own Structs. */
export const CALL_STRUCTS: readonly FieldShape[] = [
  { field: CallField.CONTEXT, key: "context" },
  { field: CallField.INTEGRATIONS, key: "integrations" },
];

/** The most text fields a payload has (the scan keeps a slot for each). */
export const MAX_PAYLOAD_TEXTS = Math.max(...PAYLOADS.map((shape) => shape.texts.length));
