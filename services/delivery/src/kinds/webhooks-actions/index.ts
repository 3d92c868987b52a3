import type { ActionsDestination } from "@switchyard/workspace";
import { integrationEnabled } from "../../pipeline/integrations.js";
import type { DestinationKind } from "../kind.js";
import { eventOf, mappingsOf } from "./mappings.js";
import { actionBatches, sendMapped } from "./requests.js";

/** The name of this destination in a call's `integrations` object (case-sensitive), as Segment's catalog names it. */
export const ACTIONS_INTEGRATION = "Webhooks (Actions)";

/** The positions of a destination's enabled mappings. */
function enabledMappings(destination: ActionsDestination): number[] {
  return destination.settings.mappings.flatMap((mapping, index) => (mapping.enabled ? [index] : []));
}

/**
 * Webhooks (Actions): the destination's targets are its enabled mappings, by position. A call goes
 * to each whose trigger takes it, as the request that mapping makes of it (URL, method, headers and
 * body all mapped from the call), signed over exactly the bytes sent; a call no trigger takes is
 * filtered. Outcomes are the sender's, as for Webhooks; a call a mapping cannot make a valid
 * request of fails for good at that mapping, with the reason.
 */
export const actionsKind: DestinationKind<ActionsDestination> = {
  type: "webhooks_actions",
  sendsWebhookBody: false,
  enabledFor: (integrations) => integrationEnabled(integrations, ACTIONS_INTEGRATION),
  targets: enabledMappings,
  targetsOf(destination, call) {
    const mappings = mappingsOf(destination);
    const event = eventOf(call);
    // A destination whose stored mappings no longer compile takes every call, to fail it with the reason.
    return enabledMappings(destination).filter((index) => mappings[index]?.trigger.matches(event) ?? true);
  },
  requestsOf(destination, targets) {
    const mappings = mappingsOf(destination);
    return targets.filter((index) => !mappings[index]?.batching).length;
  },
  flush: (context) => actionBatches(context).flush(),
  undeliverable(call) {
    return call.call().payload ? undefined : "the call has no type";
  },
  send: sendMapped,
};
