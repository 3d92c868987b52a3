import { Client, credentials, status, type ChannelCredentials, type Metadata, type ServiceError as GrpcError } from "@grpc/grpc-js";
import { audiencesApi, configApi, deliveryApi, ingestApi, insightsApi } from "@switchyard/contracts";

/**
 * Calls Switchyard's gRPC methods by name with proto3 JSON in and out: the one client layer of
 * `switchyard call` (and the CLI's other commands) and the console's browser API. Methods, and
 * their request and response types, come from the generated service definitions, so a method
 * added to a .proto is callable here after `npm run gen`.
 */

/** A message type as ts-proto generates it: binary and proto3 JSON, both ways. */
export interface GeneratedMessage {
  encode(message: never): { finish(): Uint8Array };
  decode(bytes: Uint8Array): unknown;
  fromJSON(json: unknown): unknown;
  toJSON(message: never): unknown;
}

/** A service as ts-proto's generic definitions describe it (configApi.ConfigServiceDefinition, ...). */
export interface GeneratedService {
  /** e.g. switchyard.v1.ConfigService */
  readonly fullName: string;
  readonly methods: Readonly<
    Record<
      string,
      {
        readonly name: string;
        readonly requestType: GeneratedMessage;
        readonly requestStream: boolean;
        readonly responseType: GeneratedMessage;
        readonly responseStream: boolean;
      }
    >
  >;
}

/** Every Switchyard gRPC service. */
export const SWITCHYARD_SERVICES: readonly GeneratedService[] = [
  ingestApi.IngestServiceDefinition,
  configApi.ConfigServiceDefinition,
  deliveryApi.DeliveryServiceDefinition,
  audiencesApi.AudienceServiceDefinition,
  audiencesApi.DeletionServiceDefinition,
  insightsApi.InsightsServiceDefinition,
];

/** One method, as the invoker calls it. */
export interface JsonMethod {
  /** e.g. switchyard.v1.ConfigService/ListSources */
  readonly fullName: string;
  /** e.g. switchyard.v1.ConfigService */
  readonly service: string;
  /** e.g. ListSources */
  readonly name: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  readonly requestType: GeneratedMessage;
  readonly responseType: GeneratedMessage;
}

/** The methods of `services`, by full name, in the order the protos declare them. */
export function jsonMethods(services: readonly GeneratedService[] = SWITCHYARD_SERVICES): Map<string, JsonMethod> {
  const methods = new Map<string, JsonMethod>();
  for (const service of services) {
    for (const method of Object.values(service.methods)) {
      const fullName = `${service.fullName}/${method.name}`;
      methods.set(fullName, {
        fullName,
        service: service.fullName,
        name: method.name,
        requestStream: method.requestStream,
        responseStream: method.responseStream,
        requestType: method.requestType,
        responseType: method.responseType,
      });
    }
  }
  return methods;
}

/**
 * A method of `methods` by `switchyard.v1.Service/Method`, `Service/Method` or `Service.Method`,
 * in any case: for callers that name methods before they have an invoker (a CLI's usage checks).
 */
