import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { configApi } from "@switchyard/contracts";
import {
  connectionSchema,
  describeIssues,
  destinationSchema,
  hashWriteKey,
  ID_PATTERN,
  ID_RULE,
  kvKeys,
  requireAdmin,
  ServiceError,
  sourceRecordSchema,
  unaryHandler,
  type Destination,
  type Logger,
  type SourceRecord,
} from "@switchyard/platform";
import type { z } from "zod";

/** What reads return instead of a shared secret. Putting it back keeps the stored secret. */
export const SECRET_PLACEHOLDER = "[set]";

/**
 * switchyard.v1.ConfigService: sources, destinations and connections in the
 * workspace KV bucket. Every write is validated with the same zod schemas as
 * the workspace file; a refused write names the field and stores nothing.
 * Reads go to KV, so a client reads its own writes at once; services pick
 * changes up through their live WorkspaceView.
 */
export function configService(deps: { adminToken: string | undefined; kv: KV; logger: Logger }): configApi.ConfigServiceServer {
  const { kv, logger } = deps;
  const handler = <Request, Response>(fn: (request: Request) => Promise<Response>) =>
    unaryHandler<Request, Response>(logger, async (request, metadata) => {
      requireAdmin(deps.adminToken, metadata);
      return fn(request);
    });

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

  return {
    createSource: handler(async (request: configApi.CreateSourceRequest) => {
      const id = validId("id", request.id);
      const writeKey = `wk_${randomBytes(24).toString("base64url")}`;
      const record: SourceRecord = { id, ...(request.name ? { name: request.name } : {}), writeKeyHashes: [hashWriteKey(writeKey)] };
      try {
        await kv.create(kvKeys.source(id), JSON.stringify(record));
      } catch (error) {
        throw new ServiceError("ALREADY_EXISTS", `id: source "${id}" already exists`, { cause: error });
      }
      logger.info({ sourceId: id }, "source created");
      return { source: sourceMessage(record), writeKey };
    }),

    getSource: handler(async (request: configApi.GetSourceRequest) => {
      const record = await readJson(kvKeys.source(validId("id", request.id)), sourceRecordSchema);
      if (!record) throw new ServiceError("NOT_FOUND", `id: no source "${request.id}"`);
      return { source: sourceMessage(record) };
    }),

    listSources: handler(async () => ({ sources: (await readAll("source", sourceRecordSchema)).map(sourceMessage) })),

    deleteSource: handler(async (request: configApi.DeleteSourceRequest) => {
      const id = validId("id", request.id);
      if (!(await readJson(kvKeys.source(id), sourceRecordSchema))) throw new ServiceError("NOT_FOUND", `id: no source "${id}"`);
      await deleteConnections((key) => key.startsWith(`connection.${id}.`));
      await kv.delete(kvKeys.source(id));
      logger.info({ sourceId: id }, "source deleted");
      return {};
    }),

    putDestination: handler(async (request: configApi.PutDestinationRequest) => {
      const input = request.destination;
      if (!input) throw new ServiceError("INVALID_ARGUMENT", "destination: is required");
      let sharedSecret: string | undefined = input.sharedSecret === "" ? undefined : input.sharedSecret;
      if (sharedSecret === SECRET_PLACEHOLDER) {
        const existing = await readJson(kvKeys.destination(input.id), destinationSchema);
        sharedSecret = existing?.settings.sharedSecret;
      }
      const parsed = destinationSchema.safeParse({
        id: input.id,
        ...(input.name ? { name: input.name } : {}),
        type: "webhooks",
        enabled: input.enabled,
        settings: { webhooks: input.webhooks.map((w) => ({ url: w.url, headers: w.headers })), ...(sharedSecret ? { sharedSecret } : {}) },
      });
      if (!parsed.success) throw new ServiceError("INVALID_ARGUMENT", describeIssues(parsed.error, "destination").join("; "));
      await kv.put(kvKeys.destination(parsed.data.id), JSON.stringify(parsed.data));
      logger.info({ destinationId: parsed.data.id, enabled: parsed.data.enabled }, "destination stored");
      return { destination: destinationMessage(parsed.data) };
    }),

    getDestination: handler(async (request: configApi.GetDestinationRequest) => {
      const record = await readJson(kvKeys.destination(validId("id", request.id)), destinationSchema);
      if (!record) throw new ServiceError("NOT_FOUND", `id: no destination "${request.id}"`);
      return { destination: destinationMessage(record) };
    }),

    listDestinations: handler(async () => ({
      destinations: (await readAll("destination", destinationSchema)).map(destinationMessage),
    })),

    deleteDestination: handler(async (request: configApi.DeleteDestinationRequest) => {
      const id = validId("id", request.id);
      if (!(await readJson(kvKeys.destination(id), destinationSchema))) throw new ServiceError("NOT_FOUND", `id: no destination "${id}"`);
      await deleteConnections((key) => key.endsWith(`.${id}`));
      await kv.delete(kvKeys.destination(id));
      logger.info({ destinationId: id }, "destination deleted");
      return {};
    }),

    connect: handler(async (request: configApi.ConnectRequest) => {
      const connection = connectionSchema.parse({
        sourceId: validId("source_id", request.sourceId),
        destinationId: validId("destination_id", request.destinationId),
      });
      if (!(await readJson(kvKeys.source(connection.sourceId), sourceRecordSchema)))
        throw new ServiceError("NOT_FOUND", `source_id: no source "${connection.sourceId}"`);
      if (!(await readJson(kvKeys.destination(connection.destinationId), destinationSchema)))
        throw new ServiceError("NOT_FOUND", `destination_id: no destination "${connection.destinationId}"`);
      await kv.put(kvKeys.connection(connection.sourceId, connection.destinationId), JSON.stringify(connection));
      return { connection };
    }),

    disconnect: handler(async (request: configApi.DisconnectRequest) => {
      await kv.delete(kvKeys.connection(validId("source_id", request.sourceId), validId("destination_id", request.destinationId)));
      return {};
    }),

    listConnections: handler(async (request: configApi.ListConnectionsRequest) => {
      const connections = await readAll("connection", connectionSchema);
      return { connections: request.sourceId ? connections.filter((c) => c.sourceId === request.sourceId) : connections };
    }),
  };
}

function validId(field: string, value: string): string {
  if (!ID_PATTERN.test(value)) throw new ServiceError("INVALID_ARGUMENT", `${field}: ${ID_RULE}`);
  return value;
}

function sourceMessage(record: SourceRecord): configApi.Source {
  return { id: record.id, name: record.name ?? "", writeKeyCount: record.writeKeyHashes.length };
}

function destinationMessage(record: Destination): configApi.Destination {
  return {
    id: record.id,
    name: record.name ?? "",
    enabled: record.enabled,
    webhooks: record.settings.webhooks.map((entry) => ({ url: entry.url, headers: entry.headers })),
    sharedSecret: record.settings.sharedSecret ? SECRET_PLACEHOLDER : "",
  };
}
