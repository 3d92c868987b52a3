import type { IncomingMessage, ServerResponse } from "node:http";
import { JsonRequestError, type Logger } from "@switchyard/platform";
import { ID_PATTERN, ID_RULE } from "@switchyard/workspace";
import { errorBody, httpStatusOf, statusName } from "../api/http-errors.js";
import type { GrpcGateway } from "../api/grpc-gateway.js";
import { streamingMethodNames } from "../api/grpc-gateway.js";
import { csrfTokenMatches, type Session, type SessionStore } from "../auth/sessions.js";
import type { TrustedProxies } from "../auth/client-address.js";
import type { SignInCheck, SignInLimiter } from "../auth/sign-in.js";
import { MAX_RECENT_CALLS } from "../live/calls-feed.js";
import { EventStream } from "../live/sse.js";
import type { WebAsset } from "./web-assets.js";

/** Largest request body: gRPC's default message limit, which ApplyWorkspace's file text is the largest use of. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** The header the page sends its session's CSRF token in. */
export const CSRF_HEADER = "x-csrf-token";

/**
 * What every answer carries. The page loads only its own script and style (no inline code, no
 * other origin), may not be framed, and sends no Referer anywhere.
 */
const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};

export interface ConsoleServerDeps {
  assets: Map<string, WebAsset>;
  sessions: SessionStore;
  signIn: SignInCheck;
  limiter: SignInLimiter;
  /** CONSOLE_TRUSTED_PROXIES: whose X-Forwarded-For names the client that failed sign-ins are counted for. */
  trustedProxies: TrustedProxies;
  gateway: GrpcGateway;
  /** Live views: each writes server-sent events until the browser goes. */
  live: {
    overview(events: EventStream): void;
    /** `recent`: how many of the source's newest stored calls come first (0: only calls from now on). */
    calls(sourceId: string, events: EventStream, recent: number): Promise<void>;
    overviewSnapshot(): unknown;
  };
  /** The console serves TLS: cookies are Secure and named with the __Host- prefix. */
  secure: boolean;
  /** CONSOLE_PUBLIC_ORIGIN, when the browser's origin is not the request's own Host. */
  publicOrigin: string | undefined;
  sessionMaxAgeMs: number;
  logger: Logger;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * The console's HTTP handler: the web app's files, sign-in and sessions, the gRPC mapping and
 * the live views. Every /api path but sign-in needs a session (401 without); every request that
 * changes state also needs the session's CSRF token in X-CSRF-Token and, when the browser names
 * one, an Origin equal to the console's own (403 otherwise).
 */
export function consoleHandler(deps: ConsoleServerDeps): (request: IncomingMessage, response: ServerResponse) => void {
  const cookieName = deps.secure ? "__Host-switchyard_session" : "switchyard_session";
  const streaming = streamingMethodNames();

  const sessionOf = (request: IncomingMessage): { id: string | undefined; session: Session | undefined } => {
    const id = readCookie(request.headers.cookie, cookieName);
    return { id, session: deps.sessions.get(id) };
  };
  const requireSession = (request: IncomingMessage): { id: string; session: Session } => {
    const { id, session } = sessionOf(request);
    if (!id || !session) throw new HttpError(401, "UNAUTHENTICATED", "sign in first: no session, or it expired");
    return { id, session };
  };
  const checkOrigin = (request: IncomingMessage) => {
    const origin = request.headers.origin;
    if (origin === undefined) {
      // Browsers name the origin of every cross-site POST; a request without one is no browser's cross-site request.
      if (request.headers["sec-fetch-site"] === "cross-site")
        throw new HttpError(403, "PERMISSION_DENIED", "Origin: cross-site request refused");
      return;
    }
    const expected = deps.publicOrigin ?? `${deps.secure ? "https" : "http"}://${request.headers.host ?? ""}`;
    if (origin !== expected) throw new HttpError(403, "PERMISSION_DENIED", "Origin: must be the console's own origin");
  };
  const requireCsrf = (request: IncomingMessage, session: Session) => {
    checkOrigin(request);
    const header = request.headers[CSRF_HEADER];
    if (!csrfTokenMatches(session, typeof header === "string" ? header : undefined))
      throw new HttpError(403, "PERMISSION_DENIED", `${CSRF_HEADER}: missing or wrong CSRF token; reload the page`);
  };
  const sessionCookie = (value: string, maxAgeSeconds: number) =>
    `${cookieName}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${deps.secure ? "; Secure" : ""}`;

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? "/", "http://console.invalid");
    const path = url.pathname;
    const method = request.method ?? "GET";

