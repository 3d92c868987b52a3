import type { Destination } from "@switchyard/workspace";
import type { DestinationKind } from "./kind.js";
import { webhooksKind } from "./webhooks/index.js";

export type { DestinationKind, EntryRequest, RoundMode, RoundResult, SendContext, UrlAttempt } from "./kind.js";

/** Every kind, by the destination's type (the case of the Destination's `kind` oneof). */
const KINDS: { readonly [Type in Destination["type"]]: DestinationKind } = { webhooks: webhooksKind };

/** The kind of a destination. */
export function kindOf(destination: Destination): DestinationKind {
  return KINDS[destination.type];
}
