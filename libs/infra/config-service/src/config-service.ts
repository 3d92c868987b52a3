import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { configApi } from "@switchyard/contracts";
import { isConfigError, ServiceError, type AsyncService, type Logger } from "@switchyard/platform";
import type { z } from "zod";
import {
  allowedOriginsSchema,
  type BlockedCalls,
  blockedCallsSchema,
  callFilterJsonOf,
  callFilterMessageOf,
  type ConfigSource,
  type Connection,
  connectionSchema,
  describeIssues,
  type Destination,
  destinationSchema,
  hashWriteKey,
  ID_PATTERN,
  ID_RULE,
  isMaxPayloadError,
  isSigningSecret,
  kvKeys,
  liveRetiringKeys,
  type Masker,
  MAX_ROTATION_GRACE_SECONDS,
  putWorkspaceRecords,
  rotateWriteKey,
  SIGNING_SECRET_RULE,
  type SourceRecord,
  sourceRecordSchema,
  type StandardWebhooksSettings,
  storedDestinationSchema,
  workspaceFileSchema,
} from "@switchyard/workspace";
import { kindMessage, kindToStore } from "./destination-kinds.js";

/** What reads return instead of a shared secret. Putting it back keeps the stored secret. */
export const SECRET_PLACEHOLDER = "[set]";

/** Most validation issues one error message lists: a huge request must not make a huge status message. */
const MAX_LISTED_ISSUES = 10;

/**
 * switchyard.v1.ConfigService: sources, destinations and connections in the
 * workspace KV bucket. Every write is validated with the same zod schemas as
 * the workspace file; a refused write names the field and stores nothing.
 * Reads go to KV, so a client reads its own writes at once; services pick
 * changes up through their live WorkspaceView. Serve it with `auth: "admin"`:
 * the server checks the admin token before any method runs.
 */
export function configService(deps: {
  kv: KV;
  logger: Logger;
  masker: Masker;
  /** "file" (SWITCHYARD_CONFIG_SOURCE): the workspace file owns the configuration and every write is refused. */
  configSource?: ConfigSource | undefined;
}): AsyncService<configApi.ConfigServiceServer> {
  const service = readWriteConfigService(deps);
  return deps.configSource === "file" ? readOnly(service) : service;
}

/** The methods that only read; every other one, a method added later included, writes. */
const READ_METHODS: ReadonlySet<string> = new Set(["getSource", "listSources", "getDestination", "listDestinations", "listConnections"]);

export const READ_ONLY_MESSAGE =
  "configuration is read-only: SWITCHYARD_CONFIG_SOURCE=file makes the workspace file the source of truth; change the file and restart";

/** The service with every write refused with FAILED_PRECONDITION, naming the setting. */
function readOnly(service: AsyncService<configApi.ConfigServiceServer>): AsyncService<configApi.ConfigServiceServer> {
  const refused = async () => {
    throw new ServiceError("FAILED_PRECONDITION", READ_ONLY_MESSAGE);
  };
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [name, READ_METHODS.has(name) ? method : refused]),
  ) as unknown as AsyncService<configApi.ConfigServiceServer>;
}

