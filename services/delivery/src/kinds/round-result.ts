import type { RoundResult, UrlAttempt } from "./kind.js";

/** What a round's requests came to: delivered when one was, else which targets may be retried and after how long at least. */
export function roundResult(attempts: UrlAttempt[]): RoundResult {
  // The common case, and nothing below matters for it: no retry is scheduled.
  if (attempts.some((attempt) => attempt.outcome === "delivered")) {
    return { delivered: true, attempts, retryableUrlIndexes: [], retryAfterMs: undefined };
  }
  const retryable = attempts.filter((attempt) => attempt.outcome === "retryable");
  const retryAfter = Math.max(0, ...retryable.map((attempt) => attempt.retryAfterMs ?? 0));
  return {
    delivered: false,
    attempts,
    retryableUrlIndexes: retryable.map((attempt) => attempt.urlIndex),
    retryAfterMs: retryAfter > 0 ? retryAfter : undefined,
  };
}
