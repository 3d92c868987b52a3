import { commonEnvSchema, parseEnv, portVar, positiveIntVar } from "@switchyard/platform";
import type { z } from "zod";

export const DEFAULT_GRPC_PORT = 50051;
export const DEFAULT_HTTP_PORT = 8080;
export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
export const DEFAULT_DUPLICATE_WINDOW_MS = 10 * 60_000;
export const DEFAULT_CALLS_MAX_AGE_MS = 7 * 24 * 3600_000;
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

export const ingestEnvSchema = commonEnvSchema.extend({
  INGEST_GRPC_PORT: portVar(DEFAULT_GRPC_PORT),
  INGEST_HTTP_PORT: portVar(DEFAULT_HTTP_PORT),
  INGEST_PUBLISH_TIMEOUT_MS: positiveIntVar(DEFAULT_PUBLISH_TIMEOUT_MS),
  SWITCHYARD_DUPLICATE_WINDOW_MS: positiveIntVar(DEFAULT_DUPLICATE_WINDOW_MS),
  SWITCHYARD_CALLS_MAX_AGE_MS: positiveIntVar(DEFAULT_CALLS_MAX_AGE_MS),
  SHUTDOWN_GRACE_MS: positiveIntVar(DEFAULT_SHUTDOWN_GRACE_MS),
});

export type IngestConfig = z.output<typeof ingestEnvSchema>;

export function loadIngestConfig(env: NodeJS.ProcessEnv = process.env): IngestConfig {
  return parseEnv(ingestEnvSchema, env);
}