function readWriteConfigService(deps: { kv: KV; logger: Logger; masker: Masker }): AsyncService<configApi.ConfigServiceServer> {
  const { kv, logger, masker } = deps;
  const destinationMessage = (record: Destination) => destinationMessageOf(record, masker);

  const readJson = async <T>(key: string, schema: z.ZodType<T>): Promise<T | undefined> => {
    const entry = await kv.get(key);
    return entry && entry.operation === "PUT" ? schema.parse(entry.json()) : undefined;
  };
  const readAll = async <T>(prefix: string, schema: z.ZodType<T>): Promise<T[]> => {
    const records: T[] = [];
    for await (const key of await kv.keys(`${prefix}.>`)) {
      const record = await readJson(key, schema);
      if (record) records.push(record);
    }
    return records;
  };
  const deleteConnections = async (matches: (key: string) => boolean) => {
    for await (const key of await kv.keys("connection.>")) if (matches(key)) await kv.delete(key);
  };
  /**
   * Rewrites a source record with compare-and-set: a key rotation at the same time must not be
   * undone by this write. Returns the source as the API shows it.
   */
  const updateSource = async (id: string, change: (record: SourceRecord) => SourceRecord): Promise<configApi.Source> => {
    const entry = await kv.get(kvKeys.source(id));
    if (!entry || entry.operation !== "PUT") throw new ServiceError("NOT_FOUND", `source_id: no source "${id}"`);
    const updated = change(sourceRecordSchema.parse(entry.json()));
    try {
      await kv.update(kvKeys.source(id), JSON.stringify(updated), entry.revision);
    } catch (error) {
      throw new ServiceError("ABORTED", `source_id: source "${id}" changed meanwhile; try again`, { cause: error });
    }
    return sourceMessage(updated);
  };

  return {
    createSource: async (request: configApi.CreateSourceRequest) => {
      const id = validId("id", request.id);
      const writeKey = newWriteKey();
      const record: SourceRecord = { id, ...(request.name ? { name: request.name } : {}), writeKeyHashes: [hashWriteKey(writeKey)] };
      try {
        await kv.create(kvKeys.source(id), JSON.stringify(record));
      } catch (error) {
        throw new ServiceError("ALREADY_EXISTS", `id: source "${id}" already exists`, { cause: error });
      }
      logger.info({ sourceId: id }, "source created");
      return { source: sourceMessage(record), writeKey };
    },

    getSource: async (request: configApi.GetSourceRequest) => {
      const record = await readJson(kvKeys.source(validId("id", request.id)), sourceRecordSchema);
      if (!record) throw new ServiceError("NOT_FOUND", `id: no source "${request.id}"`);
      return { source: sourceMessage(record) };
    },

    listSources: async () => ({ sources: (await readAll("source", sourceRecordSchema)).map(sourceMessage) }),

    deleteSource: async (request: configApi.DeleteSourceRequest) => {
      const id = validId("id", request.id);
      if (!(await readJson(kvKeys.source(id), sourceRecordSchema))) throw new ServiceError("NOT_FOUND", `id: no source "${id}"`);
      await deleteConnections((key) => key.startsWith(`connection.${id}.`));
      await kv.delete(kvKeys.source(id));
      logger.info({ sourceId: id }, "source deleted");
      return {};
    },

    rotateWriteKey: async (request: configApi.RotateWriteKeyRequest) => {
      const id = validId("source_id", request.sourceId);
      if (request.graceSeconds > MAX_ROTATION_GRACE_SECONDS)
        throw new ServiceError("INVALID_ARGUMENT", `grace_seconds: must be 0 to ${MAX_ROTATION_GRACE_SECONDS} (30 days)`);
      if (request.writeKey !== "" && !CHOSEN_WRITE_KEY.test(request.writeKey))
        throw new ServiceError(
          "INVALID_ARGUMENT",
          "write_key: must be empty (Switchyard makes one) or 16-256 visible ASCII characters without ':'",
        );
      const writeKey = request.writeKey || newWriteKey();
      const newHash = hashWriteKey(writeKey);
      const entry = await kv.get(kvKeys.source(id));
      if (!entry || entry.operation !== "PUT") throw new ServiceError("NOT_FOUND", `source_id: no source "${id}"`);
      const current = sourceRecordSchema.parse(entry.json());
      // A key must name one source: ingest finds the source by the key.
      for (const other of await readAll("source", sourceRecordSchema)) {
        if (other.id !== id && [...other.writeKeyHashes, ...(other.retiringWriteKeys ?? []).map((k) => k.hash)].includes(newHash))
          throw new ServiceError("ALREADY_EXISTS", "write_key: is in use by another source");
      }
      const nowMs = Date.now();
      const graceMs = request.graceSeconds * 1000;
      const rotated = rotateWriteKey(current, newHash, graceMs, nowMs);
      try {
        // Compare-and-set: two rotations at once must not both win and lose a key in between.
        await kv.update(kvKeys.source(id), JSON.stringify(rotated), entry.revision);
      } catch (error) {
        throw new ServiceError("ABORTED", `source_id: source "${id}" changed during the rotation; try again`, { cause: error });
      }
      logger.info({ sourceId: id, graceSeconds: request.graceSeconds }, "write key rotated");
      return { source: sourceMessage(rotated, nowMs), writeKey, previousKeysExpireAt: new Date(nowMs + graceMs) };
    },

    setAllowedOrigins: async (request: configApi.SetAllowedOriginsRequest) => {
      const id = validId("source_id", request.sourceId);
      let origins: string[] | undefined;
      if (request.allowedOrigins) {
        const parsed = allowedOriginsSchema.safeParse(request.allowedOrigins.origins);
        if (!parsed.success) throw new ServiceError("INVALID_ARGUMENT", describeIssues(parsed.error, "allowed_origins.origins").join("; "));
        origins = parsed.data;
      }
      const source = await updateSource(id, ({ allowedOrigins: _previous, ...rest }) => ({
        ...rest,
        ...(origins === undefined ? {} : { allowedOrigins: origins }),
      }));
      logger.info({ sourceId: id, allowedOrigins: origins ?? "any" }, "source allowed origins set");
      return { source };
    },

    blockCalls: async (request: configApi.BlockCallsRequest) => {
      const id = validId("source_id", request.sourceId);
      const block = parseBlockedCalls("block", request.block);
      const source = await updateSource(id, (record) => {
        const current = record.blocked ?? { types: [], trackEvents: [] };
        const merged = parseBlockedCalls("block", {
          types: [...current.types, ...block.types],
          trackEvents: [...current.trackEvents, ...block.trackEvents],
        });
        return { ...record, blocked: merged };
      });
      logger.info({ sourceId: id, types: block.types, trackEvents: block.trackEvents.length }, "source calls blocked");
      return { source };
    },

    unblockCalls: async (request: configApi.UnblockCallsRequest) => {
      const id = validId("source_id", request.sourceId);
      const unblock = parseBlockedCalls("unblock", request.unblock);
      const source = await updateSource(id, ({ blocked, ...rest }) => {
        const types = (blocked?.types ?? []).filter((type) => !unblock.types.includes(type));
        const trackEvents = (blocked?.trackEvents ?? []).filter((name) => !unblock.trackEvents.includes(name));
        return types.length === 0 && trackEvents.length === 0 ? rest : { ...rest, blocked: { types, trackEvents } };
      });
      logger.info({ sourceId: id, types: unblock.types, trackEvents: unblock.trackEvents.length }, "source calls unblocked");
      return { source };
    },

    putDestination: async (request: configApi.PutDestinationRequest) => {
      const input = request.destination;
      if (!input) throw new ServiceError("INVALID_ARGUMENT", "destination: is required");
      // Placeholders keep stored secrets; the stored record is read only when one is used.
      let existing: Destination | undefined;
      // An id that is no valid key has nothing stored; the schema names it below.
      const stored = async () =>
        ID_PATTERN.test(input.id) ? (existing ??= await readJson(kvKeys.destination(input.id), storedDestinationSchema)) : undefined;
      let sharedSecret: string | undefined = input.sharedSecret === "" ? undefined : input.sharedSecret;
      if (sharedSecret === SECRET_PLACEHOLDER) sharedSecret = (await stored())?.settings.sharedSecret;
      const standardWebhooks = input.standardWebhooks
        ? await standardWebhooksToStore(input.standardWebhooks.signingSecret, async () => (await stored())?.settings.standardWebhooks)
        : undefined;
      const kind = await kindToStore(input, stored, masker);
      const parsed = destinationSchema.safeParse({
        id: input.id,
        ...(input.name ? { name: input.name } : {}),
        type: kind.type,
        enabled: input.enabled,
        maxRequestsPerSecond: input.maxRequestsPerSecond,
        settings: {
          ...kind.settings,
          ...(sharedSecret ? { sharedSecret } : {}),
          ...(standardWebhooks ? { standardWebhooks } : {}),
        },
      });
      if (!parsed.success) throw invalidArgument(parsed.error, "destination");
      await putRecord(kv, kvKeys.destination(parsed.data.id), JSON.stringify(parsed.data), "destination");
      logger.info(
        { destinationId: parsed.data.id, enabled: parsed.data.enabled, maxRequestsPerSecond: parsed.data.maxRequestsPerSecond ?? 0 },
        "destination stored",
      );
      return { destination: destinationMessage(parsed.data) };
    },

    getDestination: async (request: configApi.GetDestinationRequest) => {
      const record = await readJson(kvKeys.destination(validId("id", request.id)), storedDestinationSchema);
      if (!record) throw new ServiceError("NOT_FOUND", `id: no destination "${request.id}"`);
      return { destination: destinationMessage(record) };
    },

    listDestinations: async () => ({
      destinations: (await readAll("destination", storedDestinationSchema)).map(destinationMessage),
    }),

    deleteDestination: async (request: configApi.DeleteDestinationRequest) => {
      const id = validId("id", request.id);
      if (!(await readJson(kvKeys.destination(id), storedDestinationSchema)))
        throw new ServiceError("NOT_FOUND", `id: no destination "${id}"`);
      await deleteConnections((key) => key.endsWith(`.${id}`));
      await kv.delete(kvKeys.destination(id));
      logger.info({ destinationId: id }, "destination deleted");
      return {};
    },

    connect: async (request: configApi.ConnectRequest) => {
      const sourceId = validId("source_id", request.sourceId);
      const destinationId = validId("destination_id", request.destinationId);
      // Connecting again replaces the whole record: a request without a filter removes the stored one.
      const parsed = connectionSchema.safeParse({
        sourceId,
        destinationId,
        ...(request.filter ? { filter: callFilterJsonOf(request.filter) } : {}),
      });
      if (!parsed.success) throw invalidArgument(parsed.error);
      const connection = parsed.data;
      if (!(await readJson(kvKeys.source(sourceId), sourceRecordSchema)))
        throw new ServiceError("NOT_FOUND", `source_id: no source "${sourceId}"`);
      if (!(await readJson(kvKeys.destination(destinationId), storedDestinationSchema)))
        throw new ServiceError("NOT_FOUND", `destination_id: no destination "${destinationId}"`);
      await putRecord(kv, kvKeys.connection(sourceId, destinationId), JSON.stringify(connection), "filter");
      logger.info({ sourceId, destinationId, filtered: connection.filter !== undefined }, "source connected");
      return { connection: connectionMessage(connection) };
    },

    disconnect: async (request: configApi.DisconnectRequest) => {
      await kv.delete(kvKeys.connection(validId("source_id", request.sourceId), validId("destination_id", request.destinationId)));
      return {};
    },

    listConnections: async (request: configApi.ListConnectionsRequest) => {
      const connections = await readAll("connection", connectionSchema);
      const wanted = request.sourceId ? connections.filter((c) => c.sourceId === request.sourceId) : connections;
      return { connections: wanted.map(connectionMessage) };
    },

    rotateSigningSecret: async (request: configApi.RotateSigningSecretRequest) => {
      const id = validId("destination_id", request.destinationId);
      if (request.graceSeconds > MAX_GRACE_SECONDS)
        throw new ServiceError("INVALID_ARGUMENT", `grace_seconds: must be 0 to ${MAX_GRACE_SECONDS} (30 days)`);
      const newSecret = request.signingSecret || generateSigningSecret();
      if (!isSigningSecret(newSecret)) throw new ServiceError("INVALID_ARGUMENT", `signing_secret: ${SIGNING_SECRET_RULE}`);
      const key = kvKeys.destination(id);
      const entry = await kv.get(key);
      if (!entry || entry.operation !== "PUT") throw new ServiceError("NOT_FOUND", `destination_id: no destination "${id}"`);
      const record = storedDestinationSchema.parse(entry.json());
      const current = record.settings.standardWebhooks;
      if (!current)
        throw new ServiceError(
          "FAILED_PRECONDITION",
          `destination_id: Standard Webhooks is off for "${id}"; turn it on with PutDestination (standard_webhooks.signing_secret)`,
        );
      const now = Date.now();
      const previousExpireAt = new Date(now + request.graceSeconds * 1000);
      const rotated = structuredClone(record);
      rotated.settings.standardWebhooks = rotateSecrets(current, newSecret, previousExpireAt, now);
      try {
        // Compare-and-set on the revision read: a concurrent change is not silently overwritten.
        await kv.update(key, JSON.stringify(rotated), entry.revision);
      } catch (error) {
        throw new ServiceError("FAILED_PRECONDITION", `destination_id: "${id}" changed during the rotation; try again`, { cause: error });
      }
      logger.info({ destinationId: id, graceSeconds: request.graceSeconds }, "signing secret rotated");
      return { destination: destinationMessage(rotated), signingSecret: newSecret, previousSecretsExpireAt: previousExpireAt };
    },

    applyWorkspace: async (request: configApi.ApplyWorkspaceRequest) => {
      let json: unknown;
      try {
        json = JSON.parse(request.workspaceJson);
      } catch {
        throw new ServiceError("INVALID_ARGUMENT", "workspace_json: is not valid JSON");
      }
      const parsed = workspaceFileSchema.safeParse(json);
      if (!parsed.success) throw invalidArgument(parsed.error, "workspace_json");
      // An API write like any other: the workspace file will keep what this stores.
      const applied = await putWorkspaceRecords(kv, parsed.data).catch((error: unknown) => {
        // A record over the bus's max payload: the request's fault, not the service's.
        throw isConfigError(error) ? new ServiceError("INVALID_ARGUMENT", `workspace_json: ${error.message}`, { cause: error }) : error;
      });
      logger.info({ written: applied.written.length, unchanged: applied.unchanged.length }, "workspace applied");
      return applied;
    },
  };
}

