import { readFile } from "node:fs/promises";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connectionFrom, parseCommandArgs } from "../args.js";
import { CliError, usageError } from "../cli-error.js";
import { findMethod, invoke, methodNames } from "../rpc.js";

export const CALL_HELP = `Usage: switchyard call <Service/Method> [request-json | @file | -] [options]

Calls any Switchyard gRPC method with a proto3 JSON request (camelCase or snake_case field
names, as grpcurl takes them) and prints the JSON response. The address and the credentials
follow from the service: IngestService uses --ingest and the write key, the others the admin
token (ConfigService and DeliveryService at --delivery, AudienceService and DeletionService at
--audience, InsightsService at --insights). A client-streaming method (SyncAudienceSnapshot,
SyncTraitSnapshot) takes a JSON array: one element per stream message. Without a request, {}
is sent.

Options:
  --list         Print every method
${CONNECTION_HELP}

Examples:
  npx switchyard call --list
  npx switchyard call ConfigService/ListSources
  npx switchyard call DeliveryService/GetDeliveryStats '{"destinationId":"example-receiver"}'
  npx switchyard call IngestService/IngestBatch --write-key wk_example_web_0123456789 \\
    '{"calls":[{"userId":"u1","track":{"event":"Signed Up"}}]}'
  npx switchyard call AudienceService/SyncAudienceSnapshot \\
    '[{"header":{"sourceId":"web-backend","name":"High Value Users","syncId":"s1"},"userIds":["u1","u2"]}]'
  npx switchyard call DeletionService/RequestDeletion '{"userId":"u1"}'`;

export async function call(argv: string[]): Promise<void> {
  const args = parseCommandArgs("call", argv, { ...CONNECTION_OPTIONS, list: { type: "boolean" } });
  if (!args) return void process.stdout.write(`${CALL_HELP}\n`);
  if (args.values.list === true) return void process.stdout.write(`${methodNames().join("\n")}\n`);
  const connection = connectionFrom(args.values, process.env, "call");
  const [name, input, ...rest] = args.positionals;
  if (!name) throw usageError("which method? e.g. switchyard call ConfigService/ListSources (--list shows all)", "call");
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}" (give the request as one JSON argument)`, "call");
  const method = findMethod(name);
  if (!method) throw usageError(`no method "${name}"; switchyard call --list shows them`, "call");

  const text = await requestText(input);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw usageError(`the request is not valid JSON: ${text.slice(0, 80)}`, "call");
  }
  const requests = method.requestStream ? (Array.isArray(json) ? json : [json]) : [json];
  if (!method.requestStream && Array.isArray(json)) throw usageError(`${method.fullName} takes one JSON object, not an array`, "call");
  process.stdout.write(`${JSON.stringify(await invoke(method, requests, connection), null, 2)}\n`);
}

async function requestText(input: string | undefined): Promise<string> {
  if (input === undefined) return "{}";
  if (input === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  if (input.startsWith("@")) {
    try {
      return await readFile(input.slice(1), "utf8");
    } catch (error) {
      throw new CliError(`cannot read ${input.slice(1)}: ${error instanceof Error ? error.message : String(error)}`, 2);
    }
  }
  return input;
}
