import { MAX_ACTION_MAPPINGS, MAX_BATCH_SIZE } from "@switchyard/mappings/limits";
import type { FunctionComponent } from "preact";
import type { Destination } from "../../api";
import { mappingsOf, valueText } from "./actions-draft";
import { ActionsSetup } from "./actions-setup";
import type { SetupProps } from "./setup";
import { WebhookSetup, webhookUrls } from "./webhooks-setup";

/** A kind of destination as the console shows it: in the catalog, in the list, and its setup form. */
export interface ConsoleDestinationKind {
  /** The kind's name in routes (/destinations/new?type=...). */
  type: string;
  name: string;
  description: string;
  /** Whether a destination read from the API is of this kind (its `kind` oneof's case). */
  holds(destination: Destination): boolean;
  /** Where the destination sends, one line each, for the list. */
  targets(destination: Destination): string[];
  Setup: FunctionComponent<SetupProps>;
}

/** The catalog: another kind is one more entry, and the routes and the list pick it up. */
export const DESTINATION_KINDS: readonly ConsoleDestinationKind[] = [
  {
    type: "webhooks",
    name: "Webhooks",
    description: "Every call POSTed as JSON to 1-5 URLs of yours, in order, signed (X-Signature, Standard Webhooks), retried for 4 hours.",
    holds: (destination) => destination.webhooksKind !== undefined || destination.webhooks !== undefined,
    targets: (destination) => webhookUrls(destination).map((webhook) => webhook.url),
    Setup: WebhookSetup,
  },
  {
    type: "webhooks_actions",
    name: "Webhooks (Actions)",
    description: `1-${MAX_ACTION_MAPPINGS} mappings, each taking the calls its trigger (Segment's subscription language) picks and making its own request of each: URL, POST, PUT or PATCH, headers and body mapped from the call with mapping-kit; optionally in batches of up to ${MAX_BATCH_SIZE} calls.`,
    holds: (destination) => destination.webhooksActionsKind !== undefined,
    targets: (destination) => mappingsOf(destination).map((mapping) => `${mapping.name ?? ""}: ${valueText(mapping.url)}`),
    Setup: ActionsSetup,
  },
];

/**
 * The kind of a destination read from the API; undefined for one of a kind this console does
 * not know, which it must not open in another kind's form (saving would turn it into that kind).
 */
export function kindOfDestination(destination: Destination): ConsoleDestinationKind | undefined {
  return DESTINATION_KINDS.find((kind) => kind.holds(destination));
}
