import type { Msg } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import {
  BUS_MESSAGE_TYPE_HEADER,
  BUS_MESSAGE_TYPE_NAMES,
  NATS_MSG_ID_HEADER,
  POISON_HEADERS,
  busMessageTypes,
  busNames,
  type BusMessageType,
  type BusNames,
} from "@switchyard/bus";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connectionFrom, integerOption, parseCommandArgs, printJsonLine } from "../args.js";
import { CliError } from "../cli-error.js";

export const TAIL_HELP = `Usage: switchyard tail [subject...] [options]

Follows NATS subjects live and prints every message as one JSON line on stdout: its subject,
its protobuf type (the Switchyard-Type header) and its payload decoded to proto3 JSON.
Without a subject it follows everything of the namespace (<ns>.>). Shorthands: calls, filtered
(calls blocked at their source), usage, retry, dead, poison, deliverylog (each means
<ns>.<name>.>); anything else is used as a NATS subject.
A poison message's line also has "poison": where it came from and why it was set aside.

Options:
  --calls          One line per call instead of per batch (CallBatch messages):
                   {"subject","sourceId","batchId","call":{...}}
  --count <n>      Exit after printing n lines
${CONNECTION_HELP}

Examples:
  npx switchyard tail
  npx switchyard tail calls --calls
  npx switchyard tail 'switchyard.calls.web-backend' --count 1
  npx switchyard tail deliverylog | jq 'select(.payload.outcome == "permanent")'`;

/** Shorthand names of the namespace's subject families, and the wildcard each stands for. */
const FAMILIES: Record<string, (names: BusNames) => string> = {
  calls: (names) => names.callsSubjects,
  filtered: (names) => names.filteredSubjects,
  usage: (names) => names.usageSubjects,
  retry: (names) => names.retrySubjects,
  dead: (names) => names.deadSubjects,
  poison: (names) => names.poisonSubjects,
  deliverylog: (names) => names.deliveryLogSubjects,
};

export async function tail(argv: string[]): Promise<void> {
  const args = parseCommandArgs("tail", argv, { ...CONNECTION_OPTIONS, calls: { type: "boolean" }, count: { type: "string" } });
  if (!args) return void process.stdout.write(`${TAIL_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "tail");
  const perCall = args.values.calls === true;
  const limit = integerOption(args.values, "count", "tail");
  // Subject families as docs/subjects.md (and @switchyard/platform's busNames) lay them out.
  const { namespace } = connection;
  const subjects = args.positionals.length === 0 ? [`${namespace}.>`] : args.positionals.map((s) => expandSubject(s, namespace));

  let nc;
  try {
    nc = await connect({ servers: connection.natsUrl.split(","), name: "switchyard-cli-tail", maxReconnectAttempts: -1 });
  } catch (error) {
    throw new CliError(`cannot connect to NATS at ${connection.natsUrl}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let printed = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const emit = (line: unknown) => {
    if (limit !== undefined && printed >= limit) return;
    printJsonLine(line);
    if (limit !== undefined && ++printed >= limit) finish();
  };
  for (const subject of subjects) {
    nc.subscribe(subject, {
      callback: (error, message) => {
        if (error) return void process.stderr.write(`tail: ${subject}: ${error.message}\n`);
        for (const line of describe(message, perCall)) emit(line);
      },
    });
  }
  await nc.flush(); // the server has the subscriptions: nothing published from now on is missed
  process.stderr.write(`tail: following ${subjects.join(", ")} on ${connection.natsUrl} (Ctrl-C to stop)\n`);

  const stop = () => finish();
  // `on`, not `once`: Ctrl-C reaches this process from the terminal and from the bin's forwarding.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, stop);
  process.stdout.on("error", stop); // e.g. `| head` closed the pipe
  await finished;
  // A drain needs the server; when NATS is gone (reconnecting) do not wait for it.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([nc.drain().catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, DRAIN_DEADLINE_MS)))]);
  clearTimeout(timer);
  await nc.close().catch(() => {});
}

const DRAIN_DEADLINE_MS = 2_000;

function expandSubject(subject: string, namespace: string): string {
  if (subject === "all") return `${namespace}.>`;
  const family = Object.hasOwn(FAMILIES, subject) ? FAMILIES[subject] : undefined;
  return family ? family(busNames(namespace)) : subject;
}

/** The JSON line(s) for one message, with where a poison message came from and why. */
function describe(message: Msg, perCall: boolean): unknown[] {
  const reason = message.headers?.get(POISON_HEADERS.reason);
  if (!reason) return describePayload(message, perCall);
  const poison = {
    reason,
    error: message.headers!.get(POISON_HEADERS.error),
    subject: message.headers!.get(POISON_HEADERS.subject),
    sequence: Number(message.headers!.get(POISON_HEADERS.sequence)),
  };
  return describePayload(message, false).map((line) => ({ ...(line as object), poison }));
}

/** The JSON line(s) for one message's payload; undecodable payloads are shown as base64. */
function describePayload(message: Msg, perCall: boolean): unknown[] {
  const type = message.headers?.get(BUS_MESSAGE_TYPE_HEADER) ?? "";
  const msgId = message.headers?.get(NATS_MSG_ID_HEADER) || undefined;
  const codec = type in busMessageTypes ? busMessageTypes[type as BusMessageType] : undefined;
  if (!codec) {
    return [
      { subject: message.subject, type: type || null, size: message.data.length, base64: Buffer.from(message.data).toString("base64") },
    ];
  }
  let decoded;
  try {
    decoded = codec.decode(message.data);
  } catch (error) {
    return [{ subject: message.subject, type, error: `undecodable: ${error instanceof Error ? error.message : String(error)}` }];
  }
  if (perCall && type === BUS_MESSAGE_TYPE_NAMES.callBatch) {
    const batch = busMessageTypes[BUS_MESSAGE_TYPE_NAMES.callBatch].toJSON(decoded as never) as {
      sourceId?: string;
      batchId?: string;
      calls?: unknown[];
    };
    return (batch.calls ?? []).map((call) => ({ subject: message.subject, sourceId: batch.sourceId, batchId: batch.batchId, call }));
  }
  return [{ subject: message.subject, type, ...(msgId ? { msgId } : {}), payload: codec.toJSON(decoded as never) }];
}
