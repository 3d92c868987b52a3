import { status } from "@grpc/grpc-js";

/** How failed sends are retried. Every field has a default (see resolveOptions). */
export interface RetryPolicy {
  /** Delay before the first retry, in ms; it doubles with each retry (before jitter). Default 100. */
  initialDelayMs: number;
  /** Longest delay between two attempts, in ms. Default 5,000. */
  maxDelayMs: number;
  /**
   * Total time a batch may spend being retried, from its first attempt, in ms. Default 60,000. Keep it
   * below ingest's duplicate window (SWITCHYARD_DUPLICATE_WINDOW_MS, 10 minutes) so a re-sent batch is
   * still recognised and stored once.
   */
  maxElapsedMs: number;
}

/**
 * Whether a failed send is worth retrying. UNAVAILABLE covers connection
 * failures (refused, reset, dropped) and ingest's "JetStream did not confirm";
 * DEADLINE_EXCEEDED a slow answer; RESOURCE_EXHAUSTED rate limiting. An error
 * without a status code never reached gRPC's status handling: a connection
 * failure too. Everything else (UNAUTHENTICATED, INVALID_ARGUMENT, ...) would
 * fail the same way again.
 */
export function isRetryable(code: number | undefined): boolean {
  return code === undefined || code === status.UNAVAILABLE || code === status.DEADLINE_EXCEEDED || code === status.RESOURCE_EXHAUSTED;
}

/**
 * The delay before retry number `retry` (1 for the first), or undefined when
 * the batch has been retried for long enough. Exponential backoff with
 * "equal jitter": half the delay fixed, half random, so clients that failed
 * together do not retry together, yet each waits at least half the backoff.
 * The last delay is cut so no attempt starts after maxElapsedMs.
 */
export function retryDelay(policy: RetryPolicy, retry: number, elapsedMs: number, random: () => number = Math.random): number | undefined {
  const remaining = policy.maxElapsedMs - elapsedMs;
  if (remaining <= 0) return undefined;
  const backoff = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(retry - 1, 30));
  const delay = backoff / 2 + random() * (backoff / 2);
  return Math.round(Math.min(delay, remaining));
}
