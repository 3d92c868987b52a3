import { commonEnvSchema, parseEnv, portVar, positiveIntVar } from "@switchyard/platform";
import { DEFAULT_DELIVERED_LOG_MAX_BYTES, DEFAULT_DELIVERED_LOG_MAX_MESSAGES } from "@switchyard/bus";
import { z } from "zod";
import { AddressPolicy } from "./outbound/address-policy.js";

export const DEFAULT_GRPC_PORT = 50052;
export const DEFAULT_OPS_PORT = 9102;
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
export const DEFAULT_RETRY_WINDOW_MS = 4 * 3600_000;
export const DEFAULT_RETRY_BASE_DELAY_MS = 1_000;
export const DEFAULT_RETRY_MAX_DELAY_MS = 30 * 60_000;
export const DEFAULT_DESTINATION_CONCURRENCY = 32;
export const DEFAULT_FAILURE_THRESHOLD = 5;
export const DEFAULT_FAILING_COOLDOWN_MS = 5_000;
export const DEFAULT_BATCH_CONCURRENCY = 16;
export const DEFAULT_AWAITING_BATCHES = 128;
export const DEFAULT_RETRY_CONCURRENCY = 64;
export const DEFAULT_DEAD_LETTER_MAX_AGE_MS = 14 * 24 * 3600_000;
export const DEFAULT_DELIVERY_LOG_MAX_AGE_MS = 7 * 24 * 3600_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
export const DEFAULT_ATTEMPT_LOG_BATCH = 200;
export const DEFAULT_ATTEMPT_LOG_LINGER_MS = 200;
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
export const DEFAULT_MAX_HANDLING_FAILURES = 8;
export const DEFAULT_HANDLING_RETRY_DELAY_MS = 1_000;