/** Longest grace period of a signing secret rotation (30 days), as for write keys. */
const MAX_GRACE_SECONDS = 30 * 24 * 3600;

/**
 * The Standard Webhooks settings a put stores: a new secret replaces every stored one; an empty
 * secret or the placeholder keeps what is stored (retiring secrets included), and needs something
 * stored to keep.
 */
async function standardWebhooksToStore(
  signingSecret: string,
  stored: () => Promise<StandardWebhooksSettings | undefined>,
): Promise<StandardWebhooksSettings> {
  if (signingSecret !== "" && signingSecret !== SECRET_PLACEHOLDER) return { signingSecret };
  const kept = await stored();
  if (!kept)
    throw new ServiceError(
      "INVALID_ARGUMENT",
      `destination.standard_webhooks.signing_secret: is required to turn Standard Webhooks on (${SIGNING_SECRET_RULE})`,
    );
  return withoutExpired(kept, Date.now());
}

/** The current secret becomes a retiring one until `expiresAt`; secrets already retiring keep the sooner end. */
function rotateSecrets(current: StandardWebhooksSettings, newSecret: string, expiresAt: Date, now: number): StandardWebhooksSettings {
  const retiring = [...(current.retiringSigningSecrets ?? []), { secret: current.signingSecret, expiresAt: expiresAt.toISOString() }]
    .map((old) => ({
      secret: old.secret,
      expiresAt: Date.parse(old.expiresAt) < expiresAt.getTime() ? old.expiresAt : expiresAt.toISOString(),
    }))
    .filter((old) => Date.parse(old.expiresAt) > now && old.secret !== newSecret)
    .slice(-5); // the schema's limit: keep the most recently replaced
  return { signingSecret: newSecret, ...(retiring.length > 0 ? { retiringSigningSecrets: retiring } : {}) };
}

