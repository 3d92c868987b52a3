import { Metadata, type ChannelCredentials, type status } from "@grpc/grpc-js";
import type { JsonRequest, JsonResponse, UnaryJsonMethod } from "@switchyard/contracts/json";
import { GrpcCallError, GrpcJsonInvoker, SWITCHYARD_SERVICES, jsonMethods, type JsonMethod } from "@switchyard/platform";

/**
 * The browser's API: every unary method of the allowed gRPC services, reached as
 * `POST /api/<package.Service>/<Method>` with a proto3 JSON body and answered in proto3 JSON,
 * through the one client layer (@switchyard/platform's GrpcJsonInvoker). Nothing here knows a
 * method by name: the methods and their types come from the generated service definitions, so a
 * method added to a .proto is in the console's API after `npm run gen`.
 */

/** Which server a service lives on: each has its own address setting. */
export type Upstream = "delivery" | "audience" | "insights";

/**
 * The services the console reaches, and where. IngestService is not among them: it takes write
 * keys, and the console holds none.
 */
const UPSTREAMS: Readonly<Record<string, Upstream>> = {
  "switchyard.v1.ConfigService": "delivery",
  "switchyard.v1.DeliveryService": "delivery",
  "switchyard.v1.AudienceService": "audience",
  "switchyard.v1.DeletionService": "audience",
  "switchyard.v1.InsightsService": "insights",
};
const ALLOWED_SERVICES = SWITCHYARD_SERVICES.filter((service) => Object.hasOwn(UPSTREAMS, service.fullName));

/** One method the console's API maps. */
export interface GatewayMethod {
  /** e.g. switchyard.v1.ConfigService/CreateSource */
  readonly name: string;
  readonly upstream: Upstream;
  readonly method: JsonMethod;
}

const streams = (method: JsonMethod) => method.requestStream || method.responseStream;

/**
 * Every unary method of the allowed services, by full name. Streaming methods are left out:
 * a browser's JSON request is one message (client streams carry snapshots of up to millions of
 * members, which belong in a program, not a form).
 */
export function gatewayMethods(): Map<string, GatewayMethod> {
  const methods = new Map<string, GatewayMethod>();
  for (const method of jsonMethods(ALLOWED_SERVICES).values()) {
    if (!streams(method)) methods.set(method.fullName, { name: method.fullName, upstream: UPSTREAMS[method.service]!, method });
  }
  return methods;
}

/** Names of the allowed methods that stream, so a request for one is told why it is refused. */
export function streamingMethodNames(): Set<string> {
  return new Set([...jsonMethods(ALLOWED_SERVICES).values()].filter(streams).map((method) => method.fullName));
}

/** The outcome of one call: the proto3 JSON answer, or the gRPC failure. */
export type GatewayResult<Response = unknown> = { ok: true; json: Response } | { ok: false; code: status; message: string };

/**
 * Calls the services with the admin token: one HTTP/2 channel per server, shared by every
 * request the console forwards there.
 */
export class GrpcGateway {
  readonly methods = gatewayMethods();
  private readonly invoker: GrpcJsonInvoker;

  constructor(options: {
    addresses: Record<Upstream, string>;
    adminToken: string;
    timeoutMs: number;
    credentials?: ChannelCredentials | undefined;
  }) {
    this.invoker = new GrpcJsonInvoker({
      services: ALLOWED_SERVICES,
      target: (service) => {
        const metadata = new Metadata();
        metadata.set("authorization", `Bearer ${options.adminToken}`);
        return { address: options.addresses[UPSTREAMS[service]!], metadata };
      },
      credentials: options.credentials,
      timeoutMs: options.timeoutMs,
    });
  }

  /**
   * Calls `method` with a request in proto3 JSON. Rejects with the invoker's JsonRequestError
   * (before any call) when the JSON is not the method's request message.
   */
  async call(method: GatewayMethod, json: Record<string, unknown>): Promise<GatewayResult> {
    try {
      return { ok: true, json: await this.invoker.call(method.method, [json]) };
    } catch (error) {
      if (error instanceof GrpcCallError) return { ok: false, code: error.code, message: error.details };
      throw error;
    }
  }

  /** Calls a method by full name, typed by the generated JSON shapes; for the console's own reads (the overview's delivery counts). */
  async callByName<Name extends UnaryJsonMethod>(name: Name, json: JsonRequest<Name>): Promise<GatewayResult<JsonResponse<Name>>> {
    const method = this.methods.get(name);
    if (!method) throw new Error(`no method ${name}`);
    return (await this.call(method, json as Record<string, unknown>)) as GatewayResult<JsonResponse<Name>>;
  }

  close(): void {
    this.invoker.close();
  }
}
