import type { Logger } from "pino";
import { isConfigError } from "./errors.js";
import type { Readiness } from "./ops/readiness.js";

/**
 * JetStream API errors a cluster recovers from by itself: it is still electing a meta or stream
 * leader, a peer is down so a replicated stream cannot be placed yet, or another replica created
 * the same stream a moment before us (the next try finds it).
 */
const TRANSIENT_JETSTREAM_CODES = new Set([
  10005, // no suitable peers for placement
  10008, // JetStream system temporarily unavailable
  10023, // insufficient resources
  10058, // stream name already in use (a racing create)
  10074, // stream is offline
]);

/** Whether a start-up step that failed this way may succeed if tried again later. */
export function isTransientStartupError(error: unknown): boolean {
  if (isConfigError(error)) return false;
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (current.name === "JetStreamNotEnabled" || /jetstream (is )?not enabled/i.test(current.message)) return false;
    if (current.name === "TimeoutError" || current.message === "timeout") return true;
    const code = (current as { code?: unknown }).code;
    if (current.name === "JetStreamApiError" && typeof code === "number" && TRANSIENT_JETSTREAM_CODES.has(code)) return true;
    if (/temporarily unavailable|insufficient resources|no suitable peers|leader|offline/i.test(current.message)) return true;
  }
  return false;
}

export interface StartupPatienceOptions {
  logger: Logger;
  /** Told what start-up waits for, so /readyz names it. */
  readiness?: Readiness | undefined;
  /** First wait between tries; it doubles up to `maxDelayMs`, with jitter so replicas don't retry in step. */
  firstDelayMs?: number;
  maxDelayMs?: number;
  /** At most one "waiting for" line this often per step. */
  logEveryMs?: number;
}

/**
 * Runs start-up steps patiently: a step that fails with an error the cluster recovers from (a
 * leader not elected yet, a peer down) is tried again with backoff, and a line every few seconds
 * names what start-up waits for. Any other error ends start-up, named by its step.
 */
export class StartupPatience {
  private readonly firstDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly logEveryMs: number;

  constructor(private readonly options: StartupPatienceOptions) {
    this.firstDelayMs = options.firstDelayMs ?? 200;
    this.maxDelayMs = options.maxDelayMs ?? 5_000;
    this.logEveryMs = options.logEveryMs ?? 5_000;
  }

  /** Runs `step` until it succeeds or fails for good; `what` names it in logs, /readyz and the final error. */
  async run<T>(what: string, step: () => Promise<T>): Promise<T> {
    const { logger, readiness } = this.options;
    readiness?.starting(what);
    const startedAt = Date.now();
    let delay = this.firstDelayMs;
    let loggedAt: number | undefined;
    for (;;) {
      try {
        const result = await step();
        if (loggedAt !== undefined) logger.info({ step: what, waitedMs: Date.now() - startedAt }, `${what}: ready`);
        return result;
      } catch (error) {
        if (!isTransientStartupError(error)) throw namedFailure(what, error);
        const reason = error instanceof Error ? error.message : String(error);
        readiness?.starting(`waiting for ${what}: ${reason}`);
        const now = Date.now();
        if (loggedAt === undefined || now - loggedAt >= this.logEveryMs) {
          loggedAt = now;
          logger.warn({ step: what, reason, waitedMs: now - startedAt }, `waiting for ${what}: ${reason}; trying again`);
        }
        await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random() / 2)));
        delay = Math.min(this.maxDelayMs, delay * 2);
      }
    }
  }
}

/** The step's name in front of an error that ends start-up; settings errors keep their own line. */
function namedFailure(what: string, error: unknown): unknown {
  if (isConfigError(error) || !(error instanceof Error)) return error;
  if (error.message.startsWith(`${what}: `)) return error;
  return new Error(`${what}: ${error.message}`, { cause: error });
}
