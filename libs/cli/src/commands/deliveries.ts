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
import { invoke, requireMethod } from "../rpc.js";

export const DELIVERIES_HELP = `Usage: switchyard deliveries <list | replay | stats> [options]

Failed deliveries and dead letters, through switchyard.v1.DeliveryService (needs the admin token).
Prints JSON lines.

  list                  Failed attempts from the delivery log, newest last (outcome "retryable",
                        "permanent" or "dead_lettered")
      --dead            List dead letters instead (each with the "sequence" replay takes)
      --destination <id>  --message-id <id> (attempts only)  --limit <n> (default 100)
      --after <sequence>  (dead letters: continue after this sequence)
  replay                Puts dead letters back on the retry path with a fresh window
      --sequence <n>    A dead letter's sequence (repeatable), or
      --destination <id>  every dead letter of that destination
  stats                 Delivered, failed attempts and dead-lettered per destination
      --destination <id>

${CONNECTION_HELP}

Examples:
  export SWITCHYARD_ADMIN_TOKEN=<the token npm start printed>
  npx switchyard deliveries list --destination example-receiver --limit 10
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
  });
  if (!args) return void process.stdout.write(`${DELIVERIES_HELP}\n`);
  const connection = connectionFrom(args.values, process.env, "deliveries");
  const { values } = args;
  const [action, ...rest] = args.positionals;
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}"`, "deliveries");
  const destinationId = stringOption(values, "destination") ?? "";
  const limit = integerOption(values, "limit", "deliveries") ?? 0;

  switch (action) {
    case "list": {
      if (values.dead === true) {
        const afterSequence = integerOption(values, "after", "deliveries") ?? 0;
        const page = (await invoke(
          requireMethod("DeliveryService/ListDeadLetters"),
          [{ destinationId, afterSequence, limit }],
          connection,
        )) as {
          entries?: unknown[];
          nextAfterSequence?: number;
        };
        for (const entry of page.entries ?? []) printJsonLine(entry);
        if (page.nextAfterSequence) process.stderr.write(`deliveries: more after --after ${page.nextAfterSequence}\n`);
        return;
      }
      const messageId = stringOption(values, "message-id") ?? "";
      const log = (await invoke(
        requireMethod("DeliveryService/ListDeliveryAttempts"),
        [{ destinationId, messageId, limit }],
        connection,
      )) as {
        attempts?: unknown[];
      };
      for (const attempt of log.attempts ?? []) printJsonLine(attempt);
      return;
    }
    case "replay": {
      const sequences = stringsOption(values, "sequence").map((text) => {
        if (!/^\d+$/.test(text)) throw usageError(`--sequence: must be a whole number, got "${text}"`, "deliveries");
        return Number(text);
      });
      if (sequences.length === 0 && !destinationId)
        throw usageError("replay: which dead letters? Pass --sequence <n> (repeatable) or --destination <id>", "deliveries");
      printJsonLine(await invoke(requireMethod("DeliveryService/ReplayDeadLetters"), [{ sequences, destinationId }], connection));
      return;
    }
    case "stats": {
      const stats = (await invoke(requireMethod("DeliveryService/GetDeliveryStats"), [{ destinationId }], connection)) as {
        destinations?: unknown[];
      };
      for (const entry of stats.destinations ?? []) printJsonLine(entry);
      return;
    }
    default:
      throw usageError(action ? `unknown deliveries action "${action}"` : "deliveries: list, replay or stats?", "deliveries");
  }
}
