import { HTTP_HEADER_NAME, HTTP_HEADER_VALUE } from "@switchyard/calls";
import { z } from "zod";
import { compileActionMappings, MAX_ACTION_MAPPINGS } from "@switchyard/mappings";
import { callFilterSchema } from "./call-filter.js";
import { decodeQueryValue, isMaskedValue, urlQueryPairs } from "./masking.js";

/**
 * The workspace configuration: sources (with their write keys), webhook
 * destinations and the connections between them. One schema serves the JSON
 * workspace file and the records kept in the JetStream KV bucket.
 */

/** Ids of sources and destinations: they appear in NATS subjects and KV keys. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** The rule ID_PATTERN stands for, as error messages state it. */
export const ID_RULE = "must be 1-64 letters, digits, '-' or '_'";

const idRule = z.string({ error: "must be a string" }).regex(ID_PATTERN, ID_RULE);

/** In a file, a write key is given as plain text or already hashed ("sha256:<hex>"). */
const writeKeyInFile = z.union([
  z.string().min(8, "must be at least 8 characters"),
  z.object({ hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" and 64 hex digits') }),
]);

/** Most entries in a source's allowedOrigins. */
export const MAX_ALLOWED_ORIGINS = 100;
/** The rule every entry of allowedOrigins follows, as error messages state it. */
export const ALLOWED_ORIGIN_RULE =
  'must be a web origin: "http://" or "https://", a host and an optional port, nothing after (e.g. "https://shop.example")';

/** True for an origin as browsers send it in the Origin header: scheme, host, optional port, nothing more. */
export function isWebOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value;
  } catch {
    return false;
  }
}

/**
 * Browser origins allowed to send with the source's write keys; unset: any origin (a browser
 * write key is public anyway). Checked against the Origin header, so it only stops other web
 * pages, not clients that forge or omit the header.
 */
export const allowedOriginsSchema = z
  .array(z.string({ error: "must be a string" }).refine(isWebOrigin, ALLOWED_ORIGIN_RULE), { error: "must be a list of origins" })
  .max(MAX_ALLOWED_ORIGINS, `holds at most ${MAX_ALLOWED_ORIGINS} origins`);

/** Whether a browser page at `origin` (its Origin header) may send with the source's write keys. */
export function sourceAllowsOrigin(source: { allowedOrigins?: readonly string[] | undefined }, origin: string): boolean {
  return source.allowedOrigins === undefined || source.allowedOrigins.includes(origin);
}

/** Most track event names one source can block. */
export const MAX_BLOCKED_TRACK_EVENTS = 1000;
/** Longest track event name a block can name. */
export const MAX_BLOCKED_EVENT_CHARS = 200;
/** Call types a block can name (delete calls come from Switchyard itself, never from clients). */
export const BLOCKABLE_CALL_TYPES = ["identify", "track", "page", "screen", "group", "alias"] as const;

/**
 * What a source accepts but forwards nowhere: whole call types, and track calls by event name.
 * Each list is kept without repeats.
 */
export const blockedCallsSchema = z.object({
  types: z
    .array(z.enum(BLOCKABLE_CALL_TYPES, { error: `must be one of ${BLOCKABLE_CALL_TYPES.join(", ")}` }), {
      error: "must be a list of call types",
    })
    .transform((types) => [...new Set(types)])
    .default([]),
  trackEvents: z
    .array(
      z
        .string({ error: "must be a string" })
        .min(1, "must not be empty")
        .max(MAX_BLOCKED_EVENT_CHARS, `must be at most ${MAX_BLOCKED_EVENT_CHARS} characters`),
      { error: "must be a list of event names" },
    )
    .transform((names) => [...new Set(names)])
    .refine((names) => names.length <= MAX_BLOCKED_TRACK_EVENTS, `holds at most ${MAX_BLOCKED_TRACK_EVENTS} event names`)
    .default([]),
});
/** A source's blocks, as checked. */
export type BlockedCalls = z.output<typeof blockedCallsSchema>;

/** A source's blocks as Sets, for a look-up per call (see blockedCallSets). */
export interface BlockedCallSets {
  readonly types: ReadonlySet<string>;
  readonly trackEvents: ReadonlySet<string>;
}

