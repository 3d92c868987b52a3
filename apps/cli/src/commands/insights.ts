import { CONNECTION_HELP, CONNECTION_OPTIONS, connectionFrom, parseCommandArgs, stringOption } from "../args.js";
import { usageError } from "../cli-error.js";
import { callUnary } from "../rpc.js";

export const SCHEMA_HELP = `Usage: switchyard schema <source> [--json] [options]

What a source sends, through switchyard.v1.InsightsService (needs the admin token): its calls by
type and name (track event, page or screen name), most recently seen first, with counts over the
last 24 hours, the last 7 days and in total, how many of them were blocked at the source, when the
last one came, and the keys of their properties or traits with their JSON types. Names past the
source's name limit are counted together, one row per type.

  --json        Print the response as JSON instead of a table

${CONNECTION_HELP}

Examples:
  export SWITCHYARD_ADMIN_TOKEN=<the token npm start printed>
  npx switchyard schema web-backend
  npx switchyard schema web-backend --json | jq '.entries[] | select(.type == "track") | .name'`;

export const USAGE_HELP = `Usage: switchyard usage [--source <id>] [--from <day>] [--to <day>] [--json] [options]

Calls per source and UTC day, through switchyard.v1.InsightsService (needs the admin token):
accepted (blocked ones included), filtered (blocked at the source) and rejected (invalid); and per
destination: delivered, filtered (the connection's filter did not match), failed requests and
dead-lettered. Days are kept for at least 90 days.

  --source <id>   One source (default: every source)
  --from <day>    First day, YYYY-MM-DD (default: 29 days before --to)
  --to <day>      Last day, YYYY-MM-DD (default: today, UTC)
  --json          Print the response as JSON instead of a table

${CONNECTION_HELP}

Examples:
  npx switchyard usage
  npx switchyard usage --source web-backend --from 2026-11-01 --to 2026-11-30`;

/** Longest name and key list shown in a table cell; --json has them whole. */
const MAX_NAME_CHARS = 40;
const MAX_KEYS_CHARS = 80;

export async function schema(argv: string[]): Promise<void> {
  const args = parseCommandArgs("schema", argv, { ...CONNECTION_OPTIONS, json: { type: "boolean" } });
  if (!args) return void process.stdout.write(`${SCHEMA_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "schema");
  const [sourceId, ...rest] = args.positionals;
  if (!sourceId) throw usageError("which source? e.g. switchyard schema web-backend", "schema");
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}"`, "schema");
  const answer = await callUnary("switchyard.v1.InsightsService/GetSourceSchema", { sourceId }, connection);
  if (args.values.json === true) return void process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);

  const entries = answer.entries ?? [];
  if (entries.length === 0) return void process.stdout.write(`no calls from ${sourceId} yet\n`);
  const rows = entries.map((entry) => [
    entry.type ?? "",
    entry.overflow ? "(names past the limit)" : cut(entry.name || "-", MAX_NAME_CHARS),
    String(entry.count24h ?? 0),
    String(entry.count7d ?? 0),
    String(entry.countTotal ?? 0),
    String(entry.filteredTotal ?? 0),
    entry.blocked ? "yes" : "",
    shortTime(entry.lastSeen),
    cut((entry.keys ?? []).map((key) => `${key.key ?? ""} (${(key.types ?? []).join("|")})`).join(", "), MAX_KEYS_CHARS),
  ]);
  process.stdout.write(
    table(["TYPE", "NAME", "24H", "7D", "TOTAL", "FILTERED", "BLOCKED", "LAST SEEN", "KEYS"], rows, [false, false, true, true, true, true]),
  );
  const updated = answer.updatedAt ? `, updated ${shortTime(answer.updatedAt)}` : "";
  process.stdout.write(`${entries.length} entries; name limit ${answer.nameLimit ?? 0}${updated}\n`);
}

export async function usage(argv: string[]): Promise<void> {
  const args = parseCommandArgs("usage", argv, {
    ...CONNECTION_OPTIONS,
    source: { type: "string" },
    from: { type: "string" },
    to: { type: "string" },
    json: { type: "boolean" },
  });
  if (!args) return void process.stdout.write(`${USAGE_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "usage");
  if (args.positionals.length > 0) throw usageError(`unexpected argument "${args.positionals[0]}"`, "usage");
  const day = (flag: string) => {
    const value = stringOption(args.values, flag) ?? "";
    if (value !== "" && !/^\d{4}-\d{2}-\d{2}$/.test(value))
      throw usageError(`--${flag}: must be a day as YYYY-MM-DD, got "${value}"`, "usage");
    return value;
  };
  const request = { sourceId: stringOption(args.values, "source") ?? "", fromDay: day("from"), toDay: day("to") };
  const answer = await callUnary("switchyard.v1.InsightsService/GetUsage", request, connection);
  if (args.values.json === true) return void process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);

  const days = answer.days ?? [];
  if (days.length === 0) return void process.stdout.write("no usage in these days\n");
  const rows: string[][] = [];
  for (const entry of days) {
    rows.push([entry.day ?? "", entry.sourceId ?? "", "", n(entry.accepted), n(entry.filtered), n(entry.rejected), "", "", ""]);
    for (const destination of entry.destinations ?? []) {
      rows.push([
        "",
        "",
        destination.destinationId ?? "",
        "",
        n(destination.filtered),
        "",
        n(destination.delivered),
        n(destination.failed),
        n(destination.deadLettered),
      ]);
    }
  }
  process.stdout.write(
    table(["DAY", "SOURCE", "DESTINATION", "ACCEPTED", "FILTERED", "REJECTED", "DELIVERED", "FAILED", "DEAD-LETTERED"], rows, [
      false,
      false,
      false,
      true,
      true,
      true,
      true,
      true,
      true,
    ]),
  );
}

function n(value: number | string | undefined): string {
  return String(value ?? 0);
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** "2026-11-25 09:30:00Z" from an RFC 3339 timestamp. */
function shortTime(text: string | undefined): string {
  if (!text) return "";
  const millis = Date.parse(text);
  return Number.isNaN(millis) ? text : `${new Date(millis).toISOString().slice(0, 19).replace("T", " ")}Z`;
}

/** Columns padded to their widest cell (numbers right-aligned), two spaces apart, no trailing spaces. */
function table(header: string[], rows: string[][], rightAligned: boolean[]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => [...(row[column] ?? "")].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => {
        const pad = " ".repeat(widths[column]! - [...cell].length);
        return rightAligned[column] ? pad + cell : cell + pad;
      })
      .join("  ")
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join("\n")}\n`;
}
