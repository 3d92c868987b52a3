import { CONNECTION_HELP, CONNECTION_OPTIONS, connectionFrom, parseCommandArgs, stringsOption } from "../args.js";
import { usageError } from "../cli-error.js";
import { callUnary } from "../rpc.js";

const OPTIONS_HELP = `  --type <type>     A call type: identify, track, page, screen, group or alias (repeatable)
  --event <name>    A track event name, exact and case-sensitive (repeatable)`;

export const BLOCK_HELP = `Usage: switchyard block <sourceId> [--type <type>]... [--event <name>]... [options]

Blocks calls at the source (ConfigService/BlockCalls, needs the admin token): ingest still
accepts them, so clients do not retry, but stores them on the filtered stream (<ns>.filtered.>)
instead of forwarding them to any destination. Adds to what the source already blocks; applies
to calls accepted after the change, on every ingest replica within a second. Prints the source,
its blocks under "blocked". \`switchyard unblock\` lifts blocks; \`switchyard config get\` shows
every source's.

${OPTIONS_HELP}

${CONNECTION_HELP}

Examples:
  npx switchyard block web-backend --event "Debug Ping" --event "Heartbeat"
  npx switchyard block web-backend --type page --type screen`;

export const UNBLOCK_HELP = `Usage: switchyard unblock <sourceId> [--type <type>]... [--event <name>]... [options]

Lifts blocks set by \`switchyard block\` (ConfigService/UnblockCalls, needs the admin token), for
calls accepted after the change; names not blocked are ignored. Prints the source, with what it
still blocks under "blocked".

${OPTIONS_HELP}

${CONNECTION_HELP}

Examples:
  npx switchyard unblock web-backend --event "Heartbeat"
  npx switchyard unblock web-backend --type page`;

const OPTIONS = { ...CONNECTION_OPTIONS, type: { type: "string", multiple: true }, event: { type: "string", multiple: true } } as const;

export function block(argv: string[]): Promise<void> {
  return change("block", argv);
}

export function unblock(argv: string[]): Promise<void> {
  return change("unblock", argv);
}

async function change(command: "block" | "unblock", argv: string[]): Promise<void> {
  const args = parseCommandArgs(command, argv, OPTIONS);
  if (!args) return void process.stdout.write(`${command === "block" ? BLOCK_HELP : UNBLOCK_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, command);
  const [sourceId, ...rest] = args.positionals;
  if (!sourceId) throw usageError(`${command}: which source? e.g. ${command} web-backend --event "Debug Ping"`, command);
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}"`, command);
  const calls = { types: stringsOption(args.values, "type"), trackEvents: stringsOption(args.values, "event") };
  if (calls.types.length === 0 && calls.trackEvents.length === 0) throw usageError(`${command}: give --type or --event, or both`, command);
  const response =
    command === "block"
      ? await callUnary("switchyard.v1.ConfigService/BlockCalls", { sourceId, block: calls }, connection)
      : await callUnary("switchyard.v1.ConfigService/UnblockCalls", { sourceId, unblock: calls }, connection);
  process.stdout.write(`${JSON.stringify(response, null, 2)}\n`);
}
