import { CALL_FIELDS } from "@switchyard/contracts";

/**
 * The fields every call has (Call's own, not its payload's), read from the generated Call model
 * (CALL_FIELDS, from calls.proto) with the rule each is held to. A field's kind gives its rule;
 * COMMON_FIELD_RULES names the exceptions, once. So a text, Struct or Timestamp field added to
 * Call in calls.proto is accepted, checked, converted, encoded and filtered on with no change
 * here: an optional string, an ISO 8601 date-time or a JSON object.
 */

/** One of Call's own fields as the generated model lists it. */
type ModelField = Exclude<(typeof CALL_FIELDS)[number], { kind: "payload" }>;
/** Every own field's JSON name (also its property name in the generated type). */
export type CommonKey = ModelField["json"];

/**
 * What a common field must hold: "text" any string, "id" a non-empty one of at most
 * MAX_ID_LENGTH characters, "message_id" an id without control characters, "timestamp" an ISO
 * 8601 date-time, "object" a JSON object, "integrations" an object of true, false or objects.
 * "set_by_ingest": ingest writes it; a client's value is dropped, never checked.
 */
export type CommonRule = "text" | "id" | "message_id" | "timestamp" | "object" | "integrations" | "set_by_ingest";

/** The rule of a field of each kind, unless COMMON_FIELD_RULES says otherwise. */
const RULE_BY_KIND = { text: "text", timestamp: "timestamp", struct: "object" } as const satisfies Record<ModelField["kind"], CommonRule>;

/** The common fields whose rule is not their kind's. */
export const COMMON_FIELD_RULES = {
  messageId: "message_id",
  userId: "id",
  anonymousId: "id",
  integrations: "integrations",
  receivedAt: "set_by_ingest",
} as const satisfies { readonly [K in CommonKey]?: CommonRule };

/** A common field's rule, by its JSON name, as a type. */
export type RuleOf<K extends CommonKey> = K extends keyof typeof COMMON_FIELD_RULES
  ? (typeof COMMON_FIELD_RULES)[K]
  : (typeof RULE_BY_KIND)[Extract<ModelField, { json: K }>["kind"]];

/** The common fields a client sets (every one whose rule is not "set_by_ingest"). */
export type ClientKey = { [K in CommonKey]: RuleOf<K> extends "set_by_ingest" ? never : K }[CommonKey];
/** The client's common fields that hold text, and those that hold a JSON object. */
export type ClientTextKey = { [K in ClientKey]: Extract<ModelField, { json: K }>["kind"] extends "text" ? K : never }[ClientKey];
export type ClientObjectKey = { [K in ClientKey]: Extract<ModelField, { json: K }>["kind"] extends "struct" ? K : never }[ClientKey];

/** One common field: its JSON name, generated number and tag, kind and rule. */
export interface CommonField {
  readonly key: CommonKey;
  readonly number: number;
  readonly tag: number;
  readonly kind: ModelField["kind"];
  readonly rule: CommonRule;
}

/** Every common field, in the model's order (the order Call.encode writes them). */
export const COMMON_FIELDS: readonly CommonField[] = CALL_FIELDS.flatMap((field) =>
  field.kind === "payload"
    ? []
    : [
        {
          key: field.json,
          number: field.number,
          tag: field.tag,
          kind: field.kind,
          rule: (COMMON_FIELD_RULES as Partial<Record<CommonKey, CommonRule>>)[field.json] ?? RULE_BY_KIND[field.kind],
        },
      ],
);

/** The common fields a client sets, in the model's order. */
export const CLIENT_FIELDS: readonly CommonField[] = COMMON_FIELDS.filter((field) => field.rule !== "set_by_ingest");
/** The client's text fields, in the model's order (messageId first). */
export const CLIENT_TEXT_KEYS = CLIENT_FIELDS.filter((field) => field.kind === "text").map(
  (field) => field.key,
) as readonly ClientTextKey[];
/** The client's JSON-object fields, in the model's order. */
export const CLIENT_OBJECT_KEYS = CLIENT_FIELDS.filter((field) => field.kind === "struct").map(
  (field) => field.key,
) as readonly ClientObjectKey[];