function withoutExpired(settings: StandardWebhooksSettings, now: number): StandardWebhooksSettings {
  const retiring = (settings.retiringSigningSecrets ?? []).filter((old) => Date.parse(old.expiresAt) > now);
  return { signingSecret: settings.signingSecret, ...(retiring.length > 0 ? { retiringSigningSecrets: retiring } : {}) };
}

function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/**
 * A BlockedCalls message checked against the workspace's rules; `field` names it in errors. An
 * empty one is refused: a request that changes nothing is more likely a mistake than meant.
 */
function parseBlockedCalls(field: string, message: configApi.BlockedCalls | undefined): BlockedCalls {
  const parsed = blockedCallsSchema.safeParse(message ?? {});
  if (!parsed.success) throw invalidArgument(parsed.error, field);
  if (parsed.data.types.length === 0 && parsed.data.trackEvents.length === 0)
    throw new ServiceError("INVALID_ARGUMENT", `${field}: must name at least one call type (types) or track event (trackEvents)`);
  return parsed.data;
}

/** INVALID_ARGUMENT listing what zod found, each issue as "field: rule", the first few only. */
function invalidArgument(error: z.ZodError, prefix = ""): ServiceError {
  const issues = describeIssues(error, prefix);
  const listed = issues.slice(0, MAX_LISTED_ISSUES);
  if (issues.length > listed.length) listed.push(`and ${issues.length - listed.length} more`);
  return new ServiceError("INVALID_ARGUMENT", listed.join("; "));
}

