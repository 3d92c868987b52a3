import cluster from "node:cluster";
import { createServer } from "node:net";
import {
  Server,
  ServerCredentials,
  Metadata,
  status as GrpcStatus,
  type handleClientStreamingCall,
  type handleUnaryCall,
  type sendUnaryData,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import type { PackageDefinition } from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { descriptorSetBase64, healthDescriptorSetBase64 } from "@switchyard/contracts";
// The reader's own entry, not the wire package's index: platform needs this one function.
import { repeatedFieldRanges } from "@switchyard/wire/repeated-field";
import { HealthImplementation } from "grpc-health-check";
import type { Logger } from "pino";
import { isServiceError } from "./errors.js";
import { widenFlowControlWindows } from "./grpc-flow-control.js";
import { callInterceptor } from "./grpc-interceptor.js";
import type { Registry } from "./ops/metrics.js";
import type { ServerTls } from "./server-tls.js";

/**
 * A unary method as a service writes it: the request and the call's metadata
 * in, the response out. A thrown error becomes the call's status (toGrpcError).
 */
export type UnaryMethod<Request, Response> = (request: Request, metadata: Metadata) => Promise<Response>;

/** A client-streaming method as a service writes it: reads the call's messages, resolves the one response or throws. */
export type ClientStreamingMethod<Request, Response> = (call: ServerReadableStream<Request, Response>) => Promise<Response>;

/**
 * A generated grpc-js server interface (e.g. ConfigServiceServer) with each
 * method as a plain async function: unary ones as UnaryMethod, client-streaming
 * ones as ClientStreamingMethod; other streaming methods stay grpc-js handlers.
 */
export type AsyncService<Service> = {
  [Method in keyof Service as string extends Method ? never : Method]: Service[Method] extends handleUnaryCall<
    infer Request,
    infer Response
  >
    ? UnaryMethod<Request, Response>
    : Service[Method] extends handleClientStreamingCall<infer Request, infer Response>
      ? ClientStreamingMethod<Request, Response>
      : Service[Method];
};

/**
 * How a service's calls are authenticated:
 * - "admin": `authorization: Bearer <SWITCHYARD_ADMIN_TOKEN>` is checked once
 *   for every method before its handler runs (UNAUTHENTICATED otherwise);
 * - "handler": the handlers authenticate callers themselves (ingest's write keys).
 */
export type GrpcAuth = "admin" | "handler";

export interface GrpcServiceRegistration {
  /** Fully qualified service name, as health checks and reflection name it. */
  name: string;
  definition: ServiceDefinition;
  /**
   * The methods by name, as in `definition`: unary and client-streaming ones as
   * plain async functions (AsyncService), any other as a grpc-js handler.
   */
  implementation: object;
  auth: GrpcAuth;
  /**
   * Count and time this service's calls (switchyard_grpc_server_handled_total and
   * _handling_seconds). Default true; false for a service that records its own
   * and whose hot path should carry nothing more (IngestService).
   */
  metrics?: boolean;
  /** Turns a service's own domain errors into ServiceErrors before toGrpcError maps them; others pass unchanged. */
  mapError?: (error: unknown) => unknown;
}

export interface GrpcServerHandle {
  readonly port: number;
  readonly health: HealthImplementation;
  /** Sets every service SERVING or NOT_SERVING (readiness drives it); ignored once shutdown began. */
  setServing(serving: boolean): void;
  /** Marks every service NOT_SERVING, stops accepting calls and waits for in-flight ones (up to graceMs). */
  shutdown(graceMs: number): Promise<void>;
}

/** Largest request accepted; a 500 KB batch must arrive whole so that ingest can refuse it with a clear message. */
const MAX_RECEIVE_BYTES = 4 * 1024 * 1024;

/**
 * Starts a gRPC server with the given services plus grpc.health.v1 and server
 * reflection (so grpcurl works without .proto files). What every call needs is
 * done here, once: admin authentication (registrations with `auth: "admin"`),
 * mapping thrown errors to statuses, refusing undecodable requests, and the
 * per-method metrics on `registry`.
 */
export async function startGrpcServer(options: {
  host: string;
  port: number;
  services: GrpcServiceRegistration[];
  logger: Logger;
  /** Serve over TLS (with client certificates when it has a client CA); plaintext without. */
  tls?: ServerTls | undefined;
  /** The token `auth: "admin"` services require; unset, they refuse every call. */
  adminToken?: string | undefined;
  /** Where the gRPC server metrics go (the ops server's registry); unset: none are recorded. */
  registry?: Registry | undefined;
}): Promise<GrpcServerHandle> {
  const interceptor = callInterceptor({
    services: options.services.map((s) => ({
      name: s.name,
      definition: s.definition,
      admin: s.auth === "admin",
      metrics: s.metrics !== false,
    })),
    adminToken: options.adminToken,
    registry: options.registry,
  });
  // channelz bookkeeping costs CPU on every call and nothing here reads it.
  const server = new Server({
    "grpc.max_receive_message_length": MAX_RECEIVE_BYTES,
    "grpc.enable_channelz": 0,
    ...(interceptor ? { interceptors: [interceptor] } : {}),
  });
  for (const service of options.services) {
    const adapted = adaptService(service, options.logger);
    server.addService(adapted.definition, adapted.implementation);
  }

  const health = new HealthImplementation({ "": "SERVING", ...Object.fromEntries(options.services.map((s) => [s.name, "SERVING"])) });
  health.addToServer(server);
  reflectionService(options.services.map((s) => s.name)).addToServer(server);

  // Workers (SWITCHYARD_WORKERS > 1) share the port through the primary: no probe there.
  if (options.port !== 0 && cluster.isPrimary) await assertPortFree(options.host, options.port);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.host}:${options.port}`, serverCredentials(options.tls), (error, boundPort) =>
      error ? reject(error) : resolve(boundPort),
    );
  });

  if (!widenFlowControlWindows(server)) {
    options.logger.warn("could not widen the gRPC server's HTTP/2 flow-control windows: clients sending large batches will be slower");
  }

  let shuttingDown = false;
  const setAll = (status: "SERVING" | "NOT_SERVING") => {
    health.setStatus("", status);
    for (const service of options.services) health.setStatus(service.name, status);
  };

  return {
    port,
    health,
    setServing: (serving) => {
      if (!shuttingDown) setAll(serving ? "SERVING" : "NOT_SERVING");
    },
    shutdown: async (graceMs) => {
      shuttingDown = true;
      setAll("NOT_SERVING");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          options.logger.warn("gRPC calls still running after the grace period; cancelling them");
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

/**
 * Fails with Node's own EADDRINUSE error (code, address, port) when the port is taken. grpc-js
 * would print its own error-level log line first and wrap the cause in a message; the start-up
 * error should be one line naming the port and its setting (startup-errors.ts).
 */
function assertPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

function serverCredentials(tls: ServerTls | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(tls.clientCa ?? null, [{ cert_chain: tls.cert, private_key: tls.key }], tls.clientCa !== undefined);
}

/** What a unary method's deserializer returns for bytes that are not its request message. */
class MalformedRequest {
  constructor(readonly reason: string) {}
}

/**
 * The service as grpc-js takes it: each async method adapted to its callback,
 * with thrown errors mapped to statuses here and nowhere else.
 *
 * grpc-js answers INTERNAL when a request deserializer throws, which tells a
 * client that sent garbage that the server is at fault. For unary methods the
 * deserializer's failure is turned into INVALID_ARGUMENT naming the method
 * instead. (Streaming methods decode their own messages.)
 */
function adaptService(
  service: GrpcServiceRegistration,
  logger: Logger,
): { definition: ServiceDefinition; implementation: UntypedServiceImplementation } {
  const methods = service.implementation as Record<string, unknown>;
  const mapError = service.mapError;
  const statusOf = mapError ? (error: unknown) => toGrpcError(mapError(error), logger) : (error: unknown) => toGrpcError(error, logger);
  const definition: Record<string, ServiceDefinition[string]> = { ...service.definition };
  const implementation: UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(service.definition)) {
    const handler = methods[name];
    if (typeof handler !== "function") continue;
    if (method.requestStream && !method.responseStream) {
      const clientStreaming = handler as ClientStreamingMethod<unknown, unknown>;
      implementation[name] = (call: ServerReadableStream<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        clientStreaming(call).then(
          (response) => callback(null, response),
          (error: unknown) => callback(statusOf(error)),
        );
      };
      continue;
    }
    if (method.requestStream || method.responseStream) {
      implementation[name] = handler as UntypedServiceImplementation[string];
      continue;
    }
    const deserialize = method.requestDeserialize;
    definition[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return deserialize(bytes);
        } catch (error) {
          return new MalformedRequest(error instanceof Error ? error.message : String(error));
        }
      },
    };
    const unary = handler as UnaryMethod<unknown, unknown>;
    implementation[name] = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      if (call.request instanceof MalformedRequest) {
        callback({
          code: GrpcStatus.INVALID_ARGUMENT,
          details: `request: not a valid ${method.path} request message (${call.request.reason.slice(0, 100)})`,
        });
        return;
      }
      unary(call.request, call.metadata).then(
        (response) => callback(null, response),
        (error: unknown) => callback(statusOf(error)),
      );
    };
  }
  return { definition, implementation };
}

/**
 * Server reflection over the files as buf compiled them (scripts/gen-proto.sh).
 * Loading the descriptor set through proto-loader (protobufjs) would merge all
 * files of one package into a single file with no imports, which grpcurl and
 * buf refuse (and health.proto's would have relative type names); so each
 * FileDescriptorProto of the embedded sets is handed to `@grpc/reflection` as
 * its own file, keeping its name and `dependency` list. Only the services this
 * port serves (plus health) are listed.
 */
function reflectionService(serviceNames: string[]): ReflectionService {
  const files = [descriptorSetBase64, healthDescriptorSetBase64].flatMap((set) => splitFileDescriptorSet(Buffer.from(set, "base64")));
  // @grpc/reflection reads only `fileDescriptorProtos` from each entry of a package definition.
  const definition = { files: { fileDescriptorProtos: files } } as unknown as PackageDefinition;
  return new ReflectionService(definition, { services: [...serviceNames, "grpc.health.v1.Health"] });
}

/** The encoded FileDescriptorProtos of a FileDescriptorSet (its field 1, repeated), each as its own bytes. */
export function splitFileDescriptorSet(set: Uint8Array): Buffer[] {
  const files = repeatedFieldRanges(set, FILE_DESCRIPTOR_SET_FILE);
  if (!files) throw new Error("descriptor set: not a FileDescriptorSet of files only");
  return files.starts.map((start, i) => Buffer.from(set.subarray(start, start + files.lengths[i]!)));
}

/** google.protobuf.FileDescriptorSet's one field, `repeated FileDescriptorProto file = 1`. */
const FILE_DESCRIPTOR_SET_FILE = 1;

/**
 * The gRPC status and safe message for an error thrown by a handler, with
 * `retry-after` (seconds) when it has one: a ServiceError keeps its code and
 * message; anything else (a ConfigError, a zod error, a bug) is logged and
 * answered INTERNAL "internal error", since its message may not be safe to show.
 */
export function toGrpcError(error: unknown, logger: Logger): { code: GrpcStatus; details: string; metadata?: Metadata } {
  if (isServiceError(error)) {
    const retryAfter = error.retryAfterSeconds;
    if (retryAfter === undefined) return { code: error.grpcStatus, details: error.message };
    const metadata = new Metadata();
    metadata.set("retry-after", String(retryAfter));
    return { code: error.grpcStatus, details: error.message, metadata };
  }
  logger.error({ err: error }, "unexpected error in a gRPC handler");
  return { code: GrpcStatus.INTERNAL, details: "internal error" };
}
