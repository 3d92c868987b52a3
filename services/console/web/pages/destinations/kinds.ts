import type { FunctionComponent } from "preact";
import type { Destination } from "../../api";
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
];

/** The kind of a destination read from the API (Webhooks for one that names none). */
export function kindOfDestination(destination: Destination): ConsoleDestinationKind {
  return DESTINATION_KINDS.find((kind) => kind.holds(destination)) ?? DESTINATION_KINDS[0]!;
}
