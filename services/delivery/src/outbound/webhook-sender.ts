import { rootCertificates } from "node:tls";
import { Pool, type Dispatcher } from "undici";
import { AddressPolicy } from "./address-policy.js";
import { ADDRESS_REFUSED, guardedConnector } from "./guarded-connector.js";
import { isCertificateError, outcomeOfStatus, parseRetryAfter, type AttemptOutcome } from "../retries/retry-policy.js";

/** What one request to one URL came to. */
export interface SendResult {
  /** HTTP status; 0 when no response arrived. */
  status: number;
  /** Why there was no usable response ("" when there was one). */
  error: string;
  latencyMs: number;
  outcome: AttemptOutcome;
  retryAfterMs?: number;
  /** The response's headers as undici gave them ([name, value, …]), for the attempt log; absent without a response. */
  responseHeaders?: Buffer[] | undefined;
  /** The first RESPONSE_BODY_KEPT bytes of the response body (absent when it had none). */
  responseBody?: Buffer | undefined;
  /** The body went on past what was kept (or was cut unread, being over the limit). */
  responseBodyTruncated?: boolean;
  /**
   * The exchange ended its connection although the receiver answered: the body was cut at the
   * limit, or the receiver said `Connection: close`. Its next request needs a new connection.
   */
  connectionClosed?: boolean;
}

/** The methods requests are sent with. */
export type SendMethod = "POST" | "PUT" | "PATCH";

/** What sends the webhooks: WebhookSender itself, or ChurnIsolatingSender in front of it. */
export interface Sender {
  /** `headers`: a flat [name, value, …] list; `poolKey`: whose connections to use (the destination). */
  send(url: string, headers: string[], body: Buffer, poolKey?: string, method?: SendMethod): Promise<SendResult>;
  close(): Promise<void>;
}

/** A destination's pool for one origin, and when it was last used. */
interface PoolEntry {
  pool: Pool;
  inFlight: number;
  usedAt: number;
}

/** A pool nothing was sent through for this long is closed (its connections closed long before: keep-alive is 10 s). */
const IDLE_POOL_MS = 5 * 60_000;
const IDLE_POOL_SWEEP_MS = 60_000;

/** Bytes of each response body kept for the attempt log; the rest is drained unread as before. */
export const RESPONSE_BODY_KEPT = 4096;

export interface SenderOptions {
  /** A response must arrive within this time (docs/contract.md §7.4: 5 s). */
  timeoutMs: number;
  /** Response bodies are read up to this size and discarded; receivers cannot make us buffer more. */
  maxResponseBytes: number;
  /** Keep-alive connections per receiver origin. */
  connectionsPerOrigin: number;
  /** Extra trusted CA certificates (PEM), for receivers behind a private CA. */
  extraCaCertificates?: string[];
  /**
   * Which addresses receivers may have (SSRF protection). Default: public
   * addresses only; private, loopback, link-local, metadata and other
   * special-purpose addresses need the operator's allowlist.
   */
  addressPolicy?: AddressPolicy;
}

/**
 * Posts webhook bodies with undici: certificates fully verified (a
 * self-signed receiver gets no request), redirects never followed (the
 * dispatcher API has no redirect handling; a 3xx is the outcome), every
 * request bounded by the timeout, and only to addresses the address policy
 * allows, checked in the connect path after DNS resolution.
 *
 * Each destination (`poolKey`) gets its own connection pool per origin, so
 * destinations that share a receiver origin never wait for each other's
 * connections: a destination that stops answering cannot stall a healthy one
 * on the same host. Requests go through undici's dispatcher API with a small
 * handler: no response stream and no AbortSignal per request, which is most of
 * what a POST costs at thousands per second.
 *
 * The pools are kept here rather than in an undici Agent: an Agent closes an
 * origin's pool whenever its last connection closes and makes a new one for
 * the next request, so a receiver whose every answer closes the connection (a
 * body over the limit, a reset) cost a pool, a client and a "destroyed" error
 * per request. A pool kept reconnects its clients instead, for less CPU per
 * request cut at the limit. Pools unused for IDLE_POOL_MS are closed.
 */
export class WebhookSender implements Sender {
  private readonly pools = new Map<string, PoolEntry>();
  private readonly targets = new Map<string, { origin: string; path: string }>();
  private readonly sweep: NodeJS.Timeout;

