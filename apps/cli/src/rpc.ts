import { Client, credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { audiencesApi, configApi, deliveryApi, ingestApi, insightsApi } from "@switchyard/contracts";
import { writeKeyAuthorization } from "./write-key-auth.js";
import type { Connection } from "./args.js";
import { CliError } from "./cli-error.js";

/**
 * Calls any Switchyard gRPC method by name with proto3 JSON in and out, using the generated
 * contracts (no reflection needed): the request and response types are found by the
 * `<Method>Request` / `<Method>Response` naming every Switchyard service follows.
 */

interface MessageType {
  fromJSON(object: unknown): unknown;
  toJSON(message: never): unknown;
}
interface MethodDefinition {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
  requestSerialize(value: never): Buffer;
  responseDeserialize(bytes: Buffer): unknown;
}

type Target = "ingest" | "delivery" | "audience" | "insights";
interface ServiceEntry {
  /** Fully qualified, e.g. switchyard.v1.ConfigService. */
  name: string;
  target: Target;
  /** How its calls authenticate: the source's write key (HTTP Basic) or the admin token (Bearer). */
  auth: "write-key" | "admin";
  definition: Record<string, MethodDefinition>;
  messages: Record<string, unknown>;
}

const SERVICES: ServiceEntry[] = [
  {
    name: "switchyard.v1.IngestService",
    target: "ingest",
    auth: "write-key",
    definition: ingestApi.IngestServiceService,
    messages: ingestApi,
  },
  {
    name: "switchyard.v1.ConfigService",
    target: "delivery",
    auth: "admin",
    definition: configApi.ConfigServiceService,
    messages: configApi,
  },
  {
    name: "switchyard.v1.DeliveryService",
    target: "delivery",
    auth: "admin",
    definition: deliveryApi.DeliveryServiceService,
    messages: deliveryApi,
  },
  {
    name: "switchyard.v1.AudienceService",
    target: "audience",
    auth: "admin",
    definition: audiencesApi.AudienceServiceService,
    messages: audiencesApi,
  },
  {
    name: "switchyard.v1.DeletionService",
    target: "audience",
    auth: "admin",
    definition: audiencesApi.DeletionServiceService,
    messages: audiencesApi,
  },
  {
    name: "switchyard.v1.InsightsService",
    target: "insights",
    auth: "admin",
    definition: insightsApi.InsightsServiceService,
    messages: insightsApi,
  },
];

export interface RpcMethod {
  /** e.g. switchyard.v1.ConfigService/ListSources */
  fullName: string;
  service: ServiceEntry;
  definition: MethodDefinition;
  request: MessageType;
  response: MessageType;
}

function methods(): RpcMethod[] {
  return SERVICES.flatMap((service) =>
    Object.values(service.definition).map((definition) => {
      const method = definition.path.split("/").at(-1)!;
      const request = service.messages[`${method}Request`] as MessageType | undefined;
      const response = service.messages[`${method}Response`] as MessageType | undefined;
      if (!request || !response) throw new Error(`no ${method}Request/${method}Response in the contracts`);
      return { fullName: definition.path.slice(1), service, definition, request, response };
    }),
  );
}

/** Every method, as `switchyard.v1.Service/Method`. */
export function methodNames(): string[] {
  return methods().map((method) => method.fullName);
}

/** Finds a method by `switchyard.v1.Service/Method`, `Service/Method` or `Service.Method`. */
export function findMethod(name: string): RpcMethod | undefined {
  const normalized = name.replace(/^\//, "").replace(/^(?:switchyard\.v1\.)?([A-Za-z]+)[./]([A-Za-z]+)$/, "switchyard.v1.$1/$2");
  return methods().find((method) => method.fullName.toLowerCase() === normalized.toLowerCase());
}

export function requireMethod(name: string): RpcMethod {
  const method = findMethod(name);
  if (!method) throw new Error(`no method ${name}`);
  return method;
}

function metadataFor(service: ServiceEntry, connection: Connection): Metadata {
  const metadata = new Metadata();
  if (service.auth === "write-key") {
    if (!connection.writeKey) throw new CliError(`${service.name} needs a write key: pass --write-key or set SWITCHYARD_WRITE_KEY`, 2);
    metadata.set("authorization", writeKeyAuthorization(connection.writeKey));
  } else {
    if (!connection.adminToken) throw new CliError(`${service.name} needs the admin token: pass --token or set SWITCHYARD_ADMIN_TOKEN`, 2);
    metadata.set("authorization", `Bearer ${connection.adminToken}`);
  }
  return metadata;
}

/**
 * Calls a method with JSON requests (one for a unary method, any number for a client-streaming
 * one) and resolves with the JSON response. gRPC failures become CliErrors naming the status.
 */
export async function invoke(method: RpcMethod, requests: unknown[], connection: Connection): Promise<unknown> {
  return invokeMessages(
    method,
    requests.map((json) => method.request.fromJSON(json)),
    connection,
  );
}

/** As invoke, with request messages the caller built (for JSON the generated fromJSON would not read faithfully). */
export async function invokeMessages(method: RpcMethod, messages: unknown[], connection: Connection): Promise<unknown> {
  const { definition, service } = method;
  const metadata = metadataFor(service, connection);
  const { tls } = connection;
  const channel = tls ? credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null) : credentials.createInsecure();
  const client = new Client(connection[service.target], channel);
  const serialize = (value: unknown) => definition.requestSerialize(value as never);
  const deserialize = (bytes: Buffer) => definition.responseDeserialize(bytes);
  const options = { deadline: Date.now() + connection.timeoutMs };
  try {
    const response = await new Promise<unknown>((resolve, reject) => {
      const done = (error: ServiceError | null, value?: unknown) => (error ? reject(error) : resolve(value));
      if (definition.requestStream) {
        const call = client.makeClientStreamRequest(definition.path, serialize, deserialize, metadata, options, done);
        for (const message of messages) call.write(message);
        call.end();
      } else {
        if (messages.length !== 1) throw new CliError(`${method.fullName} takes exactly one request message`, 2);
        client.makeUnaryRequest(definition.path, serialize, deserialize, messages[0], metadata, options, done);
      }
    });
    return method.response.toJSON(response as never);
  } catch (error) {
    throw describeRpcError(error, method, connection[service.target]);
  } finally {
    client.close();
  }
}

function describeRpcError(error: unknown, method: RpcMethod, target: string): Error {
  if (error instanceof CliError) return error;
  const grpcError = error as Partial<ServiceError>;
  if (typeof grpcError.code !== "number") return error instanceof Error ? error : new Error(String(error));
  const name = status[grpcError.code] ?? String(grpcError.code);
  const details = grpcError.details ?? grpcError.message ?? "";
  const hint =
    grpcError.code !== status.UNAVAILABLE
      ? ""
      : /certificate|SSL|TLS/i.test(details)
        ? " (TLS: trust the server's CA with --ca-file)"
        : ` (is the service running at ${target}, plaintext or --tls as it serves?)`;
  return new CliError(`${method.fullName}: ${name}: ${details}${hint}`);
}
