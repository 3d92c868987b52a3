import { commonEnvSchema, parseEnv, portVar, positiveIntVar } from "@switchyard/platform";
import { z } from "zod";
import type { RateLimit } from "./rate-limit.js";

export const DEFAULT_GRPC_PORT = 50051;
export const DEFAULT_HTTP_PORT = 8080;
export const DEFAULT_OPS_PORT = 9101;
export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
export const DEFAULT_DUPLICATE_WINDOW_MS = 10 * 60_000;
export const DEFAULT_CALLS_MAX_AGE_MS = 7 * 24 * 3600_000;
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/** SDKs send their headers at once; 10 s is ample on a slow mobile link, and bounds a client that never finishes them. */
export const DEFAULT_HTTP_HEADERS_TIMEOUT_MS = 10_000;
/** Sending a whole request (500 KB at most) in 30 s takes 17 KB/s; Node's default, 300 s, lets a trickling client hold a connection ten times longer. */
export const DEFAULT_HTTP_REQUEST_TIMEOUT_MS = 30_000;
/**
 * Open connections per ingest process (idle keep-alive ones included). SDKs
 * keep a few connections each; 10,000 is far above that for a process's
 * share of clients, and bounds the memory (tens of KB a connection) and file
 * descriptors slow or idle clients can take.
 */
export const DEFAULT_HTTP_MAX_CONNECTIONS = 10_000;

