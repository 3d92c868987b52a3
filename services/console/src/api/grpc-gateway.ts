import { Client, credentials, Metadata, type ChannelCredentials, type ServiceError, type status } from "@grpc/grpc-js";
import { audiencesApi, configApi, deliveryApi, insightsApi } from "@switchyard/contracts";

/**
 * The browser's API: every unary method of the allowed gRPC services, reached as
 * `POST /api/<package.Service>/<Method>` with a proto3 JSON body and answered in proto3 JSON.
 * Nothing here knows a method by name: the request and response types are found by the
 * `<Method>Request` / `<Method>Response` naming every Switchyard service follows, so a method
 * added to a .proto is in the console's API after `npm run gen`.
 */

/** Which server a service lives on: each has its own address setting. */
export type Upstream = "delivery" | "audience" | "insights";

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

interface ServiceEntry {
  upstream: Upstream;
  definition: Record<string, MethodDefinition>;
  messages: Record<string, unknown>;
}

/**
 * The services the console reaches, and where. IngestService is not among them: it takes write
 * keys, and the console holds none.
 */
const ALLOWED_SERVICES: ServiceEntry[] = [
  { upstream: "delivery", definition: configApi.ConfigServiceService, messages: configApi },
  { upstream: "delivery", definition: deliveryApi.DeliveryServiceService, messages: deliveryApi },
  { upstream: "audience", definition: audiencesApi.AudienceServiceService, messages: audiencesApi },
  { upstream: "audience", definition: audiencesApi.DeletionServiceService, messages: audiencesApi },
  { upstream: "insights", definition: insightsApi.InsightsServiceService, messages: insightsApi },
];

/** One method the console's API maps. */
export interface GatewayMethod {
  /** e.g. switchyard.v1.ConfigService/CreateSource */
  readonly name: string;
  readonly upstream: Upstream;
  readonly definition: MethodDefinition;
  readonly request: MessageType;
  readonly response: MessageType;
}

/**
 * Every unary method of the allowed services, by full name. Streaming methods are left out:
 * a browser's JSON request is one message (client streams carry snapshots of up to millions of
 * members, which belong in a program, not a form).
 */
export function gatewayMethods(): Map<string, GatewayMethod> {
  const methods = new Map<string, GatewayMethod>();
  for (const service of ALLOWED_SERVICES) {
    for (const definition of Object.values(service.definition)) {
      if (definition.requestStream || definition.responseStream) continue;
      const name = definition.path.slice(1);
      const method = name.split("/")[1]!;
      const request = service.messages[`${method}Request`] as MessageType | undefined;
      const response = service.messages[`${method}Response`] as MessageType | undefined;
      if (!request || !response) throw new Error(`no ${method}Request/${method}Response in the contracts`);
      methods.set(name, { name, upstream: service.upstream, definition, request, response });
    }
  }
  return methods;
}

/** Names of the allowed methods that stream, so a request for one is told why it is refused. */
export function streamingMethodNames(): Set<string> {
  return new Set(
    ALLOWED_SERVICES.flatMap((service) =>
      Object.values(service.definition)
        .filter((definition) => definition.requestStream || definition.responseStream)
        .map((definition) => definition.path.slice(1)),
    ),
  );
}

/** The outcome of one call: the proto3 JSON answer, or the gRPC failure. */
export type GatewayResult = { ok: true; json: unknown } | { ok: false; code: status; message: string };

/**
 * Calls the services with the admin token: one HTTP/2 channel per server, shared by every
 * request the console forwards there.
 */
export class GrpcGateway {
  private readonly clients = new Map<Upstream, Client>();
  readonly methods = gatewayMethods();

  constructor(
    private readonly options: {
      addresses: Record<Upstream, string>;
      adminToken: string;
      timeoutMs: number;
      credentials?: ChannelCredentials | undefined;
    },
  ) {}

  /** Calls `method` with a request parsed from JSON. Throws (before any call) when fromJSON cannot read it. */
  call(method: GatewayMethod, json: Record<string, unknown>): Promise<GatewayResult> {
    const message = method.request.fromJSON(json);
    const metadata = new Metadata();
    metadata.set("authorization", `Bearer ${this.options.adminToken}`);
    const client = this.client(method.upstream);
    return new Promise((resolve) => {
      client.makeUnaryRequest(
        method.definition.path,
        (value: unknown) => method.definition.requestSerialize(value as never),
        (bytes: Buffer) => method.definition.responseDeserialize(bytes),
        message,
        metadata,
        { deadline: Date.now() + this.options.timeoutMs },
        (error: ServiceError | null, response?: unknown) => {
          if (error) resolve({ ok: false, code: error.code, message: error.details || error.message });
          else resolve({ ok: true, json: method.response.toJSON(response as never) });
        },
      );
    });
  }

  /** Calls a method by full name; for the console's own reads (the overview's delivery counts). */
  async callByName(name: string, json: Record<string, unknown>): Promise<GatewayResult> {
    const method = this.methods.get(name);
    if (!method) throw new Error(`no method ${name}`);
    return this.call(method, json);
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private client(upstream: Upstream): Client {
    let client = this.clients.get(upstream);
    if (!client) {
      client = new Client(this.options.addresses[upstream], this.options.credentials ?? credentials.createInsecure());
      this.clients.set(upstream, client);
    }
    return client;
  }
}
