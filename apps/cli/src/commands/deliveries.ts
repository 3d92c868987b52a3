import {
  CONNECTION_HELP,
  CONNECTION_OPTIONS,
  connectionFrom,
  integerOption,
  parseCommandArgs,
  printJsonLine,
  stringOption,
  stringsOption,
} from "../args.js";
import { usageError } from "../cli-error.js";
import { callUnary } from "../rpc.js";
import { readableAttempt } from "./exchange-bodies.js";

export const DELIVERIES_HELP = `Usage: switchyard deliveries <list | show | replay | stats> [options]

The attempt log, dead letters and counts, through switchyard.v1.DeliveryService (needs the admin
token). Prints JSON lines.

  list                  Attempts from the attempt log, newest first, a page at a time: every
                        request made ("delivered", "retryable", "permanent") and every dead letter
                        ("dead_lettered"). When there are more, stderr says the --page-token to pass.
      --destination <id>  --message-id <id>  --limit <n> (per page; default 100, max 1000)
      --outcome <name>  Only this outcome (repeatable)
      --since <time>    Only attempts at or after this time (ISO 8601, e.g. 2026-11-25T10:00:00Z)
      --before <time>   Only attempts before this time
      --page-token <t>  The next page (same filters)
      --all             Follow every page to the end
      --dead            List dead letters instead (each with the "sequence" replay takes)
      --after <sequence>  (dead letters: continue after this sequence)
  show <attempt_id>     One attempt with its request and response (headers, credentials masked).
                        A body that is JSON is shown as JSON, other UTF-8 text as a string, other
                        bytes in base64; "requestBodyEncoding" / "responseBodyEncoding" say which
                        ("json", "text", "base64"). JSON is embedded only when it is exactly the
                        bytes sent; otherwise it is shown as text.
      --raw             Every body in base64, exactly the bytes (as DeliveryService gives them)
  replay                Puts dead letters back on the retry path with a fresh window
      --sequence <n>    A dead letter's sequence (repeatable), or
      --destination <id>  every dead letter of that destination
  stats                 Delivered, failed attempts and dead-lettered per destination
      --destination <id>

${CONNECTION_HELP}

Examples:
  export SWITCHYARD_ADMIN_TOKEN=<the token npm start printed>
  npx switchyard deliveries list --destination example-receiver --limit 10
  npx switchyard deliveries list --outcome permanent --outcome dead_lettered --since 2026-11-25T00:00:00Z
  npx switchyard deliveries show d.42.7
  npx switchyard deliveries show d.42.7 --raw
  npx switchyard deliveries list --dead
  npx switchyard deliveries replay --sequence 1 --sequence 2
  npx switchyard deliveries replay --destination example-receiver
  npx switchyard deliveries stats`;

export async function deliveries(argv: string[]): Promise<void> {
  const args = parseCommandArgs("deliveries", argv, {
    ...CONNECTION_OPTIONS,
    dead: { type: "boolean" },
    destination: { type: "string" },
    "message-id": { type: "string" },
    limit: { type: "string" },
    after: { type: "string" },
    sequence: { type: "string", multiple: true },
    outcome: { type: "string", multiple: true },
    since: { type: "string" },
    before: { type: "string" },
    "page-token": { type: "string" },
    all: { type: "boolean" },
    raw: { type: "boolean" },
  });
  if (!args) return void process.stdout.write(`${DELIVERIES_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "deliveries");
  const { values } = args;
  const [action, ...rest] = args.positionals;
  if (action === "show") {
    if (rest.length !== 1) throw usageError("show: which attempt? Pass one attempt_id (from deliveries list)", "deliveries");
    const shown = await callUnary("switchyard.v1.DeliveryService/GetDeliveryAttempt", { attemptId: rest[0] }, connection);
    printJsonLine(values.raw === true ? (shown.attempt ?? {}) : readableAttempt(shown.attempt ?? {}));
    return;
  }
  if (values.raw === true) throw usageError("--raw: only for show", "deliveries");
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}"`, "deliveries");
  const destinationId = stringOption(values, "destination") ?? "";
  const limit = integerOption(values, "limit", "deliveries") ?? 0;

  switch (action) {
    case "list": {
      if (values.dead === true) {
        const afterSequence = integerOption(values, "after", "deliveries") ?? 0;
        const page = await callUnary("switchyard.v1.DeliveryService/ListDeadLetters", { destinationId, afterSequence, limit }, connection);
        for (const entry of page.entries ?? []) printJsonLine(entry);
        if (page.nextAfterSequence) process.stderr.write(`deliveries: more after --after ${page.nextAfterSequence}\n`);
        return;
      }
      const request = {
        destinationId,
        messageId: stringOption(values, "message-id") ?? "",
        limit,
        outcomes: outcomesOption(values),
        ...timeOption(values, "since"),
        ...timeOption(values, "before"),
      };
      let pageToken = stringOption(values, "page-token") ?? "";
      do {
        const page = await callUnary("switchyard.v1.DeliveryService/ListDeliveryAttempts", { ...request, pageToken }, connection);
        for (const attempt of page.attempts ?? []) printJsonLine(attempt);
        pageToken = page.nextPageToken ?? "";
      } while (pageToken && values.all === true);
      if (pageToken) process.stderr.write(`deliveries: more with --page-token ${pageToken}\n`);
      return;
    }
    case "replay": {
      const sequences = stringsOption(values, "sequence").map((text) => {
        if (!/^\d+$/.test(text)) throw usageError(`--sequence: must be a whole number, got "${text}"`, "deliveries");
        return Number(text);
      });
      if (sequences.length === 0 && !destinationId)
        throw usageError("replay: which dead letters? Pass --sequence <n> (repeatable) or --destination <id>", "deliveries");
      printJsonLine(await callUnary("switchyard.v1.DeliveryService/ReplayDeadLetters", { sequences, destinationId }, connection));
      return;
    }
    case "stats": {
      const stats = await callUnary("switchyard.v1.DeliveryService/GetDeliveryStats", { destinationId }, connection);
      for (const entry of stats.destinations ?? []) printJsonLine(entry);
      return;
    }
    default:
      throw usageError(action ? `unknown deliveries action "${action}"` : "deliveries: list, replay or stats?", "deliveries");
  }
}

const OUTCOMES = ["delivered", "retryable", "permanent", "dead_lettered"];

function outcomesOption(values: Parameters<typeof stringsOption>[0]): string[] {
  const outcomes = stringsOption(values, "outcome");
  for (const outcome of outcomes) {
    if (!OUTCOMES.includes(outcome)) throw usageError(`--outcome: must be one of ${OUTCOMES.join(", ")}, got "${outcome}"`, "deliveries");
  }
  return outcomes;
}

/** A time flag as the request's proto3 JSON timestamp, or a usage error naming the flag. */
function timeOption(values: Parameters<typeof stringOption>[0], name: "since" | "before"): Record<string, string> {
  const text = stringOption(values, name);
  if (text === undefined) return {};
  const time = new Date(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(time.getTime())) {
    throw usageError(`--${name}: must be an ISO 8601 time such as 2026-11-25T10:00:00Z, got "${text}"`, "deliveries");
  }
  return { [name]: time.toISOString() };
}
