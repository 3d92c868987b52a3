import type { Call } from "@switchyard/contracts";
import type { Destination } from "@switchyard/platform";
import { webhookSignature } from "./signature.js";
import { standardWebhookHeaders } from "./standard-webhooks.js";
import { webhookBody } from "./webhook-body.js";
import type { SendResult, WebhookSender } from "./webhook-sender.js";

export const USER_AGENT = "Switchyard/1.0";

export interface UrlAttempt extends SendResult {
  urlIndex: number;
  url: string;
}

export interface FanOutResult {
  delivered: boolean;
  /** Every request made, in order. */
  attempts: UrlAttempt[];
  /** URLs whose failure was retryable (empty once delivered). */
  retryableUrlIndexes: number[];
  /** The longest Retry-After any URL asked for. */
  retryAfterMs: number | undefined;
}

/**
 * Sends one call to a destination's URLs, one after the other in configured
 * order. On a first attempt every URL gets its request ("all"); on a retry
 * the remaining URLs are tried until one succeeds ("until_success"). The
 * body is serialised once and signed over exactly the bytes sent.
 */
export async function fanOut(
  sender: WebhookSender,
  destination: Destination,
  call: Call,
  urlIndexes: readonly number[],
  mode: "all" | "until_success",
): Promise<FanOutResult> {
  const body = Buffer.from(JSON.stringify(webhookBody(call)), "utf8");
  const signature = destination.settings.sharedSecret ? webhookSignature(body, destination.settings.sharedSecret) : undefined;
  const { standardWebhooks } = destination.settings;
  const attempts: UrlAttempt[] = [];
  let delivered = false;

  for (const urlIndex of urlIndexes) {
    const entry = destination.settings.webhooks[urlIndex];
    if (!entry) continue;
    const headers: Record<string, string> = { ...entry.headers, "user-agent": USER_AGENT, "content-type": "application/json" };
    if (signature) headers["x-signature"] = signature;
    // Opted-in destinations only; everyone else's headers stay exactly as the spec has them.
    if (standardWebhooks) Object.assign(headers, standardWebhookHeaders(call.messageId, body, standardWebhooks, Date.now()));
    const result = await sender.send(entry.url, headers, body, destination.id);
    attempts.push({ ...result, urlIndex, url: entry.url });
    if (result.outcome === "delivered") {
      delivered = true;
      if (mode === "until_success") break;
    }
  }

  // The common case, and nothing below matters for it: no retry is scheduled.
  if (delivered) return { delivered, attempts, retryableUrlIndexes: [], retryAfterMs: undefined };
  const retryable = attempts.filter((attempt) => attempt.outcome === "retryable");
  const retryAfters = retryable.map((attempt) => attempt.retryAfterMs ?? 0);
  return {
    delivered,
    attempts,
    retryableUrlIndexes: retryable.map((attempt) => attempt.urlIndex),
    retryAfterMs: retryAfters.length > 0 && Math.max(...retryAfters) > 0 ? Math.max(...retryAfters) : undefined,
  };
}

/** Every URL position of a destination, in order. */
export function allUrlIndexes(destination: Destination): number[] {
  return destination.settings.webhooks.map((_, index) => index);
}
