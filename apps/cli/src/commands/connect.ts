import { readFile } from "node:fs/promises";
import type { configApi } from "@switchyard/contracts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connectionFrom, parseCommandArgs, stringOption } from "../args.js";
import { CliError, usageError } from "../cli-error.js";
import { invokeMessages, requireMethod } from "../rpc.js";

export const CONNECT_HELP = `Usage: switchyard connect <source> <destination> [--filter <json | @file>] [options]

Connects a source to a destination through switchyard.v1.ConfigService (needs the admin token):
the destination receives the source's calls, only those the filter matches when one is given.
Connecting again replaces the connection: without --filter, a filter set before is removed.
Prints the connection.

  --filter <json | @file>   A CallFilter as proto3 JSON, as in a workspace file's
                            connections[].filter: exactly one of "all" / "any" ({"filters": [...]}),
                            "not" (a filter) or "field" ({"path": ..., and one test: equals,
                            notEquals, exists, in, notIn, greaterThan, greaterOrEqual, lessThan,
                            lessOrEqual, contains}). Paths as the webhook body spells them: type,
                            event, name, userId, anonymousId, messageId, groupId, previousId,
                            properties.<key>..., traits.<key>..., context.<key>... (docs/api.md,
                            "Destination filters").

${CONNECTION_HELP}

Examples:
  export SWITCHYARD_ADMIN_TOKEN=<the token npm start printed>
  npx switchyard connect web-backend example-receiver
  npx switchyard connect web-backend example-receiver \\
    --filter '{"all":{"filters":[{"field":{"path":"type","equals":"track"}},{"field":{"path":"properties.revenue","greaterThan":0}}]}}'
  npx switchyard connect web-backend example-receiver --filter @paying-tracks.json`;

export async function connect(argv: string[]): Promise<void> {
  const args = parseCommandArgs("connect", argv, { ...CONNECTION_OPTIONS, filter: { type: "string" } });
  if (!args) return void process.stdout.write(`${CONNECT_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "connect");
  const [sourceId, destinationId, ...rest] = args.positionals;
  if (!sourceId || !destinationId)
    throw usageError("connect: which source and destination? e.g. connect web-backend example-receiver", "connect");
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}" (give the filter with --filter)`, "connect");
  const filterText = stringOption(args.values, "filter");
  const filter = filterText === undefined ? undefined : callFilterMessage(await filterJson(filterText), "filter");
  const request: configApi.ConnectRequest = { sourceId, destinationId, filter };
  const response = await invokeMessages(requireMethod("ConfigService/Connect"), [request], connection);
  process.stdout.write(`${JSON.stringify(response, null, 2)}\n`);
}

async function filterJson(text: string): Promise<unknown> {
  let source = text;
  if (text.startsWith("@")) {
    try {
      source = await readFile(text.slice(1), "utf8");
    } catch (error) {
      throw new CliError(`--filter: cannot read ${text.slice(1)}: ${error instanceof Error ? error.message : String(error)}`, 2);
    }
  }
  try {
    return JSON.parse(source);
  } catch {
    throw usageError(`--filter: not valid JSON: ${source.slice(0, 80)}`, "connect");
  }
}

/** The tests of a FieldCondition by proto3 JSON name (camelCase, or the proto's snake_case). */
const TESTS: Record<string, NonNullable<configApi.FieldCondition["test"]>["$case"]> = {
  equals: "equals",
  notEquals: "notEquals",
  not_equals: "notEquals",
  exists: "exists",
  in: "in",
  notIn: "notIn",
  not_in: "notIn",
  greaterThan: "greaterThan",
  greater_than: "greaterThan",
  greaterOrEqual: "greaterOrEqual",
  greater_or_equal: "greaterOrEqual",
  lessThan: "lessThan",
  less_than: "lessThan",
  lessOrEqual: "lessOrEqual",
  less_or_equal: "lessOrEqual",
  contains: "contains",
};

/**
 * The CallFilter message of proto3 JSON. Unlike the generated fromJSON it keeps a `null` to
 * compare with and refuses what the message cannot carry (an unknown name, two kinds or two
 * tests at once, a value of the wrong JSON type) instead of dropping it; the service checks
 * the rest (paths, limits) and names what it refuses.
 */
function callFilterMessage(json: unknown, at: string): configApi.CallFilter {
  const entry = onlyMember(json, at, ["all", "any", "not", "field"], 'exactly one of "all", "any", "not", "field"');
  const [kind, value] = entry;
  if (kind === "all" || kind === "any") {
    const list = onlyMember(value, `${at}.${kind}`, ["filters"], '{"filters": [...]}', true);
    const filters = list[1] ?? [];
    if (!Array.isArray(filters)) throw filterError(`${at}.${kind}.filters`, "must be a list of filters");
    return {
      filter: {
        $case: kind,
        value: { filters: filters.map((inner, index) => callFilterMessage(inner, `${at}.${kind}.filters.${index}`)) },
      },
    };
  }
  if (kind === "not") return { filter: { $case: "not", value: callFilterMessage(value, `${at}.not`) } };
  return { filter: { $case: "field", value: fieldCondition(value, `${at}.field`) } };
}

function fieldCondition(json: unknown, at: string): configApi.FieldCondition {
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw filterError(at, '{"path": ..., and one test}');
  const { path, ...tests } = json as Record<string, unknown>;
  if (path !== undefined && typeof path !== "string") throw filterError(`${at}.path`, "must be a string");
  const [name, value] = onlyMember(tests, at, Object.keys(TESTS), `one test: ${[...new Set(Object.values(TESTS))].join(", ")}`);
  const test = TESTS[name]!;
  const wrongType = (rule: string) => filterError(`${at}.${name}`, rule);
  let result: configApi.FieldCondition["test"];
  switch (test) {
    case "equals":
    case "notEquals":
      result = { $case: test, value };
      break;
    case "exists":
      if (typeof value !== "boolean") throw wrongType("must be true or false");
      result = { $case: test, value };
      break;
    case "in":
    case "notIn":
      if (!Array.isArray(value)) throw wrongType("must be a list of values");
      result = { $case: test, value };
      break;
    case "contains":
      if (typeof value !== "string") throw wrongType("must be a string");
      result = { $case: test, value };
      break;
    default:
      if (typeof value !== "number") throw wrongType("must be a number");
      result = { $case: test, value };
  }
  return { path: path ?? "", test: result };
}

/** The one member of a JSON object, named among `names`; a CliError naming `at` otherwise. */
function onlyMember(json: unknown, at: string, names: string[], rule: string, optional = false): [string, unknown] {
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw filterError(at, `must be an object: ${rule}`);
  const keys = Object.keys(json);
  const unknown = keys.find((key) => !names.includes(key));
  if (unknown !== undefined) throw filterError(`${at}.${unknown}`, `is not allowed here: give ${rule}`);
  if (keys.length === 0 && optional) return [names[0]!, undefined];
  if (keys.length !== 1) throw filterError(at, `give ${rule}${keys.length > 1 ? ` (got ${keys.join(" and ")})` : ""}`);
  return [keys[0]!, (json as Record<string, unknown>)[keys[0]!]];
}

function filterError(at: string, rule: string): CliError {
  return usageError(`--filter: ${at}: ${rule}`, "connect");
}