/**
 * Sets made of each stored `blocked` value, null when it blocks nothing. Keyed by the object:
 * a change to the workspace replaces a source's record (and its `blocked`) rather than changing
 * it, so an entry never goes stale, and a replaced one is collected with its record.
 */
const blockedSetsOf = new WeakMap<BlockedCalls, BlockedCallSets | null>();

/** A source's blocks as Sets, made once per stored record; undefined when it blocks nothing. */
export function blockedCallSets(source: { blocked?: BlockedCalls | undefined }): BlockedCallSets | undefined {
  const blocked = source.blocked;
  if (blocked === undefined) return undefined;
  let sets = blockedSetsOf.get(blocked);
  if (sets === undefined) {
    sets =
      blocked.types.length === 0 && blocked.trackEvents.length === 0
        ? null
        : { types: new Set(blocked.types), trackEvents: new Set(blocked.trackEvents) };
    blockedSetsOf.set(blocked, sets);
  }
  return sets ?? undefined;
}

/** Whether a source blocks a call of this type (and, for track calls, this event name). */
export function sourceBlocks(source: { blocked?: BlockedCalls | undefined }, type: string, event: string | undefined): boolean {
  const sets = blockedCallSets(source);
  return sets !== undefined && (sets.types.has(type) || (type === "track" && event !== undefined && sets.trackEvents.has(event)));
}

export const sourceFileSchema = z.object({
  id: idRule,
  name: z.string().min(1, "must not be empty").optional(),
  writeKeys: z.array(writeKeyInFile).min(1, "needs at least one write key"),
  allowedOrigins: allowedOriginsSchema.optional(),
  blocked: blockedCallsSchema.optional(),
});

const HOP_BY_HOP = "hop-by-hop headers cannot be set: the HTTP client manages the connection";
const FRAMING = "framing headers cannot be set: Switchyard frames each request from the URL and body";
const SET_BY_SWITCHYARD = "this header is set by Switchyard and cannot be overridden";
/**
 * Static header names a destination cannot use, and why: the HTTP client refuses them (every
 * attempt would fail: Upgrade, Keep-Alive, Transfer-Encoding, Expect…), they would contradict the
 * request Switchyard frames (Host, Content-Length, Content-Encoding), or delivery sets them itself.
 */
const FORBIDDEN_HEADERS: ReadonlyMap<string, string> = new Map([
  ["connection", HOP_BY_HOP],
  ["keep-alive", HOP_BY_HOP],
  ["proxy-connection", HOP_BY_HOP],
  ["te", HOP_BY_HOP],
  ["trailer", HOP_BY_HOP],
  ["transfer-encoding", HOP_BY_HOP],
  ["upgrade", HOP_BY_HOP],
  ["host", FRAMING],
  ["content-length", FRAMING],
  ["expect", FRAMING],
  ["content-encoding", "the body is sent as plain JSON; Content-Encoding would misdescribe it"],
  ["content-type", SET_BY_SWITCHYARD],
  ["user-agent", SET_BY_SWITCHYARD],
  ["x-signature", SET_BY_SWITCHYARD],
]);

/** Why a destination cannot set a header of this name (any case); undefined when it can. */
export function forbiddenHeaderReason(name: string, standardWebhooks: boolean): string | undefined {
  const lower = name.toLowerCase();
  if (standardWebhooks && (STANDARD_WEBHOOK_HEADER_NAMES as readonly string[]).includes(lower))
    return "this header is set by Standard Webhooks signing and cannot be overridden";
  return FORBIDDEN_HEADERS.get(lower);
}

/** Longest webhook URL: receivers refuse longer request lines (most at 8 KiB, Node at 16 KiB). */
export const MAX_WEBHOOK_URL_CHARS = 16_384;
/** Most bytes a webhook entry's static headers take on the wire ("Name: value\r\n" each). */
export const MAX_STATIC_HEADER_BYTES = 65_536;
/**
 * Largest destination record, as stored: half of NATS's default max payload (1 MB), which every
 * KV value must fit; the per-field limits keep real destinations far below it.
 */
export const MAX_DESTINATION_BYTES = 512 * 1024;

const MASKED_RULE =
  "is a masked value, as reads show it: give the value itself (PutDestination puts the stored value back only for the same URL origin and name, and only for the keyed [set:hmac:…] form reads give now: read the destination again for it)";

