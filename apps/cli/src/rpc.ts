import { credentials, Metadata, status } from "@grpc/grpc-js";
// The invoker's own entry, not the platform's index: a command that calls an API loads the gRPC
// client and the contracts, not NATS, pino and the server scaffolding.
import {
  findJsonMethod,
  GrpcCallError,
  GrpcJsonInvoker,
  JsonRequestError,
  jsonMethods,
  type JsonCallTarget,
  type JsonMethod,
} from "@switchyard/platform/grpc-json-invoker";
import type { JsonRequest, JsonResponse, UnaryJsonMethod } from "@switchyard/contracts/json";
import type { Connection } from "./args.js";
import { CliError } from "./cli-error.js";
import { writeKeyAuthorization } from "./write-key-auth.js";

/**
 * The CLI's side of the one client layer (@switchyard/platform's GrpcJsonInvoker, which knows
 * every method from the generated contracts): where each service is, how its calls
 * authenticate, and how a failure is worded for the terminal.
 */

/** Which connection setting a service's address is, and its credential: the source's write key (HTTP Basic) or the admin token (Bearer). */
const TARGETS: Readonly<Record<string, { address: "ingest" | "delivery" | "audience" | "insights"; auth: "write-key" | "admin" }>> = {
  "switchyard.v1.IngestService": { address: "ingest", auth: "write-key" },
  "switchyard.v1.ConfigService": { address: "delivery", auth: "admin" },
  "switchyard.v1.DeliveryService": { address: "delivery", auth: "admin" },
  "switchyard.v1.AudienceService": { address: "audience", auth: "admin" },
  "switchyard.v1.DeletionService": { address: "audience", auth: "admin" },
  "switchyard.v1.InsightsService": { address: "insights", auth: "admin" },
};

/** Every method, as `switchyard.v1.Service/Method`. */
export function methodNames(): string[] {
  return [...jsonMethods().keys()];
}

/** Finds a method by `switchyard.v1.Service/Method`, `Service/Method` or `Service.Method`. */
export function findMethod(name: string): JsonMethod | undefined {
  return findJsonMethod(jsonMethods(), name);
}

export function requireMethod(name: string): JsonMethod {
  const method = findMethod(name);
  if (!method) throw new Error(`no method ${name}`);
  return method;
}

/**
 * Calls a method with JSON requests (one for a unary method, any number for a client-streaming
 * one) and resolves with the JSON response. Failures become CliErrors naming the status.
 */
export async function invoke(method: JsonMethod, requests: unknown[], connection: Connection): Promise<unknown> {
  return withInvoker(connection, (calls) => calls.call(method, requests));
}

/** Calls a unary method by full name: the request and the answer are its generated proto3 JSON shapes. */
export async function callUnary<Name extends UnaryJsonMethod>(
  name: Name,
  request: JsonRequest<Name>,
  connection: Connection,
): Promise<JsonResponse<Name>> {
  return (await invoke(requireMethod(name), [request], connection)) as JsonResponse<Name>;
}

/** As invoke, with request messages the caller built (for JSON the generated fromJSON would not read faithfully). */
export async function invokeMessages(method: JsonMethod, messages: unknown[], connection: Connection): Promise<unknown> {
  return withInvoker(connection, (calls) => calls.callMessages(method, messages));
}

async function withInvoker(connection: Connection, run: (calls: GrpcJsonInvoker) => Promise<unknown>): Promise<unknown> {
  const { tls } = connection;
  const calls = new GrpcJsonInvoker({
    target: (service) => targetOf(service, connection),
    credentials: tls ? credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null) : undefined,
    timeoutMs: connection.timeoutMs,
  });
  try {
    return await run(calls);
  } catch (error) {
    throw describeRpcError(error);
  } finally {
    calls.close();
  }
}

function targetOf(service: string, connection: Connection): JsonCallTarget {
  const target = TARGETS[service];
  if (!target) throw new CliError(`${service}: the CLI knows no address for it`, 2);
  const metadata = new Metadata();
  if (target.auth === "write-key") {
    if (!connection.writeKey) throw new CliError(`${service} needs a write key: pass --write-key or set SWITCHYARD_WRITE_KEY`, 2);
    metadata.set("authorization", writeKeyAuthorization(connection.writeKey));
  } else {
    if (!connection.adminToken) throw new CliError(`${service} needs the admin token: pass --token or set SWITCHYARD_ADMIN_TOKEN`, 2);
    metadata.set("authorization", `Bearer ${connection.adminToken}`);
  }
  return { address: connection[target.address], metadata };
}

function describeRpcError(error: unknown): unknown {
  // A request that was not sent (not the method's message, or not as many as it takes) is bad usage.
  if (error instanceof JsonRequestError) return new CliError(error.message, 2);
  if (!(error instanceof GrpcCallError)) return error;
  const hint =
    error.code !== status.UNAVAILABLE
      ? ""
      : /certificate|SSL|TLS/i.test(error.details)
        ? " (TLS: trust the server's CA with --ca-file)"
        : ` (is the service running at ${error.address}, plaintext or --tls as it serves?)`;
  return new CliError(`${error.message}${hint}`);
}