    if (!path.startsWith("/api/")) {
      if (method !== "GET" && method !== "HEAD")
        throw new HttpError(405, "METHOD_NOT_ALLOWED", "only GET and HEAD", { Allow: "GET, HEAD" });
      return sendAsset(request, response, deps.assets, path);
    }

    if (path === "/api/session") {
      if (method === "GET") {
        const { session } = requireSession(request);
        return sendJson(response, 200, sessionJson(session));
      }
      if (method === "POST") return signIn(request, response);
      if (method === "DELETE") {
        const { id, session } = requireSession(request);
        requireCsrf(request, session);
        deps.sessions.delete(id);
        deps.logger.info(
          { address: deps.trustedProxies.clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"]) },
          "signed out",
        );
        response.setHeader("Set-Cookie", sessionCookie("", 0));
        response.writeHead(204).end();
        return;
      }
      throw new HttpError(405, "METHOD_NOT_ALLOWED", "GET, POST or DELETE", { Allow: "GET, POST, DELETE" });
    }

    const { session } = requireSession(request);

    if (path === "/api/overview" && method === "GET") return sendJson(response, 200, deps.live.overviewSnapshot());
    if (path === "/api/live/overview" && method === "GET") {
      deps.live.overview(new EventStream(response, () => deps.sessions.get(readCookie(request.headers.cookie, cookieName)) !== undefined));
      return;
    }
    if (path === "/api/live/calls" && method === "GET") {
      const sourceId = url.searchParams.get("source") ?? "";
      if (!ID_PATTERN.test(sourceId)) throw new HttpError(400, "INVALID_ARGUMENT", `source: ${ID_RULE}`);
      const recent = url.searchParams.get("recent") ?? "0";
      if (!/^\d{1,3}$/.test(recent) || Number(recent) > MAX_RECENT_CALLS)
        throw new HttpError(400, "INVALID_ARGUMENT", `recent: must be a whole number from 0 to ${MAX_RECENT_CALLS}`);
      const events = new EventStream(response, () => deps.sessions.get(readCookie(request.headers.cookie, cookieName)) !== undefined);
      await deps.live.calls(sourceId, events, Number(recent)).catch((error: unknown) => {
        deps.logger.warn({ err: error, sourceId }, "live debugger stream failed");
        events.send("failed", { message: "the calls stream could not be read; retrying" });
        events.close();
      });
      return;
    }

    const name = path.slice("/api/".length);
    const gatewayMethod = deps.gateway.methods.get(name);
    if (!gatewayMethod) {
      if (streaming.has(name))
        throw new HttpError(404, "UNIMPLEMENTED", `${name} streams; the console maps unary methods only (use a gRPC client)`);
      throw new HttpError(404, "NOT_FOUND", `no method ${name}`);
    }
    if (method !== "POST") throw new HttpError(405, "METHOD_NOT_ALLOWED", "gRPC methods are called with POST", { Allow: "POST" });
    requireCsrf(request, session);
    const body = await readJsonObject(request);
    const result = await deps.gateway.call(gatewayMethod, body).catch((error: unknown) => {
      if (error instanceof JsonRequestError) throw new HttpError(400, "INVALID_ARGUMENT", `request body: ${error.reason}`);
      throw error;
    });
    if (result.ok) return sendJson(response, 200, result.json);
    const status = httpStatusOf(result.code);
    if (status >= 500) deps.logger.warn({ method: name, code: statusName(result.code), message: result.message }, "a service call failed");
    return sendJson(response, status, errorBody(statusName(result.code), result.message));
  };