const webhookUrl = z.string({ error: "must be a string" }).refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}, "must be an absolute http or https URL");
const headerNameRule = z.string().regex(HTTP_HEADER_NAME, "header names must be HTTP tokens");
const headerValueRule = z
  .string({ error: "header values must be strings" })
  .regex(HTTP_HEADER_VALUE, "header values must be visible ASCII, spaces or tabs (no CR, LF, NUL or other control characters)");

/** A webhook entry as read from the KV bucket: the rules it was stored under, nothing added since. */
const storedWebhookEntrySchema = z.object({
  url: webhookUrl,
  headers: z.record(headerNameRule, headerValueRule).default({}),
});

/** A webhook entry to store: also refused when the HTTP client could not send it as given. */
const webhookEntrySchema = z.object({
  url: webhookUrl.superRefine((url, ctx) => {
    for (const message of urlProblems(url)) ctx.addIssue({ code: "custom", message });
  }),
  headers: z
    .record(
      headerNameRule.superRefine((name, ctx) => {
        const forbidden = FORBIDDEN_HEADERS.get(name.toLowerCase());
        if (forbidden) ctx.addIssue({ code: "custom", message: forbidden });
      }),
      headerValueRule.refine((value) => !isMaskedValue(value), MASKED_RULE),
    )
    .superRefine((headers, ctx) => {
      let bytes = 0;
      for (const [name, value] of Object.entries(headers)) bytes += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
      if (bytes > MAX_STATIC_HEADER_BYTES)
        ctx.addIssue({
          code: "custom",
          message: `take ${bytes} bytes; at most ${MAX_STATIC_HEADER_BYTES} (receivers refuse larger request headers)`,
        });
    })
    .default({}),
});

/**
 * A Standard Webhooks signing secret: "whsec_" and the base64 of 24 to 64 random bytes (the HMAC
 * key). The same rule as @switchyard/webhook-verify's isValidSigningSecret, which the services do
 * not import: that package is built for receivers and stays independent of the sender.
 */
export const SIGNING_SECRET_RULE = 'must be "whsec_" followed by the base64 of 24 to 64 bytes';
/** Whether a value is a signing secret by SIGNING_SECRET_RULE. */
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
/** A destination's Standard Webhooks settings, as checked. */
export type StandardWebhooksSettings = z.output<typeof standardWebhooksSchema>;

type WebhookEntrySchema = typeof storedWebhookEntrySchema | typeof webhookEntrySchema;

/** The error of a destination without its settings object. */
const SETTINGS_RULE = { error: "must be an object: the destination kind's settings" };

function webhookSettingsSchemaOf<Entry extends WebhookEntrySchema>(entry: Entry) {
  return z
    .object(
      {
        webhooks: z
          .array(entry, { error: "needs 1 to 5 webhook entries" })
          .min(1, "needs 1 to 5 webhook entries")
          .max(5, "needs 1 to 5 webhook entries"),
        sharedSecret: z.string().min(1, "must be a non-empty string").optional(),
        standardWebhooks: standardWebhooksSchema.optional(),
      },
      SETTINGS_RULE,
    )
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
}

/** A destination's webhook settings as PutDestination and the workspace file give them (1 to 5 URLs, secrets). */
export const webhookSettingsSchema = webhookSettingsSchemaOf(webhookEntrySchema);

/** Highest per-destination rate limit (requests per second). */
export const MAX_REQUESTS_PER_SECOND = 100_000;
/** The rule maxRequestsPerSecond follows, as error messages state it. */
export const MAX_REQUESTS_PER_SECOND_RULE = `must be a whole number of requests per second from 1 to ${MAX_REQUESTS_PER_SECOND}, or 0 for no limit`;

/**
 * Most requests per second to the destination, all its URLs and all delivery replicas together;
 * 0 or absent: no limit. Stored only when set, so records without a limit stay as they were.
 */
const maxRequestsPerSecondSchema = z
  .number({ error: MAX_REQUESTS_PER_SECOND_RULE })
  .int(MAX_REQUESTS_PER_SECOND_RULE)
  .min(0, MAX_REQUESTS_PER_SECOND_RULE)
  .max(MAX_REQUESTS_PER_SECOND, MAX_REQUESTS_PER_SECOND_RULE)
  .transform((limit) => (limit === 0 ? undefined : limit))
  .optional();

