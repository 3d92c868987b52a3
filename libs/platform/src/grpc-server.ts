import cluster from "node:cluster";
import { createServer } from "node:net";
import {
  Server,
  ServerCredentials,
  Metadata,
  status as GrpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import type { PackageDefinition } from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { descriptorSetBase64, healthDescriptorSetBase64 } from "@switchyard/contracts";
import { HealthImplementation } from "grpc-health-check";
import type { Logger } from "pino";
import { isServiceError } from "./errors.js";
import { widenFlowControlWindows } from "./grpc-flow-control.js";
import type { ServerTls } from "./server-tls.js";

export interface GrpcServiceRegistration {
  /** Fully qualified service name, as health checks and reflection name it. */
  name: string;
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
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
 * reflection (so grpcurl works without .proto files).
 */
export async function startGrpcServer(options: {
  host: string;
  port: number;
  services: GrpcServiceRegistration[];
  logger: Logger;
  /** Serve over TLS (with client certificates when it has a client CA); plaintext without. */
  tls?: ServerTls | undefined;
}): Promise<GrpcServerHandle> {
  // channelz bookkeeping costs CPU on every call and nothing here reads it.
  const server = new Server({ "grpc.max_receive_message_length": MAX_RECEIVE_BYTES, "grpc.enable_channelz": 0 });
  for (const service of options.services) {
    const guarded = refuseMalformedRequests(service.definition, service.implementation);
    server.addService(guarded.definition, guarded.implementation);
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
 * grpc-js answers INTERNAL when a request deserializer throws, which tells a
 * client that sent garbage that the server is at fault. For unary methods the
 * deserializer's failure is turned into INVALID_ARGUMENT naming the method
 * instead. (Streaming methods decode their own messages.)
 */
function refuseMalformedRequests(
  definition: ServiceDefinition,
  implementation: UntypedServiceImplementation,
): { definition: ServiceDefinition; implementation: UntypedServiceImplementation } {
  const guardedDefinition: Record<string, ServiceDefinition[string]> = { ...definition };
  const guardedImplementation: UntypedServiceImplementation = { ...implementation };
  for (const [name, method] of Object.entries(definition)) {
    const handler = implementation[name];
    if (method.requestStream || method.responseStream || typeof handler !== "function") continue;
    const deserialize = method.requestDeserialize;
    guardedDefinition[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return deserialize(bytes);
        } catch (error) {
          return new MalformedRequest(error instanceof Error ? error.message : String(error));
        }
      },
    };
    const unary = handler as (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;
    guardedImplementation[name] = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      if (call.request instanceof MalformedRequest) {
        callback({
          code: GrpcStatus.INVALID_ARGUMENT,
          details: `request: not a valid ${method.path} request message (${call.request.reason.slice(0, 100)})`,
        });
        return;
      }
      unary(call, callback);
    };
  }
  return { definition: guardedDefinition, implementation: guardedImplementation };
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
  const files: Buffer[] = [];
  let offset = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (offset >= set.length) throw new Error("descriptor set: truncated varint");
      const byte = set[offset++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  };
  while (offset < set.length) {
    const tag = varint();
    if (tag >>> 3 !== 1 || (tag & 7) !== 2) throw new Error(`descriptor set: unexpected field tag ${tag}`);
    const length = varint();
    if (offset + length > set.length) throw new Error("descriptor set: truncated file");
    files.push(Buffer.from(set.subarray(offset, offset + length)));
    offset += length;
  }
  return files;
}

/** The gRPC status and safe message for an error thrown by a handler, with `retry-after` (seconds) when it has one. */
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

/** Adapts an async handler to grpc-js, mapping thrown errors to gRPC statuses. */
export function unaryHandler<Request, Response>(
  logger: Logger,
  handler: (request: Request, metadata: Metadata) => Promise<Response>,
): (call: ServerUnaryCall<Request, Response>, callback: sendUnaryData<Response>) => void {
  return (call, callback) => {
    handler(call.request, call.metadata).then(
      (response) => callback(null, response),
      (error: unknown) => callback(toGrpcError(error, logger)),
    );
  };
}
