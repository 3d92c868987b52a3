import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { CALL_TYPES } from "@switchyard/contracts";
import { MAX_BATCH_BYTES, MAX_CALL_BYTES, type Rejection } from "@switchyard/calls";
import { isServiceError, type Logger, type ServerTls, type WorkspaceView } from "@switchyard/platform";
import type { AcceptRequest, CallAcceptor } from "./acceptor.js";
import { authenticate } from "./authenticate.js";
import { tooManyCalls } from "./batch-limits.js";
import type { HttpLimits } from "./config.js";
import { readBody, type BodyRead } from "./http-body.js";
import { JsonCall } from "./json-call.js";
import type { IngestMetrics } from "./metrics.js";

/**
 * The Segment tracking API (POST /v1/batch, /v1/identify, /v1/track, /v1/page,
 * /v1/screen, /v1/group, /v1/alias), so existing Segment SDKs can point here.
 * Answers: 200 {"success":true}; 400 with an error naming the problem; 401 for
 * a bad write key; 429 (Retry-After) over the source's rate limit; 503
 * (Retry-After) when the bus did not confirm.
 */
type Deps = { workspace: WorkspaceView; acceptor: CallAcceptor; metrics: IngestMetrics; logger: Logger };

/** An HTTP server, or HTTPS with `tls` (client certificates required when it has a client CA), bounded by `limits`. */
export function createHttpApi(deps: Deps, limits: HttpLimits, tls?: ServerTls): Server {
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    handle(deps, request, response).catch((error: unknown) => {
      deps.logger.error({ err: error }, "unexpected error in the HTTP API");
      if (!response.headersSent) refuse(deps, response, 500, "internal", "internal error");
    });
  };
  const options = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // How often Node looks for requests past those timeouts (its default, 30 s, could double them).
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs, limits.requestTimeoutMs),
    keepAliveTimeout: 65_000,
  };
  const server = tls
    ? createHttpsServer(
        {
          ...options,
          // A TLS handshake gets the time headers get (Node's default is 120 s).
          handshakeTimeout: limits.headersTimeoutMs,
          cert: tls.cert,
          key: tls.key,
          ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
        },
        listener,
      )
    : createServer(options, listener);
  // Node closes a connection accepted over the cap at once (the client sees it reset or closed) and
  // keeps serving the others; each such drop is counted, since it means clients are being turned away.
  server.maxConnections = limits.maxConnections;
  server.on("drop", () => deps.metrics.requestRejected("http", "too_many_connections"));
  return server;
}

type Endpoint = "batch" | (typeof CALL_TYPES)[number];
const ENDPOINTS = new Set<string>(["batch", ...CALL_TYPES]);

async function handle(deps: Deps, request: IncomingMessage, response: ServerResponse): Promise<void> {
  // Headers are logged whole on purpose: the logger redacts authorization.
  deps.logger.debug({ req: { method: request.method, url: request.url, headers: request.headers } }, "HTTP request");
  const endpoint = endpointOf(request.url ?? "");
  if (!endpoint) {
    request.resume();
    return refuse(
      deps,
      response,
      404,
      "not_found",
      "no such endpoint; use POST /v1/batch, /v1/identify, /v1/track, /v1/page, /v1/screen, /v1/group or /v1/alias",
    );
  }
  if (request.method !== "POST") {
    request.resume();
    response.setHeader("Allow", "POST");
    return refuse(deps, response, 405, "method_not_allowed", `${request.url}: only POST is allowed`);
  }

  let source;
  try {
    source = authenticate(deps.workspace, request.headers.authorization);
  } catch (error) {
    deps.logger.info(
      { path: request.url, reason: isServiceError(error) ? error.message : "unknown" },
      "refused an HTTP request without a valid write key",
    );
    request.resume();
    response.setHeader("WWW-Authenticate", 'Basic realm="switchyard"');
    return refuse(deps, response, 401, "unauthorized", isServiceError(error) ? error.message : "unauthorized");
  }

  const limit = endpoint === "batch" ? MAX_BATCH_BYTES : MAX_CALL_BYTES;
  const body = await readBody(request, { decoded: limit, wire: limit + WIRE_SLACK_BYTES, drain: MAX_DRAIN_BYTES });
  if (!body.ok) {
    if (body.reason === "aborted") return; // Nobody is left to answer (or Node already answered 408).
    // The rest of the body was left unread: reading the next request from this connection is impossible.
    if (body.closeConnection) response.setHeader("Connection", "close");
    const gzip = request.headers["content-encoding"]?.toLowerCase() === "gzip";
    return refuseBody(deps, response, { endpoint, limit, gzip }, body.reason);
  }
  let json: unknown;
  try {
    json = JSON.parse(body.text);
  } catch {
    return refuse(deps, response, 400, "invalid_json", "request body is not valid JSON");
  }

  const parsed = endpoint === "batch" ? batchRequest(json) : singleRequest(endpoint, json, body.bytes);
  if ("error" in parsed) return refuse(deps, response, 400, "invalid_request", parsed.error);

  try {
    const result = await deps.acceptor.accept({ source, transport: "http", ...parsed });
    if (result.messageIds.length === 0) {
      return refuse(deps, response, 400, "invalid_call", describeRejections(result.rejections), result.rejections);
    }
    if (result.rejections.length > 0) {
      // Partial success: the valid calls are stored; a retry would only repeat the refusals.
      return send(response, 200, { success: true, accepted: result.messageIds.length, rejected: result.rejections });
    }
    return send(response, 200, { success: true });
  } catch (error) {
    if (isServiceError(error) && error.code === "RESOURCE_EXHAUSTED") {
      response.setHeader("Retry-After", String(error.retryAfterSeconds ?? 1));
      return refuse(deps, response, 429, "rate_limited", error.message);
    }
    if (isServiceError(error) && error.code === "UNAVAILABLE") {
      response.setHeader("Retry-After", "1");
      return refuse(deps, response, 503, "unavailable", error.message);
    }
    throw error;
  }
}