  constructor(private readonly options: SenderOptions) {
    this.sweep = setInterval(() => this.closeIdlePools(Date.now()), IDLE_POOL_SWEEP_MS).unref();
  }

  /** `headers`: a flat [name, value, …] list. */
  send(url: string, headers: string[], body: Buffer, poolKey = "", method: SendMethod = "POST"): Promise<SendResult> {
    let target: { origin: string; path: string };
    let entry: PoolEntry;
    try {
      target = this.target(url);
      entry = this.poolFor(poolKey, target.origin);
    } catch (error) {
      return Promise.resolve({ status: 0, ...describeFailure(error, this.options.timeoutMs), latencyMs: 0 });
    }
    entry.inFlight++;
    return new Promise<SendResult>((resolve) => {
      const done = (result: SendResult) => {
        entry.inFlight--;
        entry.usedAt = Date.now();
        resolve(result);
      };
      const handler = new PostHandler(done, this.options.timeoutMs, this.options.maxResponseBytes);
      entry.pool.dispatch({ origin: target.origin, path: target.path, method, headers, body }, handler);
    });
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.all([...this.pools.values()].map((entry) => entry.pool.close()));
    this.pools.clear();
  }

  /** Closes the pools nothing was sent through for IDLE_POOL_MS (a destination deleted, or its URL changed). */
  closeIdlePools(now: number): void {
    for (const [key, entry] of this.pools) {
      if (entry.inFlight > 0 || now - entry.usedAt < IDLE_POOL_MS) continue;
      this.pools.delete(key);
      void entry.pool.close().catch(() => undefined);
    }
  }

  /** Pools open now (for tests). */
  get poolCount(): number {
    return this.pools.size;
  }

  private poolFor(poolKey: string, origin: string): PoolEntry {
    const key = `${poolKey}\n${origin}`;
    let entry = this.pools.get(key);
    if (!entry) {
      const { options } = this;
      const pool = new Pool(origin, {
        connections: options.connectionsPerOrigin,
        keepAliveTimeout: 10_000,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        connect: guardedConnector(options.addressPolicy ?? new AddressPolicy(), {
          timeout: options.timeoutMs,
          rejectUnauthorized: true,
          // Node's `ca` replaces the well-known roots instead of adding to them; keep them, so that
          // trusting a private CA does not turn every public HTTPS receiver into a certificate error.
          ...(options.extraCaCertificates ? { ca: [...rootCertificates, ...options.extraCaCertificates] } : {}),
        }),
      });
      entry = { pool, inFlight: 0, usedAt: Date.now() };
      this.pools.set(key, entry);
    }
    return entry;
  }

  /** Origin and path of a URL, parsed once per URL. */
  private target(url: string): { origin: string; path: string } {
    let target = this.targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      if (this.targets.size >= 10_000) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }
}

/**
 * One POST's undici handler: records the status (and Retry-After), drains and
 * discards the body up to the limit, and bounds the whole exchange by the
 * timeout. A class rather than closures: it is made for every request.
 */
