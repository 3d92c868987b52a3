import { OptionsError } from "./errors.js";
import { debugEnabled, silentLogger, stderrLogger, type Logger } from "./logger.js";
import type { RetryPolicy } from "./retry.js";

/** Options of `new Analytics(writeKey, options)`. Every one is optional. */
export interface AnalyticsOptions {
  /**
   * The ingest service's gRPC target: `host:port`, optionally with a scheme: `grpc://` (plaintext) or
   * `grpcs://` (TLS). Default `127.0.0.1:50051`.
   */
  endpoint?: string;
  /**
   * TLS: `true` to verify the server against the system's CAs, or `{ rootCerts }` (PEM) for a private CA;
   * add `certChain` and `privateKey` (PEM) to present a client certificate (ingest with
   * SWITCHYARD_TLS_CLIENT_CA_FILE). Default: plaintext, unless the endpoint starts with `grpcs://`.
   */
  tls?: boolean | { rootCerts?: string | Buffer; certChain?: string | Buffer; privateKey?: string | Buffer };
  /** Calls queued before a batch is sent; also the most calls a batch holds. 1 sends each call at once. Default 20. */
  flushAt?: number;
  /**
   * Flush interval, in ms, counted from the last flush: queued calls are sent at the next multiple of it
   * after the last batch went out, so none waits longer. Default 5,000.
   */
  flushAfter?: number;
  /**
   * Most calls held at once: queued, being sent, or waiting to be retried. A call beyond it is refused
   * (QueueFullError, and a "failed" outcome with kind "queue_full"). Default 10,000.
   */
  maxQueueSize?: number;
  /** Most bytes of encoded calls held at once; refused beyond it like maxQueueSize. Default 16 MiB. */
  maxQueueBytes?: number;
  /** Batches sent (or waiting to be retried) at once. Default 4. */
  maxInFlight?: number;
  /** Deadline of each request, in ms. Default 10,000. */
  timeout?: number;
  /** Retry schedule of failed sends: `{ initialDelayMs: 100, maxDelayMs: 5000, maxElapsedMs: 60000 }` by default. */
  retry?: Partial<RetryPolicy>;
  /** Time close() waits for the last batches when called without a timeout, in ms. Default 10,000. */
  closeTimeout?: number;
  /**
   * Where log lines go. Debug lines are written only when debugging is on (`debug`, or DEBUG=analytics);
   * warnings and errors always reach a logger given here. Without one, lines go to stderr when debugging
   * is on, and nothing is printed otherwise.
   */
  logger?: Logger;
  /** Turns debug logging on or off. Default: on when the DEBUG environment variable names `analytics`. */
  debug?: boolean;
}

export interface ResolvedOptions {
  target: string;
  tls: false | { rootCerts?: Buffer; certChain?: Buffer; privateKey?: Buffer };
  flushAt: number;
  flushAfter: number;
  maxQueueSize: number;
  maxQueueBytes: number;
  maxInFlight: number;
  timeout: number;
  retry: RetryPolicy;
  closeTimeout: number;
  logger: Logger;
  debug: boolean;
}

export const DEFAULTS = {
  endpoint: "127.0.0.1:50051",
  flushAt: 20,
  flushAfter: 5_000,
  maxQueueSize: 10_000,
  maxQueueBytes: 16 * 1024 * 1024,
  maxInFlight: 4,
  timeout: 10_000,
  retry: { initialDelayMs: 100, maxDelayMs: 5_000, maxElapsedMs: 60_000 },
  closeTimeout: 10_000,
} as const;

/** Every option's name: a name not in this list is refused (a typo would otherwise be ignored silently). */
const OPTION_NAMES: readonly (keyof AnalyticsOptions)[] = [
  "endpoint",
  "tls",
  "flushAt",
  "flushAfter",
  "maxQueueSize",
  "maxQueueBytes",
  "maxInFlight",
  "timeout",
  "retry",
  "closeTimeout",
  "logger",
  "debug",
];
const RETRY_NAMES: readonly (keyof RetryPolicy)[] = ["initialDelayMs", "maxDelayMs", "maxElapsedMs"];
const TLS_NAMES = ["rootCerts", "certChain", "privateKey"] as const;

