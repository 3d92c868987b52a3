import type { Masker, WebhooksDestination } from "@switchyard/workspace";
import type { OutgoingCall } from "../../pipeline/outgoing-calls.js";
import { waitUntil, type Pace } from "../../pipeline/rate-limits.js";
import { webhookSignature } from "../../outbound/signature.js";
import { standardWebhookHeaders } from "../../outbound/standard-webhooks.js";
import type { EntryRequest, RoundMode, RoundResult, SendContext, UrlAttempt } from "../kind.js";
import { roundResult } from "../round-result.js";

export const USER_AGENT = "Switchyard/1.0";

type WebhookEntry = WebhooksDestination["settings"]["webhooks"][number];

/**
 * The headers every request to a webhook entry carries, as undici's flat
 * [name, value, …] list: its static headers, then User-Agent and
 * Content-Type (names the settings cannot use, so nothing is overridden).
 * Made once per entry; a changed destination brings new entries.
 */
const entryRequests = new WeakMap<WebhookEntry, { masker: Masker; request: EntryRequest }>();

function entryRequest(entry: WebhookEntry, masker: Masker): EntryRequest {
  const cached = entryRequests.get(entry);
  if (cached?.masker === masker) return cached.request;
  const fixed = ["user-agent", USER_AGENT, "content-type", "application/json"];
  const statics = Object.entries(entry.headers);
  const request = {
    headers: [...statics.flat(), ...fixed],
    // Hashing for the mask is done once per entry, not per request.
    loggedHeaders: [...statics.flatMap(([name, value]) => [name, masker.maskValue(value)]), ...fixed],
    loggedUrl: masker.maskUrl(entry.url),
  };
  entryRequests.set(entry, { masker, request });
  return request;
}

/**
 * Sends one call to a destination's URLs, one after the other in configured
 * order. On a first attempt every URL gets its request ("all"); on a retry
 * the remaining URLs are tried until one succeeds ("until_success"). Every
 * URL gets the call's body as it is, signed over exactly those bytes. With a
 * `pace` (a rate-limited destination), the n-th request goes no earlier than
 * its slot, `pace.at + n × pace.intervalMs`.
 */
export async function sendToUrls(
  { sender, masker }: SendContext,
  destination: WebhooksDestination,
  call: OutgoingCall,
  urlIndexes: readonly number[],
  mode: RoundMode,
  pace?: Pace,
): Promise<RoundResult> {
  const body = call.body;
  if (!body) throw new Error(`call ${call.messageId} has no type: there is nothing to send`);
  const signature = destination.settings.sharedSecret ? webhookSignature(body, destination.settings.sharedSecret) : undefined;
  const { standardWebhooks } = destination.settings;
  const attempts: UrlAttempt[] = [];

  for (const urlIndex of urlIndexes) {
    const entry = destination.settings.webhooks[urlIndex];
    if (!entry) continue;
    if (pace) await waitUntil(pace.at + attempts.length * pace.intervalMs);
    const request = entryRequest(entry, masker);
    let headers = request.headers;
    // A spread, not concat: concat with plain values takes V8's slow generic path, on every request.
    if (signature) headers = [...headers, "x-signature", signature];
    // Opted-in destinations only; everyone else's headers stay exactly as docs/contract.md §6.1 has them.
    if (standardWebhooks) {
      headers = headers.concat(...Object.entries(standardWebhookHeaders(call.messageId, body, standardWebhooks, Date.now())).flat());
    }
    const result = await sender.send(entry.url, headers, body, destination.id);
    attempts.push({
      status: result.status,
      error: result.error,
      latencyMs: result.latencyMs,
      outcome: result.outcome,
      retryAfterMs: result.retryAfterMs,
      urlIndex,
      url: entry.url,
      responseHeaders: result.responseHeaders,
      responseBody: result.responseBody,
      responseBodyTruncated: result.responseBodyTruncated,
      request: { entry: request, headers, body },
    });
    if (result.outcome === "delivered" && mode === "until_success") break;
  }

  return roundResult(attempts, "alternatives");
}
