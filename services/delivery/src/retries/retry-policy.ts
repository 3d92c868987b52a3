/**
 * Which failures are retried and when: pure functions, so the rules of the
 * contract (docs/contract.md §7.3-7.6) can be tested without a network.
 */

export type AttemptOutcome = "delivered" | "retryable" | "permanent";

/** Why a delivery stopped being retried. "undeliverable": no webhook body can be made of the call. */
export type DeadLetterReason = "window_exhausted" | "permanent_failure" | "destination_removed" | "undeliverable";

/** Retryable: 5xx, 408, 429. Delivered: 2xx. Everything else (3xx: redirects are never followed, other 4xx) is permanent. */
export function outcomeOfStatus(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return "delivered";
  if (status >= 500 || status === 408 || status === 429) return "retryable";
  return "permanent";
}

/** TLS certificate problems: nothing is sent, and trying again will not help. */
const CERTIFICATE_ERRORS = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
]);

export function isCertificateError(code: string | undefined): boolean {
  return code !== undefined && CERTIFICATE_ERRORS.has(code);
}

export interface RetrySchedule {
  /** Delay of the first retry; each further retry doubles it. */
  baseDelayMs: number;
  /** Longest delay between two attempts. */
  maxDelayMs: number;
  /** No attempt is scheduled later than this after the window started (4 hours by default). */
  windowMs: number;
}

export type NextStep = { kind: "retry"; delayMs: number } | { kind: "dead_letter" };

/**
 * When to try again after `attempt` failed attempts. Exponential backoff with
 * "equal jitter" (half fixed, half random), so delays keep growing while
 * retries of many calls spread out. A Retry-After is honoured. Nothing is
 * scheduled past the window's end: the last attempt lands on it, and a call
 * that fails then is dead-lettered.
 */
export function nextStep(input: {
  attempt: number;
  nowMs: number;
  windowStartMs: number;
  retryAfterMs?: number | undefined;
  schedule: RetrySchedule;
  random?: () => number;
}): NextStep {
  const { attempt, nowMs, windowStartMs, schedule } = input;
  const remaining = windowStartMs + schedule.windowMs - nowMs;
  if (remaining <= 0) return { kind: "dead_letter" };
  const exponential = Math.min(schedule.maxDelayMs, schedule.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  const jittered = exponential / 2 + (input.random ?? Math.random)() * (exponential / 2);
  const delay = Math.max(jittered, input.retryAfterMs ?? 0);
  return { kind: "retry", delayMs: Math.round(Math.min(delay, remaining)) };
}

/** Retry-After in milliseconds, from seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // Every HTTP date form starts with the day's name; Date.parse alone would also take "1.5" or "-5" as dates.
  if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
