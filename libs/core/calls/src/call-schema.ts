import { z } from "zod";
import {
  badIntegrationKey,
  CALL_KINDS,
  IDENTITY_REQUIRED_MESSAGE,
  isPlainObject,
  PAYLOAD_RULES,
  payloadRuleOf,
  payloadTextsOf,
  type CallKind,
  type PayloadRule,
} from "./call-rules.js";
import { CLIENT_FIELDS, CLIENT_OBJECT_KEYS, CLIENT_TEXT_KEYS, type ClientKey, type CommonRule, type RuleOf } from "./common-fields.js";
import { unfaithfulValue } from "./faithful-values.js";
import { isValidIsoDateTime } from "./iso-date.js";
import { MAX_ID_LENGTH } from "./limits.js";
import { CONTROL_CHARACTERS_RULE_MESSAGE, hasControlCharacter } from "./text-rules.js";

/**
 * The rules of a valid call, written once over the Segment JSON shape. HTTP
 * bodies are checked as they come; gRPC calls are first turned into this
 * shape (see proto-json.ts), so both front doors apply exactly the same rules.
 * Unknown top-level keys (sentAt, _metadata, writeKey, ...) are ignored.
 *
 * Nothing is altered on the way: a call is stored as sent or refused. Hence
 * the free-form objects are checked in place rather than rebuilt (zod's
 * records drop a `__proto__` key), and the last rules refuse what the bus
 * could not carry unchanged (non-finite numbers, lone surrogates).
 */

const stringField = z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") });
const requiredText = stringField.min(1, "must not be empty");
const requiredId = stringField.min(1, "must not be empty").max(MAX_ID_LENGTH, `must be at most ${MAX_ID_LENGTH} characters`);
const optionalId = requiredId.optional();
/** It becomes a NATS and HTTP header value (Nats-Msg-Id, webhook-id), where a line break would end the header. */
const messageId = requiredId
  .refine((value) => !hasControlCharacter(value), { message: CONTROL_CHARACTERS_RULE_MESSAGE, params: { rule: "control_characters" } })
  .optional();

const freeFormObject = z.custom<Record<string, unknown>>(isPlainObject, { error: "must be a JSON object", params: { rule: "type" } });

const timestamp = stringField.refine(isValidIsoDateTime, "must be a valid ISO 8601 date-time");

const integrations = freeFormObject.superRefine((object, ctx) => {
  const key = badIntegrationKey(object);
  if (key !== undefined) {
    ctx.addIssue({ code: "custom", path: [key], message: "values must be true, false or an object", params: { rule: "value" } });
  }
});

/** The schema of each rule a common field can have (common-fields.ts). */
const COMMON_SCHEMAS = {
  text: stringField.optional(),
  id: optionalId,
  message_id: messageId,
  timestamp: timestamp.optional(),
  object: freeFormObject.optional(),
  integrations: integrations.optional(),
} as const satisfies Record<Exclude<CommonRule, "set_by_ingest">, z.ZodType>;

/** The fields every call has, from the Call model, each with its rule's schema, in the model's order. */
const common = Object.fromEntries(CLIENT_FIELDS.map((field) => [field.key, COMMON_SCHEMAS[field.rule as keyof typeof COMMON_SCHEMAS]])) as {
  [K in ClientKey]: (typeof COMMON_SCHEMAS)[Exclude<RuleOf<K>, "set_by_ingest">];
};

type Rules = typeof PAYLOAD_RULES;

/** The schema's shape of one kind, as payloadSchema builds it from the kind's rule (types follow the table too). */
type PayloadShape<T extends CallKind> = { type: z.ZodLiteral<T> } & Omit<typeof common, IdentityKeys<Rules[T]>> &
  IdentityShape<Rules[T]> &
  RequiredShape<Rules[T]> &
  TextsShape<Rules[T]> &
  ObjectShape<Rules[T]>;
type IdentityKeys<R> = R extends { identity: "userId" } ? "userId" : never;
type IdentityShape<R> = R extends { identity: "userId" } ? { userId: typeof requiredId } : unknown;
type RequiredShape<R> = R extends { required: { field: infer F extends string } } ? { [K in F]: typeof requiredText } : unknown;
type TextsShape<R> = R extends { texts: readonly (infer F extends string)[] } ? { [K in F]: z.ZodOptional<typeof stringField> } : unknown;
type ObjectShape<R> = R extends { object: infer F extends string } ? { [K in F]: z.ZodOptional<typeof freeFormObject> } : unknown;

/**
 * One kind's object schema, from its rule in PAYLOAD_RULES: the common fields
 * (userId required when the identity rule is "userId"), the required field,
 * the optional texts, then the free-form object. The key order is the order
 * zod checks in, so it decides which problem a call with several is refused for.
 */
function payloadSchema<T extends CallKind>(type: T): z.ZodObject<PayloadShape<T>> {
  const rule: PayloadRule = PAYLOAD_RULES[type];
  const shape: Record<string, z.ZodType> = { type: z.literal(type), ...common };
  // Identity rule "userId": the alias call's userId is required (it keeps its place among the common fields).
  if (rule.identity === "userId") shape.userId = requiredId;
  if (rule.required) shape[rule.required.field] = rule.required.kind === "id" ? requiredId : requiredText;
  for (const text of rule.texts) shape[text] = stringField.optional();
  if (rule.object !== undefined) shape[rule.object] = freeFormObject.optional();
  return z.object(shape) as unknown as z.ZodObject<PayloadShape<T>>;
}

/** Every field that may hold a string or a free-form object, in the order they are checked for faithful values (here and by the client library). */
export const FREE_FORM_FIELDS: readonly string[] = [
  ...new Set([
    ...CLIENT_TEXT_KEYS,
    ...CALL_KINDS.flatMap((type) => payloadTextsOf(PAYLOAD_RULES[type])),
    ...CLIENT_OBJECT_KEYS,
    ...CALL_KINDS.flatMap((type) => PAYLOAD_RULES[type].object ?? []),
  ]),
];

export const callSchema = z
  .discriminatedUnion(
    "type",
    [
      payloadSchema("identify"),
      payloadSchema("track"),
      payloadSchema("page"),
      payloadSchema("screen"),
      payloadSchema("group"),
      payloadSchema("alias"),
    ],
    {
      error: (issue) => (issue.code === "invalid_union" ? "must be one of identify, track, page, screen, group, alias" : undefined),
    },
  )
  .superRefine((call, ctx) => {
    const identity = payloadRuleOf(call.type)?.identity;
    if (identity === "userId_or_anonymousId" && call.userId === undefined && call.anonymousId === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["userId"],
        message: IDENTITY_REQUIRED_MESSAGE,
        params: { rule: "identity_required" },
      });
      return;
    }
    const fields = call as Record<string, unknown>;
    for (const key of FREE_FORM_FIELDS) {
      const problem = fields[key] === undefined ? undefined : unfaithfulValue(fields[key], [key]);
      if (problem) {
        ctx.addIssue({ code: "custom", path: problem.path, message: problem.message, params: { rule: problem.rule } });
        return;
      }
    }
  });

/** A call that passed every rule, in Segment JSON shape. */
export type ValidCall = z.output<typeof callSchema>;