export function findJsonMethod(methods: ReadonlyMap<string, JsonMethod>, name: string): JsonMethod | undefined {
  const normalized = name.replace(/^\//, "").replace(/^(?:switchyard\.v1\.)?([A-Za-z]+)[./]([A-Za-z]+)$/, "switchyard.v1.$1/$2");
  const exact = methods.get(normalized);
  if (exact) return exact;
  const lower = normalized.toLowerCase();
  return [...methods.values()].find((method) => method.fullName.toLowerCase() === lower);
}

/** A call the service answered with a gRPC error. */
export class GrpcCallError extends Error {
  override readonly name = "GrpcCallError";
  constructor(
    readonly method: string,
    /** Where the call went. */
    readonly address: string,
    readonly code: status,
    /** What the service said (grpc-js's own message when it said nothing). */
    readonly details: string,
  ) {
    super(`${method}: ${status[code] ?? String(code)}: ${details}`);
  }

  /** The status's name: INVALID_ARGUMENT for 3. */
  get codeName(): string {
    return status[this.code] ?? "UNKNOWN";
  }
}

/** A request that was not sent: the JSON is not the method's request message, or not as many as the method takes. */
export class JsonRequestError extends Error {
  override readonly name = "JsonRequestError";
  constructor(
    readonly method: string,
    /** The rule broken, without the method's name. */
    readonly reason: string,
  ) {
    super(`${method}: ${reason}`);
  }
}

/** Where one service's calls go, and the metadata (credentials) each of them carries. */
export interface JsonCallTarget {
  address: string;
  metadata: Metadata;
}

export interface GrpcJsonInvokerOptions {
  /** The services it calls; default every Switchyard service. */
  services?: readonly GeneratedService[];
  /** Where a service (by full name) is. It may throw to refuse the call, e.g. when a credential is missing. */
  target(service: string): JsonCallTarget;
  /** The channel credentials of every address; default plaintext. */
  credentials?: ChannelCredentials | undefined;
  /** Each call's deadline, from when it starts. */
  timeoutMs: number;
}

/**
 * Calls methods with proto3 JSON requests (one for a unary method, any number for a
 * client-streaming one) and resolves with the proto3 JSON response, through one HTTP/2 channel
 * per address, kept until close(). A failed call rejects with a GrpcCallError; a request it
 * cannot send, before anything is sent, with a JsonRequestError.
 */
export class GrpcJsonInvoker {
  /** The callable methods, by full name. */
  readonly methods: ReadonlyMap<string, JsonMethod>;
  private readonly clients = new Map<string, Client>();

  constructor(private readonly options: GrpcJsonInvokerOptions) {
    this.methods = jsonMethods(options.services);
  }

  /** A method by `switchyard.v1.Service/Method`, `Service/Method` or `Service.Method`, in any case. */
  find(name: string): JsonMethod | undefined {
    return findJsonMethod(this.methods, name);
  }

  /** Calls `method` (a JsonMethod, or a name as find() reads it) with JSON requests. */
  async call(method: JsonMethod | string, requests: readonly unknown[]): Promise<unknown> {
    const found = this.resolve(method);
    const messages = requests.map((json) => {
      try {
        return found.requestType.fromJSON(json);
      } catch (error) {
        throw new JsonRequestError(found.fullName, `not a ${found.name}Request in proto3 JSON (${errorText(error)})`);
      }
    });
    return this.callMessages(found, messages);
  }

  /** As call, with request messages the caller built (for JSON the generated fromJSON would not read faithfully). */
  async callMessages(method: JsonMethod | string, messages: readonly unknown[]): Promise<unknown> {
    const found = this.resolve(method);
    if (found.responseStream) throw new JsonRequestError(found.fullName, "streams its responses; call it with a gRPC client");
    if (!found.requestStream && messages.length !== 1) throw new JsonRequestError(found.fullName, "takes exactly one request message");
    const { address, metadata } = this.options.target(found.service);
    const client = this.client(address);
    const path = `/${found.fullName}`;
    const serialize = (message: unknown) => Buffer.from(found.requestType.encode(message as never).finish());
    const deserialize = (bytes: Buffer) => found.responseType.decode(bytes);
    const options = { deadline: Date.now() + this.options.timeoutMs };
    const response = await new Promise<unknown>((resolve, reject) => {
      const done = (error: GrpcError | null, value?: unknown) =>
        error ? reject(new GrpcCallError(found.fullName, address, error.code, error.details || error.message)) : resolve(value);
      if (found.requestStream) {
        const call = client.makeClientStreamRequest(path, serialize, deserialize, metadata, options, done);
        for (const message of messages) call.write(message);
        call.end();
      } else {
        client.makeUnaryRequest(path, serialize, deserialize, messages[0], metadata, options, done);
      }
    });
    return found.responseType.toJSON(response as never);
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private resolve(method: JsonMethod | string): JsonMethod {
    if (typeof method !== "string") return method;
    const found = this.find(method);
    if (!found) throw new JsonRequestError(method, "no such method");
    return found;
  }

  private client(address: string): Client {
    let client = this.clients.get(address);
    if (!client) {
      client = new Client(address, this.options.credentials ?? credentials.createInsecure());
      this.clients.set(address, client);
    }
    return client;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
