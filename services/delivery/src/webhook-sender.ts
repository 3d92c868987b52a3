import { rootCertificates } from "node:tls";
import { Agent, request } from "undici";
import { isCertificateError, outcomeOfStatus, parseRetryAfter, type AttemptOutcome } from "./retry-policy.js";

/** What one POST to one URL came to. */
export interface SendResult {
  /** HTTP status; 0 when no response arrived. */
  status: number;
  /** Why there was no usable response ("" when there was one). */
  error: string;
  latencyMs: number;
  outcome: AttemptOutcome;
  retryAfterMs?: number;
}

export interface SenderOptions {
  /** A response must arrive within this time (the spec: 5 s). */
  timeoutMs: number;
  /** Response bodies are read up to this size and discarded; receivers cannot make us buffer more. */
  maxResponseBytes: number;
  /** Keep-alive connections per receiver origin. */
  connectionsPerOrigin: number;
  /** Extra trusted CA certificates (PEM), for receivers behind a private CA. */
  extraCaCertificates?: string[];
}

/**
 * Posts webhook bodies with undici: certificates fully verified (a
 * self-signed receiver gets no request), redirects never followed, every
 * request bounded by the timeout.
 */
export class WebhookSender {
  private readonly agent: Agent;

  constructor(private readonly options: SenderOptions) {
    this.agent = new Agent({
      connections: options.connectionsPerOrigin,
      keepAliveTimeout: 10_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: {
        timeout: options.timeoutMs,
        rejectUnauthorized: true,
        // Node's `ca` replaces the well-known roots instead of adding to them; keep them, so that
        // trusting a private CA does not turn every public HTTPS receiver into a certificate error.
        ...(options.extraCaCertificates ? { ca: [...rootCertificates, ...options.extraCaCertificates] } : {}),
      },
    });
  }

  async send(url: string, headers: Record<string, string>, body: Buffer): Promise<SendResult> {
    const started = performance.now();
    const latency = () => Math.round(performance.now() - started);
    try {
      const response = await request(url, {
        method: "POST",
        headers,
        body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      // Drain (capped) so the connection can be reused; the content itself is not used.
      await response.body.dump({ limit: this.options.maxResponseBytes }).catch(() => undefined);
      const outcome = outcomeOfStatus(response.statusCode);
      const retryAfter =
        response.statusCode === 429 || response.statusCode === 503 ? headerValue(response.headers["retry-after"]) : undefined;
      return {
        status: response.statusCode,
        error: "",
        latencyMs: latency(),
        outcome,
        ...(retryAfter === undefined ? {} : { retryAfterMs: parseRetryAfter(retryAfter, Date.now()) }),
      };
    } catch (error) {
      return { status: 0, ...describeFailure(error, this.options.timeoutMs), latencyMs: latency() };
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A readable reason and whether trying again could help. */
export function describeFailure(error: unknown, timeoutMs: number): { error: string; outcome: AttemptOutcome } {
  const code = errorCode(error);
  const name = error instanceof Error ? error.name : "";
  if (isCertificateError(code)) {
    return { error: `TLS certificate: ${rootMessage(error)} (${code})`, outcome: "permanent" };
  }
  if (
    name === "TimeoutError" ||
    name === "AbortError" ||
    code === "UND_ERR_HEADERS_TIMEOUT" ||
    code === "UND_ERR_BODY_TIMEOUT" ||
    code === "UND_ERR_CONNECT_TIMEOUT"
  ) {
    return { error: `timeout: no response within ${timeoutMs} ms`, outcome: "retryable" };
  }
  switch (code) {
    case "ECONNREFUSED":
      return { error: "connection refused", outcome: "retryable" };
    case "ECONNRESET":
    case "UND_ERR_SOCKET":
    case "EPIPE":
      return { error: "connection reset", outcome: "retryable" };
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return { error: "DNS lookup failed", outcome: "retryable" };
    case "ERR_INVALID_URL":
    case "UND_ERR_INVALID_ARG":
      return { error: `invalid request: ${rootMessage(error)}`, outcome: "permanent" };
    default:
      return { error: `${code ?? "error"}: ${rootMessage(error)}`, outcome: "retryable" };
  }
}

/** undici wraps socket errors; the useful code may sit on a cause. */
function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (typeof current === "object" && "code" in current && typeof current.code === "string") return current.code;
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}

function rootMessage(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}
