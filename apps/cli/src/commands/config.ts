import { readFile } from "node:fs/promises";
import {
  CONNECTION_HELP,
  CONNECTION_OPTIONS,
  connectionFrom,
  integerOption,
  parseCommandArgs,
  stringOption,
  type Connection,
} from "../args.js";
import { CliError, usageError } from "../cli-error.js";
import { callUnary } from "../rpc.js";

export const CONFIG_HELP = `Usage: switchyard config <get | apply <file> | rotate-signing-secret <destination>> [options]

Manages the workspace through switchyard.v1.ConfigService (needs the admin token).

  get                            Prints the workspace as JSON: sources (write keys are never
                                 shown, only counted), destinations (secrets shown as "[set]",
                                 header and URL query values as "[set:hmac:<fingerprint>]"),
                                 connections
  apply <file>                   Applies a workspace file (format: config/workspace.example.json):
                                 its sources, destinations and connections are created or
                                 replaced; others are kept. Applying it again changes nothing.
  rotate-signing-secret <dest>   Replaces a destination's Standard Webhooks signing secret; the
                                 previous one keeps signing for the grace period. Prints the new
                                 secret (shown only once).
      --grace-seconds <n>        default 86400 (24 h); 0 stops the previous secret at once
      --secret <whsec_...>       default: a new random secret

${CONNECTION_HELP}

Examples:
  export SWITCHYARD_ADMIN_TOKEN=<the token npm start printed>
  npx switchyard config get
  npx switchyard config apply config/workspace.example.json
  npx switchyard config rotate-signing-secret example-receiver --grace-seconds 3600`;

export async function config(argv: string[]): Promise<void> {
  const args = parseCommandArgs("config", argv, { ...CONNECTION_OPTIONS, "grace-seconds": { type: "string" }, secret: { type: "string" } });
  if (!args) return void process.stdout.write(`${CONFIG_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "config");
  const [action, target, ...rest] = args.positionals;
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}"`, "config");
  switch (action) {
    case "get":
      return printPretty(await workspace(connection));
    case "apply": {
      if (!target) throw usageError("config apply: which file? e.g. config apply config/workspace.example.json", "config");
      let text: string;
      try {
        text = await readFile(target, "utf8");
      } catch (error) {
        throw new CliError(`cannot read ${target}: ${error instanceof Error ? error.message : String(error)}`);
      }
      return printPretty(await callUnary("switchyard.v1.ConfigService/ApplyWorkspace", { workspaceJson: text }, connection));
    }
    case "rotate-signing-secret": {
      if (!target) throw usageError("rotate-signing-secret: which destination?", "config");
      const graceSeconds = integerOption(args.values, "grace-seconds", "config") ?? 86_400;
      const request = { destinationId: target, graceSeconds, signingSecret: stringOption(args.values, "secret") ?? "" };
      return printPretty(await callUnary("switchyard.v1.ConfigService/RotateSigningSecret", request, connection));
    }
    default:
      throw usageError(action ? `unknown config action "${action}"` : "config: get, apply or rotate-signing-secret?", "config");
  }
}

async function workspace(connection: Connection): Promise<unknown> {
  const [sources, destinations, connections] = await Promise.all([
    callUnary("switchyard.v1.ConfigService/ListSources", {}, connection),
    callUnary("switchyard.v1.ConfigService/ListDestinations", {}, connection),
    callUnary("switchyard.v1.ConfigService/ListConnections", {}, connection),
  ]);
  return {
    sources: sources.sources ?? [],
    destinations: destinations.destinations ?? [],
    connections: connections.connections ?? [],
  };
}

function printPretty(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