  const signIn = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    checkOrigin(request);
    const address = deps.trustedProxies.clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"]);
    const waitMs = deps.limiter.retryAfterMs(address);
    // Refused even with the right secret: were it let through, a locked guesser would still learn each right guess at full speed.
    if (waitMs > 0)
      throw new HttpError(429, "RESOURCE_EXHAUSTED", "too many failed sign-ins from this address; try again later", {
        "Retry-After": String(Math.ceil(waitMs / 1000)),
      });
    const body = await readJsonObject(request);
    const secret = typeof body.secret === "string" ? body.secret : "";
    if (!(await deps.signIn.accepts(secret))) {
      deps.limiter.failed(address);
      deps.logger.warn({ address }, "sign-in refused");
      throw new HttpError(401, "UNAUTHENTICATED", "secret: wrong admin token or password");
    }
    deps.limiter.succeeded(address);
    // A fresh session (and id) at every sign-in: an id planted before sign-in is worth nothing.
    deps.sessions.delete(readCookie(request.headers.cookie, cookieName));
    const { id, session } = deps.sessions.create();
    deps.logger.info({ address }, "signed in");
    response.setHeader("Set-Cookie", sessionCookie(id, Math.floor(deps.sessionMaxAgeMs / 1000)));
    sendJson(response, 200, sessionJson(session));
  };

  return (request, response) => {
    for (const [header, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(header, value);
    route(request, response).catch((error: unknown) => {
      if (response.headersSent) {
        response.destroy();
        return;
      }
      if (error instanceof HttpError) {
        for (const [header, value] of Object.entries(error.headers)) response.setHeader(header, value);
        return sendJson(response, error.status, errorBody(error.code, error.message));
      }
      deps.logger.error({ err: error, path: request.url?.split("?")[0] }, "console request failed");
      sendJson(response, 500, errorBody("INTERNAL", "internal error"));
    });
  };
}

function sessionJson(session: Session) {
  return { csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() };
}

/** A cookie's value from the Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim() || undefined;
  }
  return undefined;
}

async function readJsonObject(request: IncomingMessage): Promise<Record<string, unknown>> {
  const type = request.headers["content-type"] ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    request.resume();
    throw new HttpError(415, "INVALID_ARGUMENT", "Content-Type: must be application/json");
  }
  const declared = Number(request.headers["content-length"] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    request.resume();
    throw new HttpError(413, "INVALID_ARGUMENT", `request body: larger than ${MAX_BODY_BYTES} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, "INVALID_ARGUMENT", `request body: larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  let json: unknown;
  try {
    json = text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    throw new HttpError(400, "INVALID_ARGUMENT", "request body: is not valid JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new HttpError(400, "INVALID_ARGUMENT", "request body: must be a JSON object");
  return json as Record<string, unknown>;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-store",
  });
  response.end(text);
}

/** A file of the web app; any other path is a page of the app, answered with index.html. */
function sendAsset(request: IncomingMessage, response: ServerResponse, assets: Map<string, WebAsset>, path: string): void {
  const looksLikeFile = /\.[a-z0-9]+$/i.test(path);
  const asset = assets.get(path) ?? (looksLikeFile ? undefined : assets.get("/"));
  if (!asset) throw new HttpError(404, "NOT_FOUND", "no such file");
  const headers: Record<string, string | number> = {
    "Content-Type": asset.contentType,
    ETag: asset.etag,
    "Cache-Control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
    Vary: "Accept-Encoding",
  };
  if (request.headers["if-none-match"] === asset.etag) {
    response.writeHead(304, headers).end();
    return;
  }
  const gzip = asset.gzip && /\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""));
  const body = gzip ? asset.gzip! : asset.body;
  if (gzip) headers["Content-Encoding"] = "gzip";
  headers["Content-Length"] = body.length;
  response.writeHead(200, headers);
  response.end(request.method === "HEAD" ? undefined : body);
}
