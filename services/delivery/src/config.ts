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
  DELIVERY_GRPC_PORT: portVar(DEFAULT_GRPC_PORT),
  /** /healthz, /readyz and /metrics. */
  DELIVERY_OPS_PORT: portVar(DEFAULT_OPS_PORT),
  /** Bearer token for the configuration and delivery gRPC APIs. Unset: those APIs refuse every call. */
  SWITCHYARD_ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  DELIVERY_REQUEST_TIMEOUT_MS: positiveIntVar(DEFAULT_REQUEST_TIMEOUT_MS),
  DELIVERY_RETRY_WINDOW_MS: positiveIntVar(DEFAULT_RETRY_WINDOW_MS),
  DELIVERY_RETRY_BASE_DELAY_MS: positiveIntVar(DEFAULT_RETRY_BASE_DELAY_MS),
  DELIVERY_RETRY_MAX_DELAY_MS: positiveIntVar(DEFAULT_RETRY_MAX_DELAY_MS),
  DELIVERY_DESTINATION_CONCURRENCY: positiveIntVar(DEFAULT_DESTINATION_CONCURRENCY),
  DELIVERY_FAILURE_THRESHOLD: positiveIntVar(DEFAULT_FAILURE_THRESHOLD),
  DELIVERY_FAILING_COOLDOWN_MS: positiveIntVar(DEFAULT_FAILING_COOLDOWN_MS),
  DELIVERY_BATCH_CONCURRENCY: positiveIntVar(DEFAULT_BATCH_CONCURRENCY),
  /**
   * Batches per replica that wait for their outcomes without holding a DELIVERY_BATCH_CONCURRENCY slot: every
   * call in flight, done, deferred, or waiting for a destination that has stopped freeing slots.
   */
  DELIVERY_AWAITING_BATCHES: positiveIntVar(DEFAULT_AWAITING_BATCHES),
  DELIVERY_RETRY_CONCURRENCY: positiveIntVar(DEFAULT_RETRY_CONCURRENCY),
  DELIVERY_DEAD_LETTER_MAX_AGE_MS: positiveIntVar(DEFAULT_DEAD_LETTER_MAX_AGE_MS),
  DELIVERY_LOG_MAX_AGE_MS: positiveIntVar(DEFAULT_DELIVERY_LOG_MAX_AGE_MS),
  DELIVERY_MAX_RESPONSE_BYTES: positiveIntVar(DEFAULT_MAX_RESPONSE_BYTES),
  /** Caps of the delivered-attempt log stream (<NS>_DELIVERED_LOG), besides DELIVERY_LOG_MAX_AGE_MS. */
  DELIVERY_DELIVERED_LOG_MAX_BYTES: positiveIntVar(DEFAULT_DELIVERED_LOG_MAX_BYTES),
  DELIVERY_DELIVERED_LOG_MAX_MESSAGES: positiveIntVar(DEFAULT_DELIVERED_LOG_MAX_MESSAGES),
  /** Delivered attempts of one destination recorded in one message at most, and how long the first waits for others. */
  DELIVERY_ATTEMPT_LOG_BATCH: positiveIntVar(DEFAULT_ATTEMPT_LOG_BATCH),
  DELIVERY_ATTEMPT_LOG_LINGER_MS: positiveIntVar(DEFAULT_ATTEMPT_LOG_LINGER_MS),
  /**
   * Times a calls or retry message may fail to be handled (an unexpected error, not a failed
   * webhook) before it is moved to the poison stream; the delay between tries doubles from
   * DELIVERY_HANDLING_RETRY_DELAY_MS up to 30 s (8 tries: about 1.5 minutes).
   */
  DELIVERY_MAX_HANDLING_FAILURES: positiveIntVar(DEFAULT_MAX_HANDLING_FAILURES),
  DELIVERY_HANDLING_RETRY_DELAY_MS: positiveIntVar(DEFAULT_HANDLING_RETRY_DELAY_MS),
  /**
   * `on`: the requests of destinations whose answers keep closing their connections are sent from
   * a thread of their own (outbound/churn-isolating-sender.ts); `off`: every request from the main thread.
   */
  DELIVERY_SENDER_THREAD: z.enum(["on", "off"]).default("on"),
  /** PEM file of extra CA certificates to trust (receivers behind a private CA). */
  DELIVERY_EXTRA_CA_FILE: z.string().min(1, "must not be empty").optional(),
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
    }),
  SWITCHYARD_DUPLICATE_WINDOW_MS: positiveIntVar(10 * 60_000),
  SWITCHYARD_CALLS_MAX_AGE_MS: positiveIntVar(7 * 24 * 3600_000),
  SHUTDOWN_GRACE_MS: positiveIntVar(DEFAULT_SHUTDOWN_GRACE_MS),
});

export type DeliveryConfig = z.output<typeof deliveryEnvSchema>;

export function loadDeliveryConfig(env: NodeJS.ProcessEnv = process.env): DeliveryConfig {
  return parseEnv(deliveryEnvSchema, env);
}