export const deliveryEnvSchema = commonEnvSchema.extend({
  DELIVERY_GRPC_PORT: portVar(DEFAULT_GRPC_PORT).describe("gRPC port (ConfigService and DeliveryService); 0 picks a free one."),
  /** /healthz, /readyz and /metrics. */
  DELIVERY_OPS_PORT: portVar(DEFAULT_OPS_PORT).describe("Ops port: /healthz, /readyz and /metrics, without authentication."),
  /** Bearer token for the configuration and delivery gRPC APIs. Unset: those APIs refuse every call. */
  SWITCHYARD_ADMIN_TOKEN: z
    .string()
    .min(16, "must be at least 16 characters")
    .optional()
    .describe("Bearer token of ConfigService and DeliveryService. Unset: they refuse every call."),
  DELIVERY_REQUEST_TIMEOUT_MS: positiveIntVar(DEFAULT_REQUEST_TIMEOUT_MS).describe(
    "A receiver must answer a webhook within this time; later counts as a retryable failure.",
  ),
  DELIVERY_RETRY_WINDOW_MS: positiveIntVar(DEFAULT_RETRY_WINDOW_MS).describe(
    "No attempt later than this after a call was accepted; a call still undelivered then is dead-lettered.",
  ),
  DELIVERY_RETRY_BASE_DELAY_MS: positiveIntVar(DEFAULT_RETRY_BASE_DELAY_MS).describe(
    "First retry delay; it doubles with each attempt, with jitter.",
  ),
  DELIVERY_RETRY_MAX_DELAY_MS: positiveIntVar(DEFAULT_RETRY_MAX_DELAY_MS).describe("Longest delay between two attempts of one call."),
  DELIVERY_DESTINATION_CONCURRENCY: positiveIntVar(DEFAULT_DESTINATION_CONCURRENCY).describe(
    "Requests in flight to one destination per replica (and its connection pool size); at most 4 until the receiver has answered once.",
  ),
  DELIVERY_FAILURE_THRESHOLD: positiveIntVar(DEFAULT_FAILURE_THRESHOLD).describe(
    "Consecutive retryable failures after which a destination counts as failing: its first attempts go straight to the retry stream.",
  ),
  DELIVERY_FAILING_COOLDOWN_MS: positiveIntVar(DEFAULT_FAILING_COOLDOWN_MS).describe(
    "How long a failing destination gets no requests before one retry probes it.",
  ),
  DELIVERY_BATCH_CONCURRENCY: positiveIntVar(DEFAULT_BATCH_CONCURRENCY).describe("Call batches worked on at once per replica."),
  /**
   * Batches per replica that wait for their outcomes without holding a DELIVERY_BATCH_CONCURRENCY slot: every
   * call in flight, done, deferred, or waiting for a destination that has stopped freeing slots.
   */
  DELIVERY_AWAITING_BATCHES: positiveIntVar(DEFAULT_AWAITING_BATCHES).describe(
    "Call batches per replica that wait for their outcomes without holding a DELIVERY_BATCH_CONCURRENCY slot (nothing left to send but to destinations that stopped freeing slots).",
  ),
  DELIVERY_RETRY_CONCURRENCY: positiveIntVar(DEFAULT_RETRY_CONCURRENCY).describe("Retry tasks worked on at once per replica."),
  DELIVERY_DEAD_LETTER_MAX_AGE_MS: positiveIntVar(DEFAULT_DEAD_LETTER_MAX_AGE_MS).describe(
    "How long dead letters (and poison messages) are kept, listable and replayable.",
  ),
  DELIVERY_LOG_MAX_AGE_MS: positiveIntVar(DEFAULT_DELIVERY_LOG_MAX_AGE_MS).describe(
    "How long the attempt log keeps attempts: failures and dead letters, delivered attempts and their index.",
  ),
  DELIVERY_MAX_RESPONSE_BYTES: positiveIntVar(DEFAULT_MAX_RESPONSE_BYTES).describe(
    "Receiver response bodies are read up to this size and discarded; a longer answer is cut and its connection closed.",
  ),
  /** Caps of the delivered-attempt log stream (<NS>_DELIVERED_LOG), besides DELIVERY_LOG_MAX_AGE_MS. */
  DELIVERY_DELIVERED_LOG_MAX_BYTES: positiveIntVar(DEFAULT_DELIVERED_LOG_MAX_BYTES).describe(
    "Bytes of delivered attempts the attempt log keeps at most, oldest dropped first (its index keeps a quarter of this at most).",
  ),
  DELIVERY_DELIVERED_LOG_MAX_MESSAGES: positiveIntVar(DEFAULT_DELIVERED_LOG_MAX_MESSAGES).describe(
    "Delivered-attempt messages the attempt log keeps at most; each holds up to DELIVERY_ATTEMPT_LOG_BATCH attempts of one destination.",
  ),
  /** Delivered attempts of one destination recorded in one message at most, and how long the first waits for others. */
  DELIVERY_ATTEMPT_LOG_BATCH: positiveIntVar(DEFAULT_ATTEMPT_LOG_BATCH).describe(
    "Delivered attempts of one destination recorded in one message at most (fewer when their bodies reach 512 KB).",
  ),
  DELIVERY_ATTEMPT_LOG_LINGER_MS: positiveIntVar(DEFAULT_ATTEMPT_LOG_LINGER_MS).describe(
    "How long a destination's first delivered attempt or failure waits for others before they are recorded: attempts show in the attempt log up to this much later (delivered ones about twice this).",
  ),
  /**
   * Times a calls or retry message may fail to be handled (an unexpected error, not a failed
   * webhook) before it is moved to the poison stream; the delay between tries doubles from
   * DELIVERY_HANDLING_RETRY_DELAY_MS up to 30 s (8 tries: about 1.5 minutes).
   */
  DELIVERY_MAX_HANDLING_FAILURES: positiveIntVar(DEFAULT_MAX_HANDLING_FAILURES).describe(
    "Times a calls or retry message may fail to be handled (an unexpected error, not a failed webhook) in one replica before it is moved to the poison stream.",
  ),
  DELIVERY_HANDLING_RETRY_DELAY_MS: positiveIntVar(DEFAULT_HANDLING_RETRY_DELAY_MS).describe(
    "Redelivery delay after a failed handling; it doubles each time, up to 30 s.",
  ),
  /**
   * `on`: the requests of destinations whose answers keep closing their connections are sent from
   * a thread of their own (outbound/churn-isolating-sender.ts); `off`: every request from the main thread.
   */
  DELIVERY_SENDER_THREAD: z
    .enum(["on", "off"])
    .default("on")
    .describe(
      "`on`: a destination whose answers keep closing their connections has its requests sent from a thread of its own, so its connects and closes do not delay other destinations' webhooks. `off`: every request from the main thread, for the least CPU in all.",
    ),
  /** PEM file of extra CA certificates to trust (receivers behind a private CA). */
  DELIVERY_EXTRA_CA_FILE: z
    .string()
    .min(1, "must not be empty")
    .optional()
    .describe("PEM file of extra CA certificates to trust for webhook receivers (receivers behind a private CA)."),
  /**
   * CIDR ranges (comma-separated) of private, loopback, link-local, ... addresses that receivers may
   * have anyway (SSRF protection). Empty: public addresses only. Local runs and tests allow loopback.
   */
  DELIVERY_ALLOWED_CIDRS: z
    .string()
    .default("")
    .transform((list, ctx) => {
      try {
        return AddressPolicy.fromList(list);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    })
    .describe(
      "CIDR ranges, comma-separated, of private, loopback, link-local or other special-purpose addresses receivers may have anyway (SSRF protection). Empty: public addresses only.",
    ),
  SWITCHYARD_DUPLICATE_WINDOW_MS: positiveIntVar(10 * 60_000).describe(
    "A batch re-sent with the same id within this window is stored once (the calls stream's duplicate window).",
  ),
  SWITCHYARD_CALLS_MAX_AGE_MS: positiveIntVar(7 * 24 * 3600_000).describe(
    "How long calls stay in the calls stream (and blocked calls in the filtered stream): delivery must read a batch within this time.",
  ),
  SHUTDOWN_GRACE_MS: positiveIntVar(DEFAULT_SHUTDOWN_GRACE_MS).describe(
    "After SIGTERM, how long calls in flight on the service's gRPC APIs get to finish before they are cancelled.",
  ),
});

export type DeliveryConfig = z.output<typeof deliveryEnvSchema>;

export function loadDeliveryConfig(env: NodeJS.ProcessEnv = process.env): DeliveryConfig {
  return parseEnv(deliveryEnvSchema, env);
}
