import { z } from "zod";
import { MAX_ID_LENGTH } from "./limits.js";

/**
 * The rules of a valid call, written once over the Segment JSON shape. HTTP
 * bodies are checked as they come; gRPC calls are first turned into this
 * shape (see proto-json.ts), so both front doors apply exactly the same rules.
 * Unknown top-level keys (sentAt, _metadata, writeKey, ...) are ignored.
 */

const stringField = z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") });
const requiredText = stringField.min(1, "must not be empty");
const requiredId = stringField.min(1, "must not be empty").max(MAX_ID_LENGTH, `must be at most ${MAX_ID_LENGTH} characters`);
const optionalId = requiredId.optional();
const freeFormObject = z.record(z.string(), z.unknown(), { error: "must be a JSON object" });

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const timestamp = stringField
  .regex(ISO_8601, "must be an ISO 8601 date-time")
  .refine((value) => !Number.isNaN(Date.parse(value)), "must be an ISO 8601 date-time");

const integrations = z.record(z.string(), z.union([z.boolean(), freeFormObject], { error: "values must be true, false or an object" }), {
  error: "must be a JSON object",
});

const common = {
  messageId: optionalId,
  userId: optionalId,
  anonymousId: optionalId,
  timestamp: timestamp.optional(),
  context: freeFormObject.optional(),
  integrations: integrations.optional(),
};

const identify = z.object({ type: z.literal("identify"), ...common, traits: freeFormObject.optional() });
const track = z.object({ type: z.literal("track"), ...common, event: requiredText, properties: freeFormObject.optional() });
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
const group = z.object({ type: z.literal("group"), ...common, groupId: requiredId, traits: freeFormObject.optional() });
const alias = z.object({ type: z.literal("alias"), ...common, userId: requiredId, previousId: requiredId });

export const callSchema = z
  .discriminatedUnion("type", [identify, track, page, screen, group, alias], {
    error: (issue) => (issue.code === "invalid_union" ? "must be one of identify, track, page, screen, group, alias" : undefined),
  })
  .superRefine((call, ctx) => {
    if (call.type !== "alias" && call.userId === undefined && call.anonymousId === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["userId"],
        message: "one of userId or anonymousId is required",
        params: { rule: "identity_required" },
      });
    }
  });

/** A call that passed every rule, in Segment JSON shape. */
export type ValidCall = z.output<typeof callSchema>;