/**
 * Gzip framing on top of the decoded limit: a valid body, even one that does
 * not compress at all, is never refused for its size as sent.
 */
const WIRE_SLACK_BYTES = 64 * 1024;
/**
 * Raw bytes of a refused body read on (and never inflated) so the client can
 * take the answer on a connection it may keep. Reading them raw costs about
 * a millisecond a megabyte; past this the connection is closed instead.
 */
const MAX_DRAIN_BYTES = 4 * 1024 * 1024;

/** Refuses a body readBody turned down, naming the limit it passed. */
function refuseBody(
  deps: Deps,
  response: ServerResponse,
  { endpoint, limit, gzip }: { endpoint: Endpoint; limit: number; gzip: boolean },
  reason: Exclude<Extract<BodyRead, { ok: false }>["reason"], "aborted">,
): void {
  if (reason === "bad_encoding") {
    return refuse(deps, response, 400, "bad_encoding", "Content-Encoding must be gzip or absent, and the body must decode");
  }
  if (reason === "not_utf8") return refuse(deps, response, 400, "invalid_json", "request body is not UTF-8, as JSON text must be");
  const code = endpoint === "batch" ? "batch_too_large" : "call_too_large";
  const size = endpoint === "batch" ? "500" : "32";
  const message =
    reason === "too_large"
      ? `request body is over ${limit} bytes (${size} KB)${gzip ? " once decoded" : ""}; split it`
      : `request body is over ${limit + WIRE_SLACK_BYTES} bytes as sent (the ${size} KB limit plus ${WIRE_SLACK_BYTES / 1024} KB for gzip framing); split it`;
  return refuse(deps, response, 400, code, message);
}

function endpointOf(url: string): Endpoint | undefined {
  const path = url.split("?")[0]?.replace(/\/+$/, "") ?? "";
  const match = /^\/v1\/([a-z]+)$/.exec(path);
  const name = match?.[1];
  return name !== undefined && ENDPOINTS.has(name) ? (name as Endpoint) : undefined;
}

type ParsedRequest = Omit<AcceptRequest, "source" | "transport"> | { error: string };

function singleRequest(type: string, json: unknown, bytes: number): ParsedRequest {
  if (!isObject(json)) return { error: "body: must be a JSON object" };
  // The path names the type; a conflicting "type" in the body is overridden.
  return { calls: [new JsonCall({ ...json, type }, bytes)] };
}

function batchRequest(json: unknown): ParsedRequest {
  if (!isObject(json)) return { error: 'body: must be a JSON object with a "batch" array' };
  const { batch, context, integrations } = json;
  if (!Array.isArray(batch) || batch.length === 0) return { error: "batch: must be a non-empty array of calls" };
  const overCount = tooManyCalls("batch", batch.length);
  if (overCount) return { error: overCount };
  // Segment applies batch-level context and integrations to every call; the call's own keys win.
  const calls = batch.map((call: unknown) => {
    if (!isObject(call)) return call;
    const merged: Record<string, unknown> = { ...call };
    merged.context = mergeObjects(context, call.context);
    merged.integrations = mergeObjects(integrations, call.integrations);
    if (merged.context === undefined) delete merged.context;
    if (merged.integrations === undefined) delete merged.integrations;
    return merged;
  });
  return { calls: calls.map((call) => new JsonCall(call)) };
}

/** The call's own value wins; a non-object value is left for validation to refuse. */
function mergeObjects(batchLevel: unknown, own: unknown): unknown {
  if (!isObject(batchLevel) || (own !== undefined && !isObject(own))) return own;
  return { ...batchLevel, ...(own ?? {}) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describeRejections(rejections: Rejection[]): string {
  const first = rejections[0];
  if (!first) return "no valid call";
  const more = rejections.length > 1 ? ` (and ${rejections.length - 1} more)` : "";
  return `call ${first.index}: ${first.message}${more}`;
}

/** Answers with an error and counts the refusal by its code. */
function refuse(deps: Deps, response: ServerResponse, status: number, code: string, message: string, rejected?: Rejection[]): void {
  deps.metrics.requestRejected("http", code);
  send(response, status, failure(code, message, rejected));
}

function failure(code: string, message: string, rejected?: Rejection[]) {
  return { success: false, error: { code, message, ...(rejected ? { rejected } : {}) } };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  response.end(text);
}
