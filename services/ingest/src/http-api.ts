import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { CALL_TYPES } from "@switchyard/contracts";
import { MAX_BATCH_BYTES, MAX_CALL_BYTES, type Rejection } from "@switchyard/calls";
import { isServiceError, type Logger, type ServerTls } from "@switchyard/platform";
import { AcceptTime, transcodeBatchBody, type FastJsonCall, type TranscodedBatch, type TranscodedBatchCall } from "@switchyard/wire";
import { isWebOrigin, sourceAllowsOrigin, type SourceRecord, type WorkspaceView } from "@switchyard/workspace";
import type { AcceptRequest, CallAcceptor } from "./acceptor.js";
import { authenticate, authenticateHttp } from "./authenticate.js";
import { tooManyCalls } from "./batch-limits.js";
import { apiLocation, browserSettings } from "./browser-settings.js";
import type { HttpLimits } from "./config.js";
import { bodyText, closeAfterAnswer, readBody, type BodyRead } from "./http-body.js";
import type { IncomingCall } from "./incoming-call.js";
import { JsonCall, TranscodedCall } from "./json-call.js";
import type { IngestMetrics } from "./metrics.js";

/**
 * The Segment tracking API (POST /v1/batch, /v1/identify, /v1/track, /v1/page,
 * /v1/screen, /v1/group, /v1/alias, and the short forms analytics.js and the
 * mobile SDKs use: /v1/b, /v1/i, /v1/t, /v1/p, /v1/s, /v1/g, /v1/a), so existing
 * Segment SDKs can point here, plus GET /v1/projects/<write key>/settings, the
 * settings analytics.js loads from its CDN. Browsers get CORS answers.
 * Answers: 200 {"success":true}; 400 with an error naming the problem; 413 for
 * a body over its size limit (naming the limit); 401 for a bad write key; 403 for a browser origin the source does not allow; 429
 * (Retry-After) over the source's rate limit; 503 (Retry-After) when the bus
 * did not confirm.
 */
type Deps = {
  workspace: WorkspaceView;
  acceptor: CallAcceptor;
  metrics: IngestMetrics;
  logger: Logger;
  /** INGEST_PUBLIC_URL, served to analytics.js as where to send. */
  publicUrl?: string;
};

