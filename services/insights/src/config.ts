import { commonEnvSchema, nonNegativeIntVar, parseEnv, portVar, positiveIntVar } from "@switchyard/platform";
import { z } from "zod";

export const DEFAULT_GRPC_PORT = 50054;
export const DEFAULT_OPS_PORT = 9104;
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/** Distinct names (track events, page and screen names) one source's schema keeps; calls with more names count in an overflow entry per type. */
export const DEFAULT_SCHEMA_NAME_LIMIT = 1_000;
/** Counts are written to KV once per record and interval, not once per call. */
export const DEFAULT_FLUSH_INTERVAL_MS = 1_000;
/**
 * The niceness insights runs at: its counting is never urgent, so on a busy machine the
 * scheduler gives ingest and delivery the CPU first and insights catches up afterwards. The
 * lowest priority, since reading a call costs insights a good part of what accepting it costs
 * ingest: at a milder niceness it still takes enough of a saturated machine to slow ingest.
 */
export const DEFAULT_NICE = 19;
/**
 * Once a stream is read to its end, the wait before reading on: counts trail by about this much,
 * and nats-server is spared following the tail (see StreamReader), which at full load costs it
 * a fresh buffer for every block written.
 */
export const DEFAULT_READ_PAUSE_MS = 1_000;
/** Counts waiting for the next write (one entry per message and counter); past this, reading pauses until they are written. */
export const DEFAULT_MAX_PENDING = 500_000;

export const insightsEnvSchema = commonEnvSchema.extend({
  INSIGHTS_GRPC_PORT: portVar(DEFAULT_GRPC_PORT).describe("gRPC port (InsightsService); 0 picks a free one."),
  /** /healthz, /readyz and /metrics. */
  INSIGHTS_OPS_PORT: portVar(DEFAULT_OPS_PORT).describe("Ops port: /healthz, /readyz and /metrics, without authentication."),
  /** Bearer token of InsightsService. Unset: it refuses every call. */
  SWITCHYARD_ADMIN_TOKEN: z
    .string()
    .min(16, "must be at least 16 characters")
    .optional()
    .describe("Bearer token of InsightsService. Unset: it refuses every call."),
  SWITCHYARD_DUPLICATE_WINDOW_MS: positiveIntVar(10 * 60_000).describe(
    "A batch re-sent with the same id within this window is stored once (the calls stream's duplicate window).",
  ),
  SWITCHYARD_CALLS_MAX_AGE_MS: positiveIntVar(7 * 24 * 3600_000).describe(
    "How long calls stay in the calls stream (and blocked calls in the filtered stream): insights must read them within this time.",
  ),
  SHUTDOWN_GRACE_MS: positiveIntVar(DEFAULT_SHUTDOWN_GRACE_MS).describe(
    "After SIGTERM, how long calls in flight on the service's gRPC APIs get to finish before they are cancelled.",
  ),
  SWITCHYARD_SCHEMA_NAME_LIMIT: positiveIntVar(DEFAULT_SCHEMA_NAME_LIMIT).describe(
    "Distinct names (track events, page and screen names) per source with a schema entry of their own; calls with later names are counted in one overflow entry per type.",
  ),
  INSIGHTS_FLUSH_INTERVAL_MS: positiveIntVar(DEFAULT_FLUSH_INTERVAL_MS).describe(
    "How often gathered counts are written to KV: one write per record and interval, whatever the call rate. Longer: fewer writes, staler answers.",
  ),
  INSIGHTS_MAX_PENDING: positiveIntVar(DEFAULT_MAX_PENDING).describe(
    "Counts (one per message and counter) held in memory waiting for the next write; past it, reading pauses until they are written.",
  ),
  /** 0 reads each message as soon as it is stored. */
  INSIGHTS_READ_PAUSE_MS: nonNegativeIntVar(DEFAULT_READ_PAUSE_MS).describe(
    "Once a stream is read to its end, the wait before reading on; counts trail the calls by about this much. 0: read each message as soon as it is stored.",
  ),
  /** Process niceness, -20 (first) to 19 (last); 0 leaves the priority as it was started with. */
  INSIGHTS_NICE: z.coerce
    .number({ error: "must be a number" })
    .int("must be an integer")
    .min(-20, "must be between -20 and 19")
    .max(19, "must be between -20 and 19")
    .default(DEFAULT_NICE)
    .describe(
      "Process niceness, -20 (first) to 19 (last): counting yields the CPU to the other services and catches up later. 0: the priority it was started with; a negative value needs privileges.",
    ),
  /**
   * Insights runs in one process whatever this says: every process would read the same
   * streams. Run replicas for availability instead (their counts never add up twice).
   */
  SWITCHYARD_WORKERS: z
    .string()
    .optional()
    .transform(() => 1)
    .describe("Ignored: insights runs in one process (each would read the same streams); run replicas for availability instead."),
});

export type InsightsConfig = z.output<typeof insightsEnvSchema>;

export function loadInsightsConfig(env: NodeJS.ProcessEnv = process.env): InsightsConfig {
  return parseEnv(insightsEnvSchema, env);
}
