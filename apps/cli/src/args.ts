import { readFileSync } from "node:fs";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { CliError, usageError } from "./cli-error.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Where the services and NATS are, and the credentials: flags first, then environment variables, then local defaults. */
export const CONNECTION_OPTIONS = {
  nats: { type: "string" },
  namespace: { type: "string" },
  ingest: { type: "string" },
  "ingest-http": { type: "string" },
  delivery: { type: "string" },
  audience: { type: "string" },
  insights: { type: "string" },
  token: { type: "string" },
  "write-key": { type: "string" },
  timeout: { type: "string" },
  tls: { type: "boolean" },
  "ca-file": { type: "string" },
  "cert-file": { type: "string" },
  "key-file": { type: "string" },
} as const satisfies Options;

export const CONNECTION_HELP = `Connection options (flag, else environment variable, else default):
  --nats <url>            NATS_URL                  nats://127.0.0.1:4222
  --namespace <ns>        SWITCHYARD_NAMESPACE      switchyard
  --ingest <host:port>    SWITCHYARD_INGEST_ADDR    127.0.0.1:50051  (IngestService)
  --ingest-http <url>     SWITCHYARD_INGEST_URL     http://127.0.0.1:8080  (Segment HTTP API)
  --delivery <host:port>  SWITCHYARD_DELIVERY_ADDR  127.0.0.1:50052  (ConfigService, DeliveryService)
  --audience <host:port>  SWITCHYARD_AUDIENCE_ADDR  127.0.0.1:50053  (AudienceService, DeletionService)
  --insights <host:port>  SWITCHYARD_INSIGHTS_ADDR  127.0.0.1:50054  (InsightsService)
  --token <token>         SWITCHYARD_ADMIN_TOKEN    (admin APIs)
  --write-key <key>       SWITCHYARD_WRITE_KEY      (IngestService, Segment HTTP API)
  --timeout <ms>          SWITCHYARD_TIMEOUT_MS     10000
  --tls                   SWITCHYARD_TLS=1          gRPC over TLS (services with SWITCHYARD_TLS_CERT_FILE)
  --ca-file <pem>         SWITCHYARD_CA_FILE        CAs to trust instead of the system's (implies --tls)
  --cert-file <pem>       SWITCHYARD_CLIENT_CERT_FILE  client certificate, for mutual TLS
  --key-file <pem>        SWITCHYARD_CLIENT_KEY_FILE   its private key
  (For --http to an https:// URL with a private CA, set NODE_EXTRA_CA_CERTS=<pem>.)`;

export interface Connection {
  natsUrl: string;
  namespace: string;
  ingest: string;
  ingestHttp: string;
  delivery: string;
  audience: string;
  insights: string;
  adminToken: string | undefined;
  writeKey: string | undefined;
  timeoutMs: number;
  /** Set when gRPC goes over TLS: PEM contents (undefined: the system's CAs, no client certificate). */
  tls: { ca: Buffer | undefined; cert: Buffer | undefined; key: Buffer | undefined } | undefined;
}

export function connectionFrom(values: ParsedValues, env: NodeJS.ProcessEnv, command: string): Connection {
  const pick = (flag: string, variable: string, fallback?: string): string | undefined => {
    const value = stringOption(values, flag);
    if (value !== undefined && value !== "") return value;
    const fromEnv = env[variable];
    return fromEnv !== undefined && fromEnv !== "" ? fromEnv : fallback;
  };
  const timeout = pick("timeout", "SWITCHYARD_TIMEOUT_MS", "10000")!;
  const timeoutMs = Number(timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw usageError(`--timeout: must be a positive number of milliseconds, got "${timeout}"`, command);
  return {
    natsUrl: pick("nats", "NATS_URL", "nats://127.0.0.1:4222")!,
    namespace: pick("namespace", "SWITCHYARD_NAMESPACE", "switchyard")!,
    ingest: pick("ingest", "SWITCHYARD_INGEST_ADDR", "127.0.0.1:50051")!,
    ingestHttp: pick("ingest-http", "SWITCHYARD_INGEST_URL", "http://127.0.0.1:8080")!,
    delivery: pick("delivery", "SWITCHYARD_DELIVERY_ADDR", "127.0.0.1:50052")!,
    audience: pick("audience", "SWITCHYARD_AUDIENCE_ADDR", "127.0.0.1:50053")!,
    insights: pick("insights", "SWITCHYARD_INSIGHTS_ADDR", "127.0.0.1:50054")!,
    adminToken: pick("token", "SWITCHYARD_ADMIN_TOKEN"),
    writeKey: pick("write-key", "SWITCHYARD_WRITE_KEY"),
    timeoutMs,
    tls: tlsFrom(values, pick),
  };
}

function tlsFrom(values: ParsedValues, pick: (flag: string, variable: string) => string | undefined): Connection["tls"] {
  const caFile = pick("ca-file", "SWITCHYARD_CA_FILE");
  const certFile = pick("cert-file", "SWITCHYARD_CLIENT_CERT_FILE");
  const keyFile = pick("key-file", "SWITCHYARD_CLIENT_KEY_FILE");
  const on = values.tls === true || process.env.SWITCHYARD_TLS === "1" || caFile !== undefined || certFile !== undefined;
  if (!on) return undefined;
  if ((certFile === undefined) !== (keyFile === undefined)) throw new CliError("--cert-file and --key-file go together (mutual TLS)", 2);
  const read = (flag: string, file: string | undefined) => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (error) {
      throw new CliError(`--${flag}: cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`, 2);
    }
  };
  return { ca: read("ca-file", caFile), cert: read("cert-file", certFile), key: read("key-file", keyFile) };
}

export type ParsedValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/**
 * node:util parseArgs, strict, with its errors turned into usage errors that name the command.
 * Returns undefined when --help was asked for (the caller prints its help).
 */
export function parseCommandArgs(
  command: string,
  argv: string[],
  options: Options,
): { values: ParsedValues; positionals: string[] } | undefined {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw usageError(error instanceof Error ? error.message.replace(/\. To specify.*$/s, "") : String(error), command);
  }
  if (parsed.values.help) return undefined;
  return { values: parsed.values as ParsedValues, positionals: parsed.positionals };
}

/** A string option's value (the last one when repeated). */
export function stringOption(values: ParsedValues, name: string): string | undefined {
  const value = values[name];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string").at(-1);
  return typeof value === "string" ? value : undefined;
}

/** Every value of a repeatable string option. */
export function stringsOption(values: ParsedValues, name: string): string[] {
  const value = values[name];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  return typeof value === "string" ? [value] : [];
}

/** A non-negative integer option, or a usage error naming the flag. */
export function integerOption(values: ParsedValues, name: string, command: string): number | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value)) throw usageError(`--${name}: must be a whole number, got "${text}"`, command);
  return value;
}

/** A JSON flag value, parsed, or a usage error naming the flag. */
export function jsonOption(flag: string, text: string | undefined, command: string): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw usageError(`--${flag}: must be valid JSON, got ${JSON.stringify(text)}`, command);
  }
}

/** Writes one JSON value as one line on stdout. */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