/** An HTTP server, or HTTPS with `tls` (client certificates required when it has a client CA), bounded by `limits`. */
export function createHttpApi(deps: Deps, limits: HttpLimits, tls?: ServerTls): Server {
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    handle(deps, request, response, tls !== undefined).catch((error: unknown) => {
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
/** analytics.js posts to the first letter of the type; the mobile SDKs post batches to /v1/b. */
const SHORT_PATHS: Readonly<Record<string, Endpoint>> = {
  b: "batch",
  t: "track",
  p: "page",
  i: "identify",
  g: "group",
  a: "alias",
  s: "screen",
};
type Route = { kind: "calls"; endpoint: Endpoint } | { kind: "settings"; writeKey: string };

/** Request headers browsers may send (the SDKs send Content-Type, Authorization and, on retries, X-Retry-Count). */
const CORS_ALLOWED_HEADERS = "Content-Type, Authorization, Content-Encoding, X-Retry-Count";
/** Chrome caps a cached preflight at 2 hours; a longer value would only be cut down. */
const CORS_MAX_AGE_SECONDS = 7200;
const SETTINGS_METHODS = "GET, HEAD, OPTIONS";
const CALL_METHODS = "POST, OPTIONS";

async function handle(deps: Deps, request: IncomingMessage, response: ServerResponse, secure: boolean): Promise<void> {
  const path = loggedPath(request.url ?? "");
  // Headers are logged whole on purpose: the logger redacts authorization. The path hides a key in it.
  deps.logger.debug({ req: { method: request.method, url: path, headers: request.headers } }, "HTTP request");
  allowBrowsers(request, response);
  const route = routeOf(request.url ?? "");
  if (!route) {
    request.resume();
    return refuse(
      deps,
      response,
      404,
      "not_found",
      "no such endpoint; use POST /v1/batch, /v1/identify, /v1/track, /v1/page, /v1/screen, /v1/group or /v1/alias (or /v1/b, /v1/i, /v1/t, /v1/p, /v1/s, /v1/g, /v1/a), or GET /v1/projects/<write key>/settings",
    );
  }
  const methods = route.kind === "settings" ? SETTINGS_METHODS : CALL_METHODS;
  if (request.method === "OPTIONS") {
    request.resume();
    return answerPreflight(request, response, methods);
  }
  if (route.kind === "settings") return serveSettings(deps, request, response, route.writeKey, secure);
  const endpoint = route.endpoint;
  if (request.method !== "POST") {
    request.resume();
    response.setHeader("Allow", methods);
    return refuse(deps, response, 405, "method_not_allowed", `${path}: only POST is allowed`);
  }

  // A key in the header is checked before the body is read, so a client without one costs no inflating.
  const authorization = request.headers.authorization;
  let headerSource: SourceRecord | undefined;
  if (authorization !== undefined) {
    try {
      headerSource = authenticate(deps.workspace, authorization);
    } catch (error) {
      request.resume();
      return refuseUnauthenticated(deps, response, path, error);
    }
  }

  const limit = endpoint === "batch" ? MAX_BATCH_BYTES : MAX_CALL_BYTES;
  const body = await readBody(request, { decoded: limit, wire: limit + WIRE_SLACK_BYTES, drain: MAX_DRAIN_BYTES });
  if (!body.ok) {
    if (body.reason === "aborted") return; // Nobody is left to answer (or Node already answered 408).
    // The rest of the body was left unread: reading the next request from this connection is impossible.
    if (body.closeConnection) {
      response.setHeader("Connection", "close");
      closeAfterAnswer(request);
    }
    const gzip = request.headers["content-encoding"]?.toLowerCase() === "gzip";
    return refuseBody(deps, response, { endpoint, limit, gzip }, body.reason);
  }
  // Any Content-Type is read as JSON: analytics.js sends text/plain, which spares browsers a preflight.
  // A batch body is first read straight from its bytes (transcodeBatchBody); a body it leaves to the
  // ordinary path is parsed whole, as is any other body.
  let bodyWriteKey: unknown;
  let parseRequest: () => ParsedRequest;
  let acceptTime: AcceptTime | undefined;
  const transcoded = endpoint === "batch" ? transcodedBatch(body.buffer) : undefined;
  if (transcoded) {
    bodyWriteKey = transcoded.batch.writeKey;
    acceptTime = transcoded.acceptTime;
    parseRequest = () => ({ calls: transcoded.batch.calls.map((call) => transcodedCall(body.buffer, call)) });
  } else {
    let json: unknown;
    try {
      json = JSON.parse(bodyText(body.buffer));
    } catch {
      return refuse(deps, response, 400, "invalid_json", "request body is not valid JSON");
    }
    // Browser and mobile SDKs also put the key in the body; the rules ignore that field, so it is never stored.
    bodyWriteKey = isObject(json) ? json.writeKey : undefined;
    parseRequest = () => (endpoint === "batch" ? batchRequest(json) : singleRequest(endpoint, json, body.bytes));
  }

  let source = bodyWriteKey === undefined ? headerSource : undefined;
  if (!source) {
    try {
      source = authenticateHttp(deps.workspace, authorization, bodyWriteKey);
    } catch (error) {
      return refuseUnauthenticated(deps, response, path, error);
    }
  }
  const originRefused = originRefusal(source, request.headers.origin);
  if (originRefused) {
    deps.logger.info({ path, sourceId: source.id }, "refused an HTTP request from a browser origin the source does not allow");
    return refuse(deps, response, 403, "origin_not_allowed", originRefused);
  }

  const parsed = parseRequest();
  if ("error" in parsed) return refuse(deps, response, 400, "invalid_request", parsed.error);
  try {
    const result = await deps.acceptor.accept({ source, transport: "http", ...parsed, ...(acceptTime ? { acceptTime } : {}) });
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
 * take the answer on a connection it may keep. Reading them raw is cheap but
 * not free; past this the connection is closed instead.
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
  const size = limit / 1024;
  const message =
    reason === "too_large"
      ? `request body is over ${limit} bytes (${size} KB)${gzip ? " once decoded" : ""}; split it`
      : `request body is over ${limit + WIRE_SLACK_BYTES} bytes as sent (the ${size} KB limit plus ${WIRE_SLACK_BYTES / 1024} KB for gzip framing); split it`;
  return refuse(deps, response, 413, code, message);
}

function routeOf(url: string): Route | undefined {
  const path = url.split("?")[0]?.replace(/\/+$/, "") ?? "";
  const settings = /^\/v1\/projects\/([^/]+)\/settings$/.exec(path);
  if (settings?.[1] !== undefined) {
    try {
      return { kind: "settings", writeKey: decodeURIComponent(settings[1]) };
    } catch {
      return undefined;
    }
  }
  const name = /^\/v1\/([a-z]+)$/.exec(path)?.[1];
  if (name === undefined) return undefined;
  const endpoint = SHORT_PATHS[name] ?? (ENDPOINTS.has(name) ? (name as Endpoint) : undefined);
  return endpoint && { kind: "calls", endpoint };
}

/** The request path as logged: a write key in a settings path is replaced. */
function loggedPath(url: string): string {
  return url.replace(/^(\/v1\/projects\/)[^/?]*/, "$1[redacted]");
}

/**
 * CORS on every answer to a browser: the Origin is echoed (with credentials allowed, which
 * navigator.sendBeacon needs; cookies play no part here, the write key is the only credential),
 * so pages can read answers and errors. Whether an origin may send is decided per source, once
 * the key is known (originRefusal).
 */
function allowBrowsers(request: IncomingMessage, response: ServerResponse): void {
  response.setHeader("Vary", "Origin");
  const origin = request.headers.origin;
  if (origin === undefined || (origin !== "null" && !isWebOrigin(origin))) return;
  response.setHeader("Access-Control-Allow-Origin", origin);
  response.setHeader("Access-Control-Allow-Credentials", "true");
  // analytics.js waits as long as Retry-After says on 429 and 503.
  response.setHeader("Access-Control-Expose-Headers", "Retry-After");
}

/**
 * A preflight carries no write key, so it is allowed for any origin; the request that follows is
 * refused (403) when its source does not allow the origin.
 */
function answerPreflight(request: IncomingMessage, response: ServerResponse, methods: string): void {
  response.setHeader("Allow", methods);
  response.setHeader("Access-Control-Allow-Methods", methods);
  response.setHeader("Access-Control-Allow-Headers", CORS_ALLOWED_HEADERS);
  response.setHeader("Access-Control-Max-Age", String(CORS_MAX_AGE_SECONDS));
  // Chrome asks before a public page sends to a private address; this API is meant to be reached so.
  if (request.headers["access-control-request-private-network"] === "true") {
    response.setHeader("Access-Control-Allow-Private-Network", "true");
  }
  response.writeHead(204, { "Content-Length": 0 });
  response.end();
}

/** Why a browser request from `origin` is refused for `source`; undefined when it may send. */
function originRefusal(source: SourceRecord, origin: string | undefined): string | undefined {
  // No Origin: not a cross-origin browser request (server and mobile SDKs send none).
  if (origin === undefined || sourceAllowsOrigin(source, origin)) return undefined;
  const shown = origin.length > 200 ? `${origin.slice(0, 200)}…` : origin;
  return `Origin ${JSON.stringify(shown)} is not in this source's allowedOrigins`;
}

/** GET /v1/projects/<write key>/settings: what analytics.js would load from Segment's CDN, pointed here. */
function serveSettings(deps: Deps, request: IncomingMessage, response: ServerResponse, writeKey: string, secure: boolean): void {
  request.resume();
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.setHeader("Allow", SETTINGS_METHODS);
    return refuse(deps, response, 405, "method_not_allowed", "/v1/projects/<write key>/settings: only GET is allowed");
  }
  const source = writeKey === "" ? undefined : deps.workspace.sourceForWriteKey(writeKey);
  // The same answer as for any path that does not exist: nothing tells a guesser it came close.
  if (!source) return refuse(deps, response, 404, "not_found", "no settings for this write key");
  const originRefused = originRefusal(source, request.headers.origin);
  if (originRefused) return refuse(deps, response, 403, "origin_not_allowed", originRefused);
  const location = apiLocation(deps.publicUrl, request, secure);
  if (!location) {
    return refuse(
      deps,
      response,
      400,
      "bad_host",
      "Host header missing or not a host[:port]; or set INGEST_PUBLIC_URL on the ingest service",
    );
  }
  // Short-lived: a rotated-away key stops being served soon after its grace period.
  response.setHeader("Cache-Control", "private, max-age=60");
  send(response, 200, browserSettings(writeKey, location), request.method === "HEAD");
}

function refuseUnauthenticated(deps: Deps, response: ServerResponse, path: string, error: unknown): void {
  const message = isServiceError(error) ? error.message : "unauthorized";
  deps.logger.info({ path, reason: message }, "refused an HTTP request without a valid write key");
  response.setHeader("WWW-Authenticate", 'Basic realm="switchyard"');
  return refuse(deps, response, 401, "unauthorized", message);
}

type ParsedRequest = Omit<AcceptRequest, "source" | "transport"> | { error: string };

function singleRequest(type: string, json: unknown, bytes: number): ParsedRequest {
  if (!isObject(json)) return { error: "body: must be a JSON object" };
  // The path names the type; a conflicting "type" in the body is overridden.
  return { calls: [new JsonCall(withoutEmptyIds({ ...json, type }), bytes)] };
}

function batchRequest(json: unknown): ParsedRequest {
  if (!isObject(json)) return { error: 'body: must be a JSON object with a "batch" array' };
  const { batch, context, integrations } = json;
  if (!Array.isArray(batch) || batch.length === 0) return { error: "batch: must be a non-empty array of calls" };
  const overCount = tooManyCalls("batch", batch.length);
  if (overCount) return { error: overCount };
  return { calls: batch.map((call: unknown) => new JsonCall(batchCall(call, context, integrations))) };
}

/**
 * A batch body the transcoder took, with the accept time it wrote into the calls; undefined when
 * the body is to be parsed whole (its writeKey or batch unusual, or no call, or too many: the
 * ordinary path says why).
 */
function transcodedBatch(buffer: Buffer): { batch: TranscodedBatch; acceptTime: AcceptTime } | undefined {
  const acceptTime = new AcceptTime(new Date());
  const batch = transcodeBatchBody(buffer, acceptTime);
  if (!batch || batch.calls.length === 0 || tooManyCalls("batch", batch.calls.length)) return undefined;
  return { batch, acceptTime };
}

/** A transcoded call, or one the transcoder left to the ordinary path, parsed from its span. */
function transcodedCall(buffer: Buffer, call: TranscodedBatchCall): IncomingCall {
  if (call.fast) return new TranscodedCall(call as TranscodedBatchCall & { fast: FastJsonCall });
  // The transcoder takes no body with batch-level context or integrations: nothing to merge.
  return new JsonCall(batchCall(JSON.parse(buffer.toString("utf8", call.start, call.end)), undefined, undefined));
}

/** A call of a batch as the rules get it: Segment applies batch-level context and integrations to every call; the call's own keys win. */
function batchCall(call: unknown, context: unknown, integrations: unknown): unknown {
  if (!isObject(call)) return call;
  const merged = withoutEmptyIds({ ...call });
  // Set only when there is something to set: a member added and deleted again would leave the
  // object in V8's slow dictionary form for everything that reads it after.
  const mergedContext = mergeObjects(context, call.context);
  if (mergedContext !== undefined) merged.context = mergedContext;
  const mergedIntegrations = mergeObjects(integrations, call.integrations);
  if (mergedIntegrations !== undefined) merged.integrations = mergedIntegrations;
  return merged;
}

/**
 * Drops a userId or anonymousId that is null or "": SDKs send them so for a user not identified
 * yet (analytics.js null, analytics-kotlin ""), and gRPC, where "" is the unset value, reads them
 * as absent too. The call is copied without them rather than `delete`d from, which would leave it
 * in V8's slow dictionary form for everything that reads it after.
 */
function withoutEmptyIds(call: Record<string, unknown>): Record<string, unknown> {
  const { userId, anonymousId } = call;
  if (!isEmptyId(userId) && !isEmptyId(anonymousId)) return call;
  const { userId: _userId, anonymousId: _anonymousId, ...rest } = call;
  if (userId !== undefined && !isEmptyId(userId)) rest.userId = userId;
  if (anonymousId !== undefined && !isEmptyId(anonymousId)) rest.anonymousId = anonymousId;
  return rest;
}

function isEmptyId(id: unknown): boolean {
  return id === "" || id === null;
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

function send(response: ServerResponse, status: number, body: unknown, headOnly = false): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  response.end(headOnly ? undefined : text);
}