class PostHandler implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private readonly timer: NodeJS.Timeout;
  private status = 0;
  private retryAfter: string | undefined;
  private rawHeaders: Buffer[] | undefined;
  /** The body's first RESPONSE_BODY_KEPT bytes: views of undici's chunks, no copy (usually one small chunk). */
  private kept: Buffer | undefined;
  private keptMore: Buffer[] | undefined;
  private keptBytes = 0;
  private cut = false;
  /** The receiver answered `Connection: close`. */
  private closing = false;
  private received = 0;
  private done = false;
  private timedOut = false;
  private abortRequest: ((reason?: Error) => void) | undefined;

  constructor(
    private readonly resolve: (result: SendResult) => void,
    private readonly timeoutMs: number,
    private readonly maxResponseBytes: number,
  ) {
    this.timer = setTimeout(() => this.onTimeout(), timeoutMs);
  }

  onConnect(abort: (reason?: Error) => void): void {
    this.abortRequest = abort;
    if (this.timedOut) abort(timeoutError(this.timeoutMs));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx: the real answer follows
    this.status = statusCode;
    this.rawHeaders = rawHeaders;
    if (statusCode === 429 || statusCode === 503) this.retryAfter = rawHeaderValue(rawHeaders, "retry-after");
    this.closing = rawHeaderValue(rawHeaders, "connection")?.toLowerCase() === "close";
    // A body announced over the cap would be cut anyway: cut it before reading any of it.
    if (Number(rawHeaderValue(rawHeaders, "content-length")) > this.maxResponseBytes) {
      this.cut = true;
      this.abort(BODY_OVER_LIMIT);
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    // Drained (capped) so the connection can be reused; only the first few KB are kept, for the attempt log.
    if (this.keptBytes < RESPONSE_BODY_KEPT) {
      const room = RESPONSE_BODY_KEPT - this.keptBytes;
      // A view of a small chunk; a copy of the start of a big one, which is not kept alive for a few KB.
      const part = chunk.length <= room ? chunk : Buffer.from(chunk.subarray(0, room));
      if (this.kept === undefined) this.kept = part;
      else (this.keptMore ??= [this.kept]).push(part);
      this.keptBytes += part.length;
    }
    this.received += chunk.length;
    if (this.received > this.maxResponseBytes) {
      this.cut = true;
      this.abort(BODY_OVER_LIMIT);
    }
    return true;
  }

  onComplete(): void {
    this.finish(undefined);
  }

  onError(error: Error): void {
    this.finish(error);
  }

  /**
   * Ends the exchange and closes its connection. undici closes it with an Error of its own, whose
   * stack V8 captures and Node's stream destroy then formats; made here, with no stack frames, that
   * costs a small part of it, for every response cut at the limit and every timeout: work a receiver
   * can make us do as often as we send to it.
   */
  private abort(reason: Error): void {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      this.abortRequest?.(reason);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }

  private onTimeout(): void {
    this.timedOut = true;
    const error = timeoutError(this.timeoutMs);
    this.abort(error);
    this.finish(error);
  }

  private finish(error: unknown): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    const latencyMs = Math.round(performance.now() - this.started);
    const { status, retryAfter } = this;
    // With a status, the response counts even if reading its (discarded) body failed.
    if (status >= 200) {
      this.resolve({
        status,
        error: "",
        latencyMs,
        outcome: outcomeOfStatus(status),
        retryAfterMs: retryAfter === undefined ? undefined : parseRetryAfter(retryAfter, Date.now()),
        responseHeaders: this.rawHeaders,
        responseBody: this.keptMore ? Buffer.concat(this.keptMore) : this.kept,
        // An error after the status means the body ended early (cut at the limit, a timeout, a reset).
        responseBodyTruncated: this.cut || error !== undefined || this.received > this.keptBytes,
        connectionClosed: this.cut || this.closing,
      });
    } else {
      this.resolve({ status: 0, ...describeFailure(error, this.timeoutMs), latencyMs });
    }
  }
}

/** The reason a response is cut; one object, as it is never shown (the status already counts). */
const BODY_OVER_LIMIT = new Error("response body over the limit");

function timeoutError(timeoutMs: number): Error {
  const error = new Error(`no response within ${timeoutMs} ms`);
  error.name = "TimeoutError";
  return error;
}

/**
 * A header's first value from undici's raw [name, value, name, value, …] list; `name` in lower
 * case. Names are compared as bytes, ASCII letters in either case: no string is made of the names
 * it passes, for every response.
 */
function rawHeaderValue(rawHeaders: Buffer[] | null, name: string): string | undefined {
  if (!rawHeaders) return undefined;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (isHeaderName(rawHeaders[i]!, name)) return rawHeaders[i + 1]!.toString();
  }
  return undefined;
}

function isHeaderName(bytes: Buffer, name: string): boolean {
  if (bytes.length !== name.length) return false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    // Upper-case ASCII letters compare as lower case; every other byte as it is.
    if ((byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte) !== name.charCodeAt(i)) return false;
  }
  return true;
}

/** A readable reason and whether trying again could help. */
export function describeFailure(error: unknown, timeoutMs: number): { error: string; outcome: AttemptOutcome } {
  const code = errorCode(error);
  const name = error instanceof Error ? error.name : "";
  if (code === ADDRESS_REFUSED) {
    // The operator's choice, not a passing condition: retrying would refuse again. A dead letter can be
    // replayed once the allowlist (or the destination's URL) is fixed.
    return { error: `address refused: ${rootMessage(error)}`, outcome: "permanent" };
  }
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
    case "UND_ERR_NOT_SUPPORTED": // a static header undici refuses (Expect), stored before save-time checks
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