/**
 * Stores a record; one larger than the bus's max payload is refused as the caller's error, naming
 * the field. The schema's size limit keeps records below NATS's default; this covers a server set lower.
 */
async function putRecord(kv: KV, key: string, value: string, field: string): Promise<void> {
  try {
    await kv.put(key, value);
  } catch (error) {
    if (!isMaxPayloadError(error)) throw error;
    throw new ServiceError(
      "INVALID_ARGUMENT",
      `${field}: takes ${Buffer.byteLength(value)} bytes as stored, more than the bus's max payload`,
      {
        cause: error,
      },
    );
  }
}

function validId(field: string, value: string): string {
  if (!ID_PATTERN.test(value)) throw new ServiceError("INVALID_ARGUMENT", `${field}: ${ID_RULE}`);
  return value;
}

/** A key a client chose: what HTTP Basic can carry as a user name, long enough not to be guessed. */
const CHOSEN_WRITE_KEY = /^[!-9;-~]{16,256}$/;

function newWriteKey(): string {
  return `wk_${randomBytes(24).toString("base64url")}`;
}

function sourceMessage(record: SourceRecord, nowMs = Date.now()): configApi.Source {
  const retiring = liveRetiringKeys(record, nowMs);
  return {
    id: record.id,
    name: record.name ?? "",
    writeKeyCount: record.writeKeyHashes.length,
    retiringWriteKeyCount: retiring.count,
    retiringWriteKeysExpireAt: retiring.lastExpiresAtMs === undefined ? undefined : new Date(retiring.lastExpiresAtMs),
    allowedOrigins: record.allowedOrigins === undefined ? undefined : { origins: record.allowedOrigins },
    blocked: record.blocked,
  };
}

function connectionMessage(record: Connection): configApi.Connection {
  return {
    sourceId: record.sourceId,
    destinationId: record.destinationId,
    filter: record.filter === undefined ? undefined : callFilterMessageOf(record.filter),
  };
}

function destinationMessageOf(record: Destination, masker: Masker): configApi.Destination {
  return {
    id: record.id,
    name: record.name ?? "",
    enabled: record.enabled,
    ...kindMessage(record, masker),
    sharedSecret: record.settings.sharedSecret ? SECRET_PLACEHOLDER : "",
    maxRequestsPerSecond: record.maxRequestsPerSecond ?? 0,
    standardWebhooks: record.settings.standardWebhooks
      ? {
          signingSecret: SECRET_PLACEHOLDER,
          retiringSecretsExpireAt:
            withoutExpired(record.settings.standardWebhooks, Date.now()).retiringSigningSecrets?.map((old) => new Date(old.expiresAt)) ??
            [],
        }
      : undefined,
  };
}
