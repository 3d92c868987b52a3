import { CALL_FIELDS, CALL_TYPES } from "@switchyard/contracts";
import { writeKeyAuthorization } from "../write-key-auth.js";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connectionFrom, jsonOption, parseCommandArgs, printJsonLine, stringOption } from "../args.js";
import { CliError, usageError } from "../cli-error.js";
import { invoke, requireMethod } from "../rpc.js";

export const SEND_HELP = `Usage: switchyard send [options]

Sends one test call with a source's write key, over gRPC (IngestService/IngestCall) or, with
--http, through the Segment-compatible HTTP API (POST /v1/<type>). Prints the answer as JSON.

Options:
  --type <type>          identify, track (default), page, screen, group or alias
  --user-id <id>         default "cli-user" (unless --anonymous-id is given)
  --anonymous-id <id>
  --message-id <id>      default: made by ingest
  --event <name>         track: the event (default "Switchyard CLI Test")
  --name <name>          page, screen: the page or screen name
  --category <name>      page, screen
  --group-id <id>        group: required
  --previous-id <id>     alias: required
  --properties <json>    track, page, screen
  --traits <json>        identify, group
  --context <json>       --integrations <json>
  --timestamp <iso>      for a historical import
  --json <json>          the whole call as Segment JSON (with "type"); other call flags are ignored
  --http                 send through the Segment HTTP API instead of gRPC
${CONNECTION_HELP}

Examples:
  npx switchyard send --write-key wk_example_web_0123456789
  npx switchyard send --write-key wk_example_web_0123456789 --event "Order Completed" --properties '{"revenue":42}'
  SWITCHYARD_WRITE_KEY=wk_example_web_0123456789 npx switchyard send --type identify --user-id u1 --traits '{"plan":"pro"}' --http`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  type: { type: "string" },
  "user-id": { type: "string" },
  "anonymous-id": { type: "string" },
  "message-id": { type: "string" },
  event: { type: "string" },
  name: { type: "string" },
  category: { type: "string" },
  "group-id": { type: "string" },
  "previous-id": { type: "string" },
  properties: { type: "string" },
  traits: { type: "string" },
  context: { type: "string" },
  integrations: { type: "string" },
  timestamp: { type: "string" },
  json: { type: "string" },
  http: { type: "boolean" },
} as const;

type SegmentCall = Record<string, unknown> & { type: string };

export async function send(argv: string[]): Promise<void> {
  const args = parseCommandArgs("send", argv, OPTIONS);
  if (!args) return void process.stdout.write(`${SEND_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "send");
  if (!connection.writeKey) throw usageError("a write key is needed: pass --write-key or set SWITCHYARD_WRITE_KEY", "send");
  const call = segmentCall(args.values);
  if (!(CALL_TYPES as readonly string[]).includes(call.type) || call.type === "delete")
    throw usageError(`--type: must be identify, track, page, screen, group or alias, got "${call.type}"`, "send");

  if (args.values.http === true) {
    const url = `${connection.ingestHttp.replace(/\/+$/, "")}/v1/${call.type}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { authorization: writeKeyAuthorization(connection.writeKey), "content-type": "application/json" },
        body: JSON.stringify(call),
        signal: AbortSignal.timeout(connection.timeoutMs),
      });
    } catch (error) {
      throw new CliError(
        `POST ${url}: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}`,
      );
    }
    const text = await response.text();
    if (!response.ok) throw new CliError(`POST ${url}: HTTP ${response.status}: ${text}`);
    return printJsonLine(JSON.parse(text));
  }
  printJsonLine(await invoke(requireMethod("switchyard.v1.IngestService/IngestCall"), [{ call: protoJsonCall(call) }], connection));
}

function segmentCall(values: Record<string, unknown>): SegmentCall {
  const get = (name: string) => stringOption(values as never, name);
  const json = jsonOption("json", get("json"), "send");
  if (json !== undefined) {
    if (typeof json !== "object" || json === null || typeof (json as { type?: unknown }).type !== "string")
      throw usageError('--json: must be a JSON object with a "type"', "send");
    return json as SegmentCall;
  }
  const type = get("type") ?? "track";
  const anonymousId = get("anonymous-id");
  const call: SegmentCall = {
    type,
    userId: get("user-id") ?? (anonymousId ? undefined : "cli-user"),
    anonymousId,
    messageId: get("message-id"),
    timestamp: get("timestamp"),
    context: jsonOption("context", get("context"), "send"),
    integrations: jsonOption("integrations", get("integrations"), "send"),
  };
  if (type === "track")
    Object.assign(call, { event: get("event") ?? "Switchyard CLI Test", properties: jsonOption("properties", get("properties"), "send") });
  if (type === "page" || type === "screen")
    Object.assign(call, { name: get("name"), category: get("category"), properties: jsonOption("properties", get("properties"), "send") });
  if (type === "identify") Object.assign(call, { traits: jsonOption("traits", get("traits"), "send") });
  if (type === "group") Object.assign(call, { groupId: get("group-id"), traits: jsonOption("traits", get("traits"), "send") });
  if (type === "alias") Object.assign(call, { previousId: get("previous-id") });
  return Object.fromEntries(Object.entries(call).filter(([, value]) => value !== undefined)) as SegmentCall;
}

/** Call's own fields (the Call model's), which stay at the top of its proto3 JSON. */
const OWN_KEYS = new Set<string>(CALL_FIELDS.filter((field) => field.kind !== "payload").map((field) => field.json));

/** The Segment JSON call as the proto3 JSON of switchyard.v1.Call (the type's fields go in its oneof member). */
function protoJsonCall(call: SegmentCall): Record<string, unknown> {
  const { type, ...rest } = call;
  const json: Record<string, unknown> = {};
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) (OWN_KEYS.has(key) ? json : payload)[key] = value;
  json[type] = payload;
  return json;
}