/** Fills in defaults and checks every value; throws OptionsError naming the option. */
export function resolveOptions(options: AnalyticsOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedOptions {
  knownKeys("options", "", options, OPTION_NAMES);
  if (options.retry !== undefined) knownKeys("retry", "retry.", options.retry, RETRY_NAMES);
  if (typeof options.tls === "object" && options.tls !== null) knownKeys("tls", "tls.", options.tls, TLS_NAMES);
  const endpoint = options.endpoint ?? DEFAULTS.endpoint;
  if (typeof endpoint !== "string" || endpoint === "") throw new OptionsError("endpoint", "must be a non-empty string (host:port)");
  const scheme = /^([a-z]+):\/\//.exec(endpoint)?.[1];
  if (scheme !== undefined && scheme !== "grpc" && scheme !== "grpcs") {
    throw new OptionsError("endpoint", `scheme must be grpc:// or grpcs://, not ${scheme}://`);
  }
  const target = scheme === undefined ? endpoint : endpoint.slice(scheme.length + 3);
  const tlsOption = options.tls ?? scheme === "grpcs";
  const pem = (value: string | Buffer | undefined) => (value === undefined ? undefined : Buffer.from(value));
  const tls =
    tlsOption === false
      ? false
      : tlsOption === true
        ? {}
        : { rootCerts: pem(tlsOption.rootCerts), certChain: pem(tlsOption.certChain), privateKey: pem(tlsOption.privateKey) };
  if (tls && (tls.certChain === undefined) !== (tls.privateKey === undefined)) {
    throw new OptionsError("tls", "certChain and privateKey go together");
  }
  const debug = options.debug ?? debugEnabled(env.DEBUG);
  const retry = { ...DEFAULTS.retry, ...options.retry };
  const resolved: ResolvedOptions = {
    target,
    tls,
    flushAt: integer("flushAt", options.flushAt ?? DEFAULTS.flushAt, 1),
    flushAfter: integer("flushAfter", options.flushAfter ?? DEFAULTS.flushAfter, 1),
    maxQueueSize: integer("maxQueueSize", options.maxQueueSize ?? DEFAULTS.maxQueueSize, 1),
    maxQueueBytes: integer("maxQueueBytes", options.maxQueueBytes ?? DEFAULTS.maxQueueBytes, 64 * 1024),
    maxInFlight: integer("maxInFlight", options.maxInFlight ?? DEFAULTS.maxInFlight, 1),
    timeout: integer("timeout", options.timeout ?? DEFAULTS.timeout, 1),
    retry: {
      initialDelayMs: integer("retry.initialDelayMs", retry.initialDelayMs, 1),
      maxDelayMs: integer("retry.maxDelayMs", retry.maxDelayMs, 1),
      maxElapsedMs: integer("retry.maxElapsedMs", retry.maxElapsedMs, 0),
    },
    closeTimeout: integer("closeTimeout", options.closeTimeout ?? DEFAULTS.closeTimeout, 0),
    logger: options.logger ?? (debug ? stderrLogger : silentLogger),
    debug,
  };
  return resolved;
}

function integer(option: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new OptionsError(option, `must be an integer of at least ${min}`);
  }
  return value;
}

/** Refuses a value that is not a plain object, and any key `valid` does not list, suggesting the nearest valid name. */
function knownKeys(option: string, prefix: string, value: unknown, valid: readonly string[]): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new OptionsError(option, "must be an object");
  for (const key of Object.keys(value)) {
    if (valid.includes(key)) continue;
    const nearest = nearestName(key, valid);
    const hint = nearest === undefined ? `valid options: ${valid.join(", ")}` : `did you mean ${prefix}${nearest}?`;
    throw new OptionsError(`${prefix}${key}`, `unknown option; ${hint}`);
  }
}

/** The valid name closest to `key` (case-insensitive edit distance), if it is close enough to be a typo. */
export function nearestName(key: string, valid: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of valid) {
    const distance = editDistance(lower, name.toLowerCase());
    if (best === undefined || distance < best.distance) best = { name, distance };
  }
  if (best === undefined) return undefined;
  return best.distance <= Math.max(2, Math.floor(best.name.length / 3)) ? best.name : undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