/**
 * One mapping of a Webhooks (Actions) destination, as the workspace file and ConfigService's
 * proto3 JSON give it (switchyard.v1.ActionMapping). Only its shape is checked here; what its
 * trigger, URL, headers and data mean is checked by @switchyard/mappings when it is stored.
 */
const actionMappingSchema = z.object({
  name: z.string({ error: "must be a string" }),
  /** The workspace file's default; a ConfigService client sets it (proto3: absent is false). */
  enabled: z.boolean({ error: "must be true or false" }).default(true),
  trigger: z.string({ error: "must be a string" }),
  url: z.json({ error: "must be a URL or a mapping directive that makes one" }),
  method: z.string({ error: "must be a string" }).default("POST"),
  headers: z.record(z.string(), z.json(), { error: "must be an object of header names to values or directives" }).optional(),
  data: z.record(z.string(), z.json(), { error: "must be a JSON object (a mapping)" }).optional(),
  batching: z
    .object({
      enabled: z.boolean({ error: "must be true or false" }).default(false),
      size: z.number({ error: "must be a number" }).optional(),
      maxWaitMs: z.number({ error: "must be a number" }).optional(),
    })
    .optional(),
});
/** A Webhooks (Actions) mapping, as stored. */
export type ActionMappingRecord = z.output<typeof actionMappingSchema>;

const sharedSecretRule = z.string().min(1, "must be a non-empty string").optional();

/** A Webhooks (Actions) destination's settings, as stored. */
const storedActionsSettingsSchema = z.object(
  {
    mappings: z.array(actionMappingSchema, { error: `needs 1 to ${MAX_ACTION_MAPPINGS} mappings` }),
    sharedSecret: sharedSecretRule,
    standardWebhooks: standardWebhooksSchema.optional(),
  },
  SETTINGS_RULE,
);

/**
 * The same, to store: the mappings must compile (1 to MAX_ACTION_MAPPINGS, each trigger, URL,
 * header and data valid), their static header names follow the webhook entries' rules, and their
 * static header values and URL are no masked values.
 */
const actionsSettingsSchema = storedActionsSettingsSchema.superRefine((settings, ctx) => {
  const compiled = compileActionMappings(settings.mappings);
  for (const problem of compiled.ok ? [] : compiled.problems) {
    // "mappings.1.trigger: ..." names its place: kept as one path segment, then the rule.
    const at = problem.indexOf(": ");
    ctx.addIssue({ code: "custom", path: [problem.slice(0, at)], message: problem.slice(at + 2) });
  }
  settings.mappings.forEach((mapping, index) => {
    for (const [name, value] of Object.entries(mapping.headers ?? {})) {
      const reason = forbiddenHeaderReason(name, settings.standardWebhooks !== undefined);
      if (reason) ctx.addIssue({ code: "custom", path: ["mappings", index, "headers", name], message: reason });
      if (typeof value === "string" && isMaskedValue(value))
        ctx.addIssue({ code: "custom", path: ["mappings", index, "headers", name], message: MASKED_RULE });
    }
    if (typeof mapping.url === "string") {
      for (const message of urlProblems(mapping.url)) ctx.addIssue({ code: "custom", path: ["mappings", index, "url"], message });
    }
  });
});

const DESTINATION_TYPES = ["webhooks", "webhooks_actions"] as const;
const DESTINATION_TYPE_RULE = `must be one of ${DESTINATION_TYPES.map((type) => `"${type}"`).join(", ")}`;

function destinationSchemaOf<Entry extends WebhookEntrySchema>(entry: Entry, actionsSettings: typeof storedActionsSettingsSchema) {
  const common = {
    id: idRule,
    name: z.string().min(1, "must not be empty").optional(),
    enabled: z.boolean({ error: "must be true or false" }).default(true),
    maxRequestsPerSecond: maxRequestsPerSecondSchema,
  };
  const kinds = z.discriminatedUnion(
    "type",
    [
      z.object({ ...common, type: z.literal("webhooks"), settings: webhookSettingsSchemaOf(entry) }),
      z.object({ ...common, type: z.literal("webhooks_actions"), settings: actionsSettings }),
    ],
    { error: DESTINATION_TYPE_RULE },
  );
  // A destination without a type is a Webhooks one: every record and file from before the kinds.
  return z.preprocess(
    (value) =>
      typeof value === "object" && value !== null && !Array.isArray(value) && !("type" in value) ? { ...value, type: "webhooks" } : value,
    kinds,
  );
}

