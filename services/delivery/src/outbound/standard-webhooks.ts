import { createHmac } from "node:crypto";
import { headerSafeId } from "@switchyard/bus";
import { type StandardWebhooksSettings } from "@switchyard/workspace";

/**
 * Standard Webhooks signing, for destinations that opted in:
 * webhook-id is the call's messageId (the same on every retry, so receivers can de-duplicate; an id
 * that is not visible ASCII is sent as its digest, see headerSafeId),
 * webhook-timestamp the second of this request, and webhook-signature one `v1,<base64>` entry of
 * HMAC-SHA256 over `${id}.${timestamp}.${body}` per secret signing now.
 *
 * Written against the Standard Webhooks spec, not with @switchyard/webhook-verify, so the end-to-end tests that
 * verify these headers with that library check two independent implementations.
 */
export function standardWebhookHeaders(
  messageId: string,
  body: Uint8Array,
  settings: StandardWebhooksSettings,
  nowMs: number,
): Record<"webhook-id" | "webhook-timestamp" | "webhook-signature", string> {
  const timestamp = Math.floor(nowMs / 1000);
  const id = headerSafeId(messageId);
  const signatures = signingSecrets(settings, nowMs).map((secret) => {
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    const digest = createHmac("sha256", key).update(`${id}.${timestamp}.`, "utf8").update(body).digest("base64");
    return `v1,${digest}`;
  });
  return { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": signatures.join(" ") };
}

/** The current secret first, then the previous ones still in their grace period. */
export function signingSecrets(settings: StandardWebhooksSettings, nowMs: number): string[] {
  const retiring = (settings.retiringSigningSecrets ?? []).filter((old) => Date.parse(old.expiresAt) > nowMs).map((old) => old.secret);
  return [settings.signingSecret, ...retiring];
}
