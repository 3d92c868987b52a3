import { readFileSync } from "node:fs";
import {
  commonEnvSchema,
  ConfigError,
  parseEnv,
  parsePasswordHash,
  portVar,
  positiveIntVar,
  type PasswordHash,
} from "@switchyard/platform";
import { z } from "zod";
import { parseProxyRange, type ProxyRange } from "./auth/client-address.js";

export const DEFAULT_HTTP_PORT = 8090;
export const DEFAULT_OPS_PORT = 9105;
/** The gRPC addresses `npm start` runs the services at. */
export const DEFAULT_DELIVERY_ADDRESS = "127.0.0.1:50052";
export const DEFAULT_AUDIENCE_ADDRESS = "127.0.0.1:50053";
export const DEFAULT_INSIGHTS_ADDRESS = "127.0.0.1:50054";
export const DEFAULT_SESSION_MAX_AGE_MS = 8 * 3600_000;
export const DEFAULT_GRPC_TIMEOUT_MS = 30_000;

/** host:port of a gRPC server. */
const addressVar = (defaultAddress: string) =>
  z
    .string()
    .regex(/^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, "must be host:port (e.g. 127.0.0.1:50052)")
    .default(defaultAddress);

export const consoleEnvSchema = commonEnvSchema.extend({
  /** The web app and its API (HTTPS when SWITCHYARD_TLS_CERT_FILE is set). */
  CONSOLE_HTTP_PORT: portVar(DEFAULT_HTTP_PORT).describe(
    "The web app and its API (HTTPS when SWITCHYARD_TLS_CERT_FILE is set); 0 picks a free one.",
  ),
  /** /healthz, /readyz and /metrics. */
  CONSOLE_OPS_PORT: portVar(DEFAULT_OPS_PORT).describe("Ops port: /healthz, /readyz and /metrics, without authentication."),
  /** Where ConfigService and DeliveryService are served. */
  CONSOLE_DELIVERY_ADDRESS: addressVar(DEFAULT_DELIVERY_ADDRESS).describe(
    "host:port of ConfigService and DeliveryService (the delivery service).",
  ),
  /** Where AudienceService and DeletionService are served. */
  CONSOLE_AUDIENCE_ADDRESS: addressVar(DEFAULT_AUDIENCE_ADDRESS).describe(
    "host:port of AudienceService and DeletionService (the audience-sync service).",
  ),
  /** Where InsightsService is served. */
  CONSOLE_INSIGHTS_ADDRESS: addressVar(DEFAULT_INSIGHTS_ADDRESS).describe("host:port of InsightsService (the insights service)."),
  /** The console calls the admin APIs with it, and signing in with it opens a session. */
  SWITCHYARD_ADMIN_TOKEN: z
    .string({ error: "is required: the console calls the admin APIs with it" })
    .min(16, "must be at least 16 characters")
    .describe("The console calls the admin APIs with it, and signing in with it opens a session."),
  /** A second way to sign in: a password, stored as its scrypt hash (`switchyard hash-password`). */
  SWITCHYARD_CONSOLE_PASSWORD_HASH: z
    .string()
    .optional()
    .transform((text, context): PasswordHash | undefined => {
      if (text === undefined || text === "") return undefined;
      try {
        return parsePasswordHash(text);
      } catch (error) {
        context.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    })
    .describe("Also sign in with a password: its scrypt hash, as `npx switchyard hash-password` prints it. Unset: the admin token only."),
  /** How long a session lasts from sign-in. */
  CONSOLE_SESSION_MAX_AGE_MS: positiveIntVar(DEFAULT_SESSION_MAX_AGE_MS).describe("How long a console session lasts from sign-in."),
  /**
   * The origin browsers reach the console at (scheme://host[:port]), behind a proxy that changes
   * it. Unset: the request's own Host, with https when the console serves TLS.
   */
  CONSOLE_PUBLIC_ORIGIN: z
    .string()
    .regex(/^https?:\/\/[^/?#\s]+$/, "must be an origin: scheme://host[:port], nothing after")
    .optional()
    .describe(
      "The origin browsers reach the console at (e.g. `https://console.example.com`), behind a proxy that changes it; state-changing requests from any other origin get 403. Unset: the request's own Host.",
    ),
  /**
   * Reverse proxies in front of the console (comma-separated addresses or CIDR ranges): from a
   * peer in the list, the client address is taken from X-Forwarded-For (its right-most address
   * that is not itself such a proxy), and failed sign-ins are counted per client. Empty: the
   * connecting address is the client, and X-Forwarded-For is ignored.
   */
  CONSOLE_TRUSTED_PROXIES: z
    .string()
    .default("")
    .transform((text, context): ProxyRange[] => {
      const ranges: ProxyRange[] = [];
      for (const entry of text.split(",").map((part) => part.trim())) {
        if (entry === "") continue;
        try {
          ranges.push(parseProxyRange(entry));
        } catch (error) {
          context.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
        }
      }
      return ranges;
    })
    .describe(
      "Reverse proxies in front of the console, comma-separated addresses or CIDR ranges: from them the client address is the right-most X-Forwarded-For address that is not one of them, and failed sign-ins are counted per client. Empty: the connecting address, X-Forwarded-For ignored.",
    ),
  /** Deadline of each call the console makes to a gRPC service. */
  CONSOLE_GRPC_TIMEOUT_MS: positiveIntVar(DEFAULT_GRPC_TIMEOUT_MS).describe("Deadline of each call the console makes to a gRPC service."),
  /**
   * PEM CA certificates the services' TLS certificates are checked against: set, the console
   * reaches them over TLS (presenting SWITCHYARD_TLS_CERT_FILE as its client certificate when
   * both files are set, for servers that require one). Unset: plaintext.
   */
  CONSOLE_GRPC_CA_FILE: z
    .string()
    .min(1, "must not be empty")
    .optional()
    .describe(
      "PEM CA certificates of the services' TLS certificates: set, the console calls them over TLS (presenting SWITCHYARD_TLS_CERT_FILE and its key as client certificate when set). Unset: plaintext.",
    ),
  /** The built web app (index.html and its assets). Unset: services/console/dist/web. */
  CONSOLE_WEB_DIR: z
    .string()
    .min(1, "must not be empty")
    .optional()
    .describe("Folder of the built web app (index.html and its assets; `npm run build` makes it). Unset: services/console/dist/web."),
  SHUTDOWN_GRACE_MS: positiveIntVar(5_000).describe(
    "After SIGTERM, how long open requests get before their connections are closed (1 s at most).",
  ),
});

export type ConsoleConfig = z.output<typeof consoleEnvSchema>;

export function loadConsoleConfig(env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  return parseEnv(consoleEnvSchema, env);
}

/** Reads a file named by a variable; failing, start-up stops with a line naming the variable. */
export function readConfiguredFile(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(`${variable}: cannot read ${path}`, { cause: error });
  }
}
