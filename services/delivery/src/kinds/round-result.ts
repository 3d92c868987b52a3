import type { RoundResult, UrlAttempt } from "./kind.js";

/**
 * What a round's requests came to, for targets that are `alternatives` (Webhooks' URLs: the call
 * is delivered once any took it, docs/contract.md §7.2) or that are `each owed` the call (the
 * Actions kind's mappings: each must take it; one that failed for good is dead-lettered on its own).
 */
export function roundResult(attempts: UrlAttempt[], targets: "alternatives" | "each owed"): RoundResult {
  // A target's last request decides for it (a batch refused as too large, then sent in halves).
  const finals = targets === "alternatives" ? attempts : [...new Map(attempts.map((attempt) => [attempt.urlIndex, attempt])).values()];
  const retryable = finals.filter((attempt) => attempt.outcome === "retryable");
  const anyDelivered = finals.some((attempt) => attempt.outcome === "delivered");
  if (targets === "alternatives" && anyDelivered) {
    // The common case, and nothing below matters for it: no retry is scheduled.
    return { delivered: true, attempts, retryableUrlIndexes: [], deadTargetIndexes: [], retryAfterMs: undefined };
  }
  const permanent = finals.filter((attempt) => attempt.outcome === "permanent").map((attempt) => attempt.urlIndex);
  const partly = targets === "each owed" && (anyDelivered || retryable.length > 0);
  const retryAfter = Math.max(0, ...retryable.map((attempt) => attempt.retryAfterMs ?? 0));
  return {
    delivered: partly && retryable.length === 0,
    attempts,
    retryableUrlIndexes: retryable.map((attempt) => attempt.urlIndex),
    deadTargetIndexes: partly ? permanent : [],
    retryAfterMs: retryAfter > 0 ? retryAfter : undefined,
  };
}
