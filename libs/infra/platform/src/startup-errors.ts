import { isConfigError } from "./errors.js";

/**
 * The one line a service prints when it cannot start for a reason the operator can fix
 * (a bad setting, a port in use, NATS without JetStream), or undefined for anything else
 * (a bug: printed with its stack). Each line names the setting that fixes it.
 */
export function startupErrorLine(service: string, error: unknown, config?: Record<string, unknown>): string | undefined {
  if (isConfigError(error)) return error.message;
  const message = error instanceof Error ? error.message : String(error);

  if ((error as { code?: unknown } | null)?.code === "EADDRINUSE" || message.includes("EADDRINUSE")) {
    const address = /EADDRINUSE[^\d[]*(\S+):(\d+)/.exec(message);
    const port = Number((error as { port?: unknown }).port ?? address?.[2]);
    const where = address ? `${address[1]}:${address[2]}` : `port ${port}`;
    const variables = config ? Object.keys(config).filter((key) => key.endsWith("_PORT") && config[key] === port) : [];
    const fix = variables.length > 0 ? `set ${variables.join(" or ")} to another port` : "free the port or choose another one";
    return `${service}: cannot listen on ${where}: the port is in use (another \`npm start\` or ${service} running?); ${fix}`;
  }

  if (isJetStreamMissing(error)) {
    const servers = Array.isArray(config?.NATS_URL) ? (config.NATS_URL as string[]).map(withoutCredentials).join(",") : "NATS_URL";
    return (
      `${service}: the NATS server at ${servers} has JetStream disabled, and Switchyard stores calls in JetStream; ` +
      "run one with JetStream on (`nats-server -js`), or set NATS_URL to a server that has it"
    );
  }
  return undefined;
}

function isJetStreamMissing(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (current.name === "JetStreamNotEnabled" || /jetstream (is )?not enabled/i.test(current.message)) return true;
  }
  return false;
}

/** nats://user:pass@host:4222 -> nats://host:4222: credentials never go into logs. */
function withoutCredentials(server: string): string {
  return server.replace(/^([a-z]+:\/\/)?[^@/]*@/i, (_match, scheme: string | undefined) => scheme ?? "");
}
