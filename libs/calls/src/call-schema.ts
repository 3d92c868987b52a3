import { z } from "zod";
import {
  badIntegrationKey,
  IDENTITY_REQUIRED_MESSAGE,
  isPlainObject,
  PAYLOAD_RULES,
  payloadRuleOf,
  type RequiredField,
} from "./call-rules.js";
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

/** A kind's required field (call-rules.ts): its name, and the schema of its kind. */
function requiredField<F extends RequiredField>(rule: F): { [K in F["field"]]: typeof requiredText } {
  return { [rule.field]: rule.kind === "id" ? requiredId : requiredText } as { [K in F["field"]]: typeof requiredText };
}

const common = {
  messageId,
  userId: optionalId,
  anonymousId: optionalId,
  timestamp: timestamp.optional(),
  context: freeFormObject.optional(),
  integrations: integrations.optional(),
};

// Written from PAYLOAD_RULES (call-rules.ts): the required fields come from the table, and
// call-rules.test.ts holds the optional ones and the identity rule to it.
const identify = z.object({ type: z.literal("identify"), ...common, traits: freeFormObject.optional() });
const track = z.object({
  type: z.literal("track"),
  ...common,
  ...requiredField(PAYLOAD_RULES.track.required),
  properties: freeFormObject.optional(),
});
const page = z.object({
  type: z.literal("page"),
  ...common,
  name: stringField.optional(),
  category: stringField.optional(),
  properties: freeFormObject.optional(),
});
const screen = z.object({
  type: z.literal("screen"),
  ...common,
  name: stringField.optional(),
  category: stringField.optional(),
  properties: freeFormObject.optional(),
});
const group = z.object({
  type: z.literal("group"),
  ...common,
  ...requiredField(PAYLOAD_RULES.group.required),
  traits: freeFormObject.optional(),
});
// Identity rule "userId": the alias call's userId is required.
const alias = z.object({ type: z.literal("alias"), ...common, userId: requiredId, ...requiredField(PAYLOAD_RULES.alias.required) });

/** Every field that may hold a string or a free-form object, in the order they are checked for faithful values (here and by the client library). */
export const FREE_FORM_FIELDS = [
  "messageId",
  "userId",
  "anonymousId",
  "event",
  "name",
  "category",
  "groupId",
  "previousId",
  "context",
  "integrations",
  "properties",
  "traits",
] as const;

export const callSchema = z
  .discriminatedUnion("type", [identify, track, page, screen, group, alias], {
    error: (issue) => (issue.code === "invalid_union" ? "must be one of identify, track, page, screen, group, alias" : undefined),
  })
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
