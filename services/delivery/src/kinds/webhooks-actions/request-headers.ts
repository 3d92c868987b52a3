import type { MappedRequest } from "@switchyard/mappings";
import type { ActionsDestination, Masker } from "@switchyard/workspace";
import { webhookSignature } from "../../outbound/signature.js";
import { standardWebhookHeaders } from "../../outbound/standard-webhooks.js";
import type { EntryRequest } from "../kind.js";
import { USER_AGENT } from "../webhooks/requests.js";

/** The headers Switchyard sets on every request, after the mapping's (which cannot use these names). */
export const FIXED_HEADERS: readonly string[] = ["user-agent", USER_AGENT, "content-type", "application/json"];

/**
 * What the attempt log shows of a mapped request sent with `headers` (the mapping's, then
 * FIXED_HEADERS, then the signatures): mapped header values may come from the call or hold
 * credentials, so they show as fingerprints, and so do the URL's query values.
 */
export function maskedRequest(request: MappedRequest, headers: string[], masker: Masker): EntryRequest {
  const mapped = request.headers.map((value, at) => (at % 2 === 0 ? value : masker.maskValue(value)));
  return { headers, loggedHeaders: [...mapped, ...FIXED_HEADERS], loggedUrl: masker.maskUrl(request.url) };
}

/**
 * The headers a mapped request is sent with: the mapping's, FIXED_HEADERS, then the signatures
 * over `body` with the destination's secrets (none given: unsigned). `webhookId` is Standard
 * Webhooks' webhook-id: the call's messageId, or a batch's id.
 */
export function requestHeaders(
  request: MappedRequest,
  body: Buffer,
  secrets: Pick<ActionsDestination["settings"], "sharedSecret" | "standardWebhooks"> | undefined,
  webhookId: string,
): string[] {
  const headers = [...request.headers, ...FIXED_HEADERS];
  if (secrets?.sharedSecret) headers.push("x-signature", webhookSignature(body, secrets.sharedSecret));
  if (secrets?.standardWebhooks) {
    for (const [name, value] of Object.entries(standardWebhookHeaders(webhookId, body, secrets.standardWebhooks, Date.now())))
      headers.push(name, value);
  }
  return headers;
}
