import type { WebhooksDestination } from "@switchyard/workspace";
import { integrationEnabled } from "../../pipeline/integrations.js";
import { undeliverableReason } from "../../pipeline/outgoing-calls.js";
import type { DestinationKind } from "../kind.js";
import { sendToUrls } from "./requests.js";

/** The name of this destination in a call's `integrations` object (case-sensitive). */
export const WEBHOOKS_INTEGRATION = "Webhooks";

/** Whether a call's integrations let it through to the Webhooks destination (see integrationEnabled). */
export function webhooksEnabled(integrations: Record<string, unknown> | undefined): boolean {
  return integrationEnabled(integrations, WEBHOOKS_INTEGRATION);
}

/**
 * The classic Webhooks destination: 1 to 5 URLs, each POSTed the call's
 * webhook body as it is, signed over exactly those bytes; a request's outcome
 * is the sender's (2xx delivered; 408, 429, 5xx and transport failures
 * retryable; any other status, a refused address or a bad certificate permanent).
 */
export const webhooksKind: DestinationKind<WebhooksDestination> = {
  type: "webhooks",
  sendsWebhookBody: true,
  enabledFor: webhooksEnabled,
  targets: everyUrl,
  // Every call goes to every URL.
  targetsOf: everyUrl,
  undeliverable(call) {
    const reason = undeliverableReason(call);
    return reason === undefined ? undefined : `no webhook body can be made: ${reason}`;
  },
  send: sendToUrls,
};

/** The positions of a destination's URLs: one array per settings object, shared by its rounds as before the kinds. */
const urlPositions = new WeakMap<WebhooksDestination["settings"], number[]>();

function everyUrl(destination: WebhooksDestination): number[] {
  let positions = urlPositions.get(destination.settings);
  if (!positions) {
    positions = destination.settings.webhooks.map((_, index) => index);
    urlPositions.set(destination.settings, positions);
  }
  return positions;
}
