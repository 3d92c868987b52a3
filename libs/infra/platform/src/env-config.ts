import { availableParallelism } from "node:os";
import { z } from "zod";
import { ConfigError } from "./errors.js";

/**
 * Parses environment variables once, at start-up, into a fully resolved config.
 * A bad value throws a ConfigError naming each offending variable and its rule.
 */
export function parseEnv<Schema extends z.ZodType>(schema: Schema, env: NodeJS.ProcessEnv = process.env): z.output<Schema> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const variable = issue.path.join(".") || "(environment)";
    return `${variable}: ${issue.message}`;
  });
  throw new ConfigError(`invalid configuration:\n  ${problems.join("\n  ")}`);
}

/** A TCP port from an environment variable; 0 picks a free one. */
export const portVar = (defaultPort: number) =>
  z.coerce
    .number({ error: "must be a port number" })
    .int("must be an integer")
    .min(0, "must be between 0 and 65535")
    .max(65535, "must be between 0 and 65535")
    .default(defaultPort);

/** A positive integer from an environment variable. */
export const positiveIntVar = (defaultValue: number) =>
  z.coerce.number({ error: "must be a number" }).int("must be an integer").positive("must be positive").default(defaultValue);

/** A whole number from 0 up from an environment variable. */
export const nonNegativeIntVar = (defaultValue: number) =>
  z.coerce.number({ error: "must be a number" }).int("must be an integer").min(0, "must be 0 or more").default(defaultValue);

export const logLevelVar = z
  .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
    error: "must be one of fatal, error, warn, info, debug, trace, silent",
  })
  .default("info");

/** Bus names are prefixed so several deployments (or test runs) can share one NATS server. */
export const namespaceVar = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,31}$/, "must be lowercase letters, digits and _ (1-32, letter first)")
  .default("switchyard");

/**
 * How many worker processes share the service's ports (see worker-cluster.ts):
 * a positive integer, or "auto" for one per available core. Default 1: no
 * cluster, the service runs in this process.
 */
export const workersVar = z
  .string()
  .default("1")
  .transform((text, context) => {
    if (text === "auto") return availableParallelism();
    const count = Number(text);
    if (text.trim() === "" || !Number.isInteger(count) || count < 1) {
      context.addIssue({ code: "custom", message: 'must be a positive integer or "auto"' });
      return z.NEVER;
    }
    return count;
  });

/** The settings every service shares. */
export const commonEnvSchema = z.object({
  NATS_URL: z
    .string()
    .min(1, "must not be empty")
    .default("nats://127.0.0.1:4222")
    .transform((value) => value.split(",").map((server) => server.trim()))
    .describe("NATS server URLs, comma-separated: list every node of a cluster."),
  SWITCHYARD_NAMESPACE: namespaceVar.describe(
    "Prefix of every stream, subject and bucket, so several deployments can share one NATS; give every service the same one.",
  ),
  SWITCHYARD_STREAM_REPLICAS: z.coerce
    .number()
    .int()
    .refine((n) => n === 1 || n === 3 || n === 5, "must be 1, 3 or 5")
    .default(1)
    .describe(
      "Replicas of every stream, KV bucket and object store the service opens, applied at each start (3 on a three-node cluster); give every service the same value.",
    ),
  SWITCHYARD_WORKSPACE_FILE: z
    .string()
    .min(1, "must not be empty")
    .optional()
    .describe("Workspace JSON (sources, destinations, connections) applied at each start, as SWITCHYARD_CONFIG_SOURCE says."),
  /**
   * Who owns the configuration: "api" (the file seeds what is missing and never overwrites a
   * record changed through the API) or "file" (the file is the whole truth: applied at every
   * start, records not in it removed, and ConfigService refuses writes).
   */
  SWITCHYARD_CONFIG_SOURCE: z
    .enum(["api", "file"], { message: 'must be "api" or "file"' })
    .default("api")
    .describe(
      "Who owns the configuration. `api`: the workspace file seeds what is missing and never overwrites a record changed through the API. `file` (needs SWITCHYARD_WORKSPACE_FILE): the file is the whole truth, records not in it are removed and ConfigService refuses writes.",
    ),
  /** Once ready, how long a requirement may fail before /readyz and gRPC health turn unready. */
  SWITCHYARD_READINESS_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0, "must be 0 or more")
    .max(600_000, "must be at most 600000")
    .default(15_000)
    .describe(
      "Once ready, how long stream or consumer look-ups may fail (a leader election) before /readyz and gRPC health turn unready. A lost NATS link turns them unready at once.",
    ),
  LOG_LEVEL: logLevelVar.describe("Log level (JSON lines on stdout)."),
  HOST: z
    .string()
    .min(1, "must not be empty")
    .default("0.0.0.0")
    .describe("Interface every server of the service listens on, the ops port included."),
  SWITCHYARD_WORKERS: workersVar.describe(
    "Worker processes sharing the service's ports, under one supervisor: a positive integer, or `auto` for one per available core.",
  ),
  /** PEM files of the servers' TLS certificate and key (both or neither; see server-tls.ts). Unset: plaintext. */
  SWITCHYARD_TLS_CERT_FILE: z
    .string()
    .min(1, "must not be empty")
    .optional()
    .describe(
      "PEM certificate chain: the service's gRPC and HTTP APIs serve TLS (the ops port stays plaintext); needs SWITCHYARD_TLS_KEY_FILE. Unset: plaintext.",
    ),
  SWITCHYARD_TLS_KEY_FILE: z.string().min(1, "must not be empty").optional().describe("PEM private key of SWITCHYARD_TLS_CERT_FILE."),
  /** PEM file of the CAs of client certificates: set, clients must present a certificate (mutual TLS). */
  SWITCHYARD_TLS_CLIENT_CA_FILE: z
    .string()
    .min(1, "must not be empty")
    .optional()
    .describe("PEM CA certificates of client certificates: set, every client must present one they signed (mutual TLS)."),
});
export type CommonEnv = z.output<typeof commonEnvSchema>;
