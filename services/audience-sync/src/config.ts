import { commonEnvSchema, parseEnv, portVar, positiveIntVar } from "@switchyard/platform";
import { z } from "zod";

export const DEFAULT_GRPC_PORT = 50053;
export const DEFAULT_OPS_PORT = 9103;
export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;
/** Holds the states of a few audiences of a million members (about 14 MB each). */
export const DEFAULT_STATE_CACHE_MB = 64;

export const audienceSyncEnvSchema = commonEnvSchema.extend({
  AUDIENCE_GRPC_PORT: portVar(DEFAULT_GRPC_PORT).describe("gRPC port (AudienceService and DeletionService); 0 picks a free one."),
  /** /healthz, /readyz and /metrics. */
  AUDIENCE_OPS_PORT: portVar(DEFAULT_OPS_PORT).describe("Ops port: /healthz, /readyz and /metrics, without authentication."),
  /** Bearer token of the audience and deletion APIs. Unset: they refuse every call. */
  SWITCHYARD_ADMIN_TOKEN: z
    .string()
    .min(16, "must be at least 16 characters")
    .optional()
    .describe("Bearer token of AudienceService and DeletionService. Unset: they refuse every call."),
  SWITCHYARD_DUPLICATE_WINDOW_MS: positiveIntVar(10 * 60_000).describe(
    "A batch re-sent with the same id within this window is stored once (the calls stream's duplicate window).",
  ),
  SWITCHYARD_CALLS_MAX_AGE_MS: positiveIntVar(7 * 24 * 3600_000).describe(
    "How long calls stay in the calls stream (and blocked calls in the filtered stream).",
  ),
  SHUTDOWN_GRACE_MS: positiveIntVar(DEFAULT_SHUTDOWN_GRACE_MS).describe(
    "After SIGTERM, how long calls in flight on the service's gRPC APIs get to finish before they are cancelled.",
  ),
  /** Memory for the state blobs of recent syncs, so the next sync need not read them back (0: none). */
  AUDIENCE_STATE_CACHE_MB: z.coerce
    .number({ error: "must be a number" })
    .int("must be an integer")
    .min(0, "must be 0 or more")
    .default(DEFAULT_STATE_CACHE_MB)
    .describe(
      "Memory (MB) for the member lists of recent syncs, so the next sync of an audience on this replica need not read its list back (about 14 MB per million members); 0: none.",
    ),
});

export type AudienceSyncConfig = z.output<typeof audienceSyncEnvSchema>;

export function loadAudienceSyncConfig(env: NodeJS.ProcessEnv = process.env): AudienceSyncConfig {
  return parseEnv(audienceSyncEnvSchema, env);
}
