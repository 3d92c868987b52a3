import { z } from "zod";

/**
 * The workspace configuration: sources (with their write keys), webhook
 * destinations and the connections between them. One schema serves the JSON
 * workspace file and the records kept in the JetStream KV bucket.
 */

/** Ids of sources and destinations: they appear in NATS subjects and KV keys. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const ID_RULE = "must be 1-64 letters, digits, '-' or '_'";

const idRule = z.string({ error: "must be a string" }).regex(ID_PATTERN, ID_RULE);

/** In a file, a write key is given as plain text or already hashed ("sha256:<hex>"). */
const writeKeyInFile = z.union([
  z.string().min(8, "must be at least 8 characters"),
  z.object({ hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" and 64 hex digits') }),
]);

export const sourceFileSchema = z.object({
  id: idRule,
  name: z.string().min(1, "must not be empty").optional(),
  writeKeys: z.array(writeKeyInFile).min(1, "needs at least one write key"),
});

/** HTTP header token (RFC 9110) for names; visible ASCII and spaces/tabs for values. */
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const headerValue = /^[\t\x20-\x7e]*$/;
const RESERVED_HEADERS = new Set([
  "content-type",
  "content-length",
  "user-agent",
  "x-signature",
  "host",
  "transfer-encoding",
  "connection",
]);

export const webhookEntrySchema = z.object({
  url: z.string({ error: "must be a string" }).refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
    } catch {
      return false;
    }
  }, "must be an absolute http or https URL"),
  headers: z
    .record(
      z
        .string()
        .regex(headerName, "header names must be HTTP tokens")
        .refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), "this header is set by Switchyard and cannot be overridden"),
      z.string({ error: "header values must be strings" }).regex(headerValue, "header values must be visible ASCII"),
    )
    .default({}),
});

/**
 * A Standard Webhooks signing secret: "whsec_" and the base64 of 24 to 64 random bytes (the HMAC
 * key). The same rule as @switchyard/webhook-verify's isValidSigningSecret, which the services do
 * not import: that package is built for receivers and stays independent of the sender.
 */
export const SIGNING_SECRET_RULE = 'must be "whsec_" followed by the base64 of 24 to 64 bytes';
export function isSigningSecret(value: string): boolean {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(value);
  if (!match?.[1] || match[1].length % 4 !== 0) return false;
  const bytes = Buffer.from(match[1], "base64").length;
  return bytes >= 24 && bytes <= 64;
}
const signingSecret = z.string({ error: "must be a string" }).refine(isSigningSecret, SIGNING_SECRET_RULE);

/** Headers Standard Webhooks signing sets; a destination that opted in cannot override them. */
export const STANDARD_WEBHOOK_HEADER_NAMES = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/**
 * Opt-in Standard Webhooks signing (webhook-id, webhook-timestamp, webhook-signature), sent in
 * addition to X-Signature. After a rotation the previous secrets keep signing beside the new one
 * until their `expiresAt` (ISO 8601), checked at every request, so they stop on time by themselves.
 */
export const standardWebhooksSchema = z.object({
  signingSecret,
  retiringSigningSecrets: z
    .array(z.object({ secret: signingSecret, expiresAt: z.iso.datetime({ error: "must be an ISO 8601 UTC date-time" }) }))
    .max(5, "holds at most 5 secrets")
    .optional(),
});
export type StandardWebhooksSettings = z.output<typeof standardWebhooksSchema>;

export const webhookSettingsSchema = z
  .object({
    webhooks: z.array(webhookEntrySchema).min(1, "needs 1 to 5 webhook entries").max(5, "needs 1 to 5 webhook entries"),
    sharedSecret: z.string().min(1, "must be a non-empty string").optional(),
    standardWebhooks: standardWebhooksSchema.optional(),
  })
  .superRefine((settings, ctx) => {
    if (!settings.standardWebhooks) return;
    settings.webhooks.forEach((entry, index) => {
      for (const name of Object.keys(entry.headers)) {
        if ((STANDARD_WEBHOOK_HEADER_NAMES as readonly string[]).includes(name.toLowerCase()))
          ctx.addIssue({
            code: "custom",
            path: ["webhooks", index, "headers", name],
            message: "this header is set by Standard Webhooks signing and cannot be overridden",
          });
      }
    });
  });

export const destinationSchema = z.object({
  id: idRule,
  name: z.string().min(1, "must not be empty").optional(),
  type: z.literal("webhooks", { error: 'must be "webhooks"' }).default("webhooks"),
  enabled: z.boolean({ error: "must be true or false" }).default(true),
  settings: webhookSettingsSchema,
});

export const connectionSchema = z.object({
  sourceId: idRule,
  destinationId: idRule,
});

export const workspaceFileSchema = z
  .object({
    sources: z.array(sourceFileSchema).default([]),
    destinations: z.array(destinationSchema).default([]),
    connections: z.array(connectionSchema).default([]),
  })
  .superRefine((workspace, ctx) => {
    const sourceIds = new Set(workspace.sources.map((s) => s.id));
    const destinationIds = new Set(workspace.destinations.map((d) => d.id));
    workspace.connections.forEach((connection, index) => {
      if (!sourceIds.has(connection.sourceId))
        ctx.addIssue({
          code: "custom",
          path: ["connections", index, "sourceId"],
          message: `no source "${connection.sourceId}" in this file`,
        });
      if (!destinationIds.has(connection.destinationId))
        ctx.addIssue({
          code: "custom",
          path: ["connections", index, "destinationId"],
          message: `no destination "${connection.destinationId}" in this file`,
        });
    });
  });

export type WorkspaceFile = z.output<typeof workspaceFileSchema>;
export type Destination = z.output<typeof destinationSchema>;
export type WebhookSettings = z.output<typeof webhookSettingsSchema>;
export type Connection = z.output<typeof connectionSchema>;

const keyHash = z.string().regex(/^sha256:[0-9a-f]{64}$/);

/**
 * A source as stored in KV: write keys only as hashes. `retiringWriteKeys`
 * are the keys a rotation replaced: they keep working until `expiresAt`
 * (ISO 8601), checked at every lookup, so no clean-up is needed for them to
 * stop; the next rotation drops the expired ones.
 */
export const sourceRecordSchema = z.object({
  id: idRule,
  name: z.string().optional(),
  writeKeyHashes: z.array(keyHash).min(1),
  retiringWriteKeys: z.array(z.object({ hash: keyHash, expiresAt: z.iso.datetime() })).optional(),
});
export type SourceRecord = z.output<typeof sourceRecordSchema>;

/** Renders zod issues as "path: rule" lines, the form every config error takes. */
export function describeIssues(error: z.ZodError, prefix = ""): string[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter(Boolean).join(".");
    // A bad record key reports "Invalid key in record"; the nested issue says which rule.
    const message = issue.code === "invalid_key" ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    return `${path || "(root)"}: ${message}`;
  });
}