/**
 * A destination as read from the KV bucket. Lenient on the rules `destinationSchema` added later,
 * so a record stored before them keeps loading (and failing at delivery as it did) instead of
 * vanishing from every service's view; every write goes through `destinationSchema`.
 */
export const storedDestinationSchema = destinationSchemaOf(storedWebhookEntrySchema, storedActionsSettingsSchema);

/**
 * A destination to store, from the workspace file or PutDestination: what cannot work is refused
 * here, naming the field, rather than failing every delivery later.
 */
export const destinationSchema = destinationSchemaOf(webhookEntrySchema, actionsSettingsSchema).superRefine((destination, ctx) => {
  const bytes = Buffer.byteLength(JSON.stringify(destination));
  if (bytes > MAX_DESTINATION_BYTES)
    ctx.addIssue({
      code: "custom",
      message: `takes ${bytes} bytes as stored; at most ${MAX_DESTINATION_BYTES} (a configuration record must fit in one bus message)`,
    });
});

/** What makes a webhook URL (already an absolute http(s) URL) unusable; empty when it is fine. */
function urlProblems(text: string): string[] {
  const problems: string[] = [];
  if (text.length > MAX_WEBHOOK_URL_CHARS)
    problems.push(`must be at most ${MAX_WEBHOOK_URL_CHARS} characters (receivers refuse longer request lines)`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return problems; // the base rule reports it
  }
  // The HTTP client sends neither: it posts to origin + path + query.
  if (url.username !== "" || url.password !== "")
    problems.push("must not hold credentials (user:password@), which would not be sent: put them in an Authorization header");
  if (text.includes("#")) problems.push("must not have a #fragment, which is never sent");
  for (const [name, value] of urlQueryPairs(text) ?? [])
    if (value !== undefined && isMaskedValue(decodeQueryValue(value)))
      problems.push(`the value of query parameter "${truncated(name)}" ${MASKED_RULE}`);
  return problems;
}

/**
 * A connection: the source whose calls a destination receives, and the filter those calls must
 * match (see call-filter.ts); absent: all of them.
 */
export const connectionSchema = z.object({
  sourceId: idRule,
  destinationId: idRule,
  filter: callFilterSchema.optional(),
});

/** The workspace file (SWITCHYARD_WORKSPACE_FILE): sources, destinations and connections, each connection naming ones in the file. */
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

/** A workspace file, as checked. */
export type WorkspaceFile = z.output<typeof workspaceFileSchema>;
/** A destination, as checked: one of the kinds, by its `type`. */
export type Destination = z.output<typeof destinationSchema>;
/** A Webhooks destination. */
export type WebhooksDestination = Extract<Destination, { type: "webhooks" }>;
/** A Webhooks (Actions) destination. */
export type ActionsDestination = Extract<Destination, { type: "webhooks_actions" }>;
/** A destination's webhook settings, as checked. */
export type WebhookSettings = z.output<typeof webhookSettingsSchema>;
/** A connection, as checked. */
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
  /** See allowedOriginsSchema; absent: any origin. */
  allowedOrigins: z.array(z.string()).optional(),
  /** See blockedCallsSchema; absent: nothing blocked. */
  blocked: blockedCallsSchema.optional(),
});
/** A source as stored and as services see it. */
export type SourceRecord = z.output<typeof sourceRecordSchema>;

/** Renders zod issues as "path: rule" lines, the form every config error takes. */
export function describeIssues(error: z.ZodError, prefix = ""): string[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map((key) => truncated(String(key)))].filter(Boolean).join(".");
    // A bad record key reports "Invalid key in record"; the nested issue says which rule.
    const message = issue.code === "invalid_key" ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    return `${path || "(root)"}: ${message}`;
  });
}

/**
 * A name as error messages show it: control characters escaped (a CR LF in a header name must not
 * break the message), and cut short, so a megabyte-long name does not make a megabyte-long error.
 */
function truncated(text: string): string {
  const shown = text.length > 64 ? `${text.slice(0, 60)}…(${text.length} characters)` : text;
  // eslint-disable-next-line no-control-regex -- control characters are what is matched
  return shown.replace(/[\x00-\x1f\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