export const ingestEnvSchema = commonEnvSchema
  .extend({
    INGEST_GRPC_PORT: portVar(DEFAULT_GRPC_PORT).describe("gRPC port (IngestService); 0 picks a free one."),
    INGEST_HTTP_PORT: portVar(DEFAULT_HTTP_PORT).describe("Segment-compatible HTTP API port; 0 picks a free one."),
    /** /healthz, /readyz and /metrics. */
    INGEST_OPS_PORT: portVar(DEFAULT_OPS_PORT).describe("Ops port: /healthz, /readyz and /metrics, without authentication."),
    INGEST_PUBLISH_TIMEOUT_MS: positiveIntVar(DEFAULT_PUBLISH_TIMEOUT_MS).describe(
      "How long a batch waits for JetStream's acknowledgement before the request is answered UNAVAILABLE (HTTP 503).",
    ),
    SWITCHYARD_DUPLICATE_WINDOW_MS: positiveIntVar(DEFAULT_DUPLICATE_WINDOW_MS).describe(
      "A batch re-sent with the same id within this window is stored once (the calls stream's duplicate window).",
    ),
    SWITCHYARD_CALLS_MAX_AGE_MS: positiveIntVar(DEFAULT_CALLS_MAX_AGE_MS).describe(
      "How long calls stay in the calls stream (and blocked calls in the filtered stream).",
    ),
    SHUTDOWN_GRACE_MS: positiveIntVar(DEFAULT_SHUTDOWN_GRACE_MS).describe(
      "After SIGTERM, how long calls in flight on the service's gRPC APIs get to finish before they are cancelled.",
    ),
    /** HTTP API: time a client has to send a request's headers (and, with TLS, to finish the handshake). */
    INGEST_HTTP_HEADERS_TIMEOUT_MS: positiveIntVar(DEFAULT_HTTP_HEADERS_TIMEOUT_MS).describe(
      "HTTP API: time a client has to send a request's headers (with TLS, to finish the handshake too); then 408 and the connection is closed. At most INGEST_HTTP_REQUEST_TIMEOUT_MS.",
    ),
    /** HTTP API: time a client has to send a whole request; past it the answer is 408 and the connection is closed. */
    INGEST_HTTP_REQUEST_TIMEOUT_MS: positiveIntVar(DEFAULT_HTTP_REQUEST_TIMEOUT_MS).describe(
      "HTTP API: time a client has to send a whole request; then 408 and the connection is closed. Raise it for clients on very slow links.",
    ),
    /** HTTP API: open connections per process; connections over it are closed as soon as they are accepted. */
    INGEST_HTTP_MAX_CONNECTIONS: positiveIntVar(DEFAULT_HTTP_MAX_CONNECTIONS).describe(
      "HTTP API: open connections per process (each worker), idle keep-alive ones included; one over it is closed as soon as it is accepted. Keep the open-file limit above it.",
    ),
    /**
     * The URL browsers reach this HTTP API at (e.g. "https://events.example.com"), served to
     * analytics.js by GET /v1/projects/<write key>/settings. Unset: the request's Host header and
     * this server's own scheme (set it behind a proxy that terminates TLS).
     */
    INGEST_PUBLIC_URL: z
      .string()
      .refine(
        isPublicUrl,
        'must be an absolute http or https URL without credentials, query or #fragment (e.g. "https://events.example.com")',
      )
      .transform((value) => value.replace(/\/+$/, ""))
      .optional()
      .describe(
        "URL browsers reach the HTTP API at (e.g. `https://events.example.com`), served to analytics.js by `GET /v1/projects/<write key>/settings`. Unset: the request's Host header and this server's scheme.",
      ),
    /** Calls per second each source may send (per ingest process). Unset: no rate limit. */
    INGEST_RATE_LIMIT_PER_SECOND: z.coerce
      .number({ error: "must be a number" })
      .positive("must be positive")
      .optional()
      .describe(
        "Calls per second each source may send, per ingest process; over it, RESOURCE_EXHAUSTED or HTTP 429 with Retry-After. Unset: no rate limit.",
      ),
    /** Calls a source may send at once; default: one second's worth (at least 1). */
    INGEST_RATE_LIMIT_BURST: z.coerce
      .number({ error: "must be a number" })
      .int("must be an integer")
      .positive("must be positive")
      .optional()
      .describe("Calls a source may send at once (needs INGEST_RATE_LIMIT_PER_SECOND). Unset: one second's worth, at least 1."),
  })
  .superRefine((env, context) => {
    // Node refuses a headers timeout longer than the request timeout, which covers the headers too.
    if (env.INGEST_HTTP_HEADERS_TIMEOUT_MS > env.INGEST_HTTP_REQUEST_TIMEOUT_MS) {
      context.addIssue({
        code: "custom",
        path: ["INGEST_HTTP_HEADERS_TIMEOUT_MS"],
        message: `must not be more than INGEST_HTTP_REQUEST_TIMEOUT_MS (${env.INGEST_HTTP_REQUEST_TIMEOUT_MS})`,
      });
    }
    if (env.INGEST_RATE_LIMIT_BURST !== undefined && env.INGEST_RATE_LIMIT_PER_SECOND === undefined) {
      context.addIssue({
        code: "custom",
        path: ["INGEST_RATE_LIMIT_BURST"],
        message: "needs INGEST_RATE_LIMIT_PER_SECOND (the limit is off without it)",
      });
    }
  });

function isPublicUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      (url.protocol === "http:" || url.protocol === "https:") &&
      url.username === "" &&
      url.password === "" &&
      url.search === "" &&
      !value.includes("#")
    );
  } catch {
    return false;
  }
}

export type IngestConfig = z.output<typeof ingestEnvSchema>;

export function loadIngestConfig(env: NodeJS.ProcessEnv = process.env): IngestConfig {
  return parseEnv(ingestEnvSchema, env);
}

/** The HTTP API's timeouts and connection cap, from the settings. */
export interface HttpLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
}

/** The HTTP limits the settings ask for. */
export function httpLimitsOf(config: IngestConfig): HttpLimits {
  return {
    headersTimeoutMs: config.INGEST_HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: config.INGEST_HTTP_REQUEST_TIMEOUT_MS,
    maxConnections: config.INGEST_HTTP_MAX_CONNECTIONS,
  };
}

/** The rate limit the settings ask for, or undefined when it is off (the default). */
export function rateLimitOf(config: IngestConfig): RateLimit | undefined {
  const perSecond = config.INGEST_RATE_LIMIT_PER_SECOND;
  if (perSecond === undefined) return undefined;
  return { perSecond, burst: config.INGEST_RATE_LIMIT_BURST ?? Math.max(1, Math.ceil(perSecond)) };
}
