import type { Destination, Masker } from "@switchyard/workspace";
import type { OutgoingCall } from "../pipeline/outgoing-calls.js";
import type { DestinationGates } from "../pipeline/destination-gate.js";
import type { Pace, RateLimits } from "../pipeline/rate-limits.js";
import type { SendMethod, SendResult, Sender } from "../outbound/webhook-sender.js";

/**
 * What the pipeline knows of a destination kind, and all it knows. Everything
 * else a delivery goes through (gates and isolation, rate limits, retries and
 * the window, dead letters and replay, filters, usage, the attempt log's
 * storage) is shared and blind to the kind.
 *
 * A kind has targets, addressed by position (a DeliveryTask's
 * `target_indexes`): the Webhooks kind's URLs. A round sends a call to some of
 * them and says, per request, what it came to. A kind that batches gathers
 * calls into one request and reports that request's outcome for each of them;
 * a kind that transforms a call does so in `send`, before the request is made.
 */
export interface DestinationKind<Of extends Destination = Destination> {
  /** The destination's `type` in the workspace model (the case of the Destination's `kind` oneof in proto). */
  readonly type: Of["type"];
  /**
   * Whether its requests carry the call's webhook body (docs/contract.md §6.3), which the pipeline
   * then writes straight from the stored bytes; a kind that does not works on the decoded call.
   */
  readonly sendsWebhookBody: boolean;
  /** Whether a call's `integrations` object lets it through to a destination of this kind. */
  enabledFor(integrations: Record<string, unknown> | undefined): boolean;
  /** Every target of the destination, by position, in order. */
  targets(destination: Of): number[];
  /**
   * The targets a call's first round sends to: for a kind whose targets choose their calls (the
   * Actions kind's triggers), those that take it. None: the destination takes nothing of the call,
   * which counts as filtered.
   */
  targetsOf(destination: Of, call: OutgoingCall): number[];
  /**
   * Why nothing can be sent for the call, now or on any retry (it is dead-lettered as
   * "undeliverable", without a request), or undefined when something can.
   */
  undeliverable(call: OutgoingCall): string | undefined;
  /**
   * One round of requests for a call: to every target in `targets` ("all", a first attempt) or,
   * where targets are alternatives, until one succeeds ("until_success", a retry; a kind whose
   * targets are each owed the call sends to all of them). Each request is classified delivered,
   * retryable or permanent, and carries what the attempt log records of it. With a `pace`, the
   * n-th request goes no earlier than `pace.at + n × pace.intervalMs`.
   */
  /**
   * How many requests a round to these targets makes of its own (absent: one per target): what it
   * claims of the destination's rate limit, and whether it needs a request slot of its gate. A
   * target that puts the call in a batch makes none: the batch claims its slot and its rate as it goes.
   */
  requestsOf?(destination: Of, targets: readonly number[]): number;
  /** Sends at once whatever the kind holds back (delivery is stopping, its consumers stopped). */
  flush?(context: SendContext): void;
  send(
    context: SendContext,
    destination: Of,
    call: OutgoingCall,
    targets: readonly number[],
    mode: RoundMode,
    pace?: Pace,
  ): Promise<RoundResult>;
}

export type RoundMode = "all" | "until_success";

/** What a kind sends with: the same object for the life of a delivery process. */
export interface SendContext {
  readonly sender: Sender;
  /** Masks header and query values for the attempt log and dead letters, as ConfigService reads do. */
  readonly masker: Masker;
  /** The destinations' gates: a request a kind makes outside a call's round (a batch) takes its slot there. */
  readonly gates: DestinationGates;
  /** Rate-limited destinations' schedules: such a request claims its turn there too. */
  readonly rateLimits: RateLimits;
}

/** What every request to one target sends, and how the attempt log shows it. */
export interface EntryRequest {
  /** The headers sent, as undici's flat list. */
  readonly headers: string[];
  /** The same headers with the static ones' values masked (as GetDestination shows them); a prefix of what is sent. */
  readonly loggedHeaders: string[];
  /** The URL with its query values masked (the attempt log and dead letters show it). */
  readonly loggedUrl: string;
}

/** One request of a round, classified, with what the attempt log records of it. */
export interface UrlAttempt extends SendResult {
  /** The target's position. */
  urlIndex: number;
  url: string;
  /** What the attempt log needs of the request, all by reference (nothing is copied per request). */
  request?: { method?: SendMethod; entry: EntryRequest; headers: string[]; body: Buffer } | undefined;
  /** For a request that carried several calls (a batch): their messageIds, in the order of its body. One object per request. */
  batch?: { readonly messageIds: readonly string[] } | undefined;
}

/** What a round of requests came to. */
export interface RoundResult {
  /** Nothing more is owed: no target is to be retried. */
  delivered: boolean;
  /** Every request made, in order. */
  attempts: UrlAttempt[];
  /** Targets whose failure was retryable (empty once delivered). */
  retryableUrlIndexes: number[];
  /**
   * Targets that failed for good while others succeeded or are retried: dead-lettered now, on
   * their own (a kind whose targets are each owed the call; empty for one whose targets are
   * alternatives, and when every target failed for good, which dead-letters the whole call).
   */
  deadTargetIndexes: number[];
  /** The longest Retry-After any target asked for. */
  retryAfterMs: number | undefined;
}
