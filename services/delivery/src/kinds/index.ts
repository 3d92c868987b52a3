import type { Destination } from "@switchyard/workspace";
import type { DestinationKind, SendContext } from "./kind.js";
import { webhooksKind } from "./webhooks/index.js";
import { actionsKind } from "./webhooks-actions/index.js";

export type { DestinationKind, EntryRequest, RoundMode, RoundResult, SendContext, UrlAttempt } from "./kind.js";

/** Every kind, by the destination's type (the case of the Destination's `kind` oneof). */
const KINDS: { readonly [Type in Destination["type"]]: DestinationKind<Extract<Destination, { type: Type }>> } = {
  webhooks: webhooksKind,
  webhooks_actions: actionsKind,
};

/** The kind of a destination. */
export function kindOf(destination: Destination): DestinationKind {
  // KINDS holds each type's own kind, so the one found takes destinations of that type only.
  return KINDS[destination.type] as unknown as DestinationKind;
}

/** Sends at once what any kind holds back (see DestinationKind.flush): delivery is stopping. */
export function flushKinds(context: SendContext): void {
  for (const kind of Object.values(KINDS) as DestinationKind[]) kind.flush?.(context);
}

/** How many requests a round of `kind` to these targets makes of its own (see DestinationKind.requestsOf). */
export function requestsOf(kind: DestinationKind, destination: Destination, targets: readonly number[]): number {
  return kind.requestsOf ? kind.requestsOf(destination, targets) : targets.length;
}
