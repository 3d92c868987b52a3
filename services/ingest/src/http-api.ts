import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { CALL_TYPES } from "@switchyard/contracts";
import { MAX_BATCH_BYTES, MAX_CALL_BYTES, type Rejection } from "@switchyard/calls";
import { isServiceError, type Logger, type ServerTls, type WorkspaceView } from "@switchyard/platform";
import type { AcceptRequest, CallAcceptor } from "./acceptor.js";
import { authenticate } from "./authenticate.js";
import { tooManyCalls } from "./batch-limits.js";
import { readBody } from "./http-body.js";
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

/** An HTTP server, or HTTPS with `tls` (client certificates required when it has a client CA). */
export function createHttpApi(deps: Deps, tls?: ServerTls): Server {
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    handle(deps, request, response).catch((error: unknown) => {
      deps.logger.error({ err: error }, "unexpected error in the HTTP API");
      if (!response.headersSent) refuse(deps, response, 500, "internal", "internal error");
    });
  };
  const server = tls
    ? createHttpsServer(
        { cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}) },
        listener,
      )
    : createServer(listener);
  server.keepAliveTimeout = 65_000;
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
  const body = await readBody(request, limit);
  if (!body.ok) {
    return body.reason === "too_large"
      ? refuse(
          deps,
          response,
          400,
          endpoint === "batch" ? "batch_too_large" : "call_too_large",
          `request body is over ${limit} bytes (${endpoint === "batch" ? "500" : "32"} KB); split it`,
        )
      : refuse(deps, response, 400, "bad_encoding", "Content-Encoding must be gzip or absent, and the body must decode");
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
