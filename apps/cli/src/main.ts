import { CliError } from "./cli-error.js";

const HELP = `Usage: switchyard <command> [options]

Commands:
  tail [subject...]     Follow the NATS bus; every message decoded from protobuf to a JSON line
  send                  Send a test call (gRPC ingest, or the Segment HTTP API with --http)
  config                Workspace: get, apply <file>, rotate-signing-secret <destination>
  block <source>        Block call types or track events at a source (accepted, forwarded nowhere)
  unblock <source>      Lift blocks set by block
  connect <src> <dest>  Connect a source to a destination, optionally with --filter '<json>'
  deliveries            The attempt log and dead letters: list, show, replay, stats
  schema <source>       What a source sends: calls by type and name, with counts and keys
  usage                 Calls accepted, filtered and rejected per source and day, and per destination
  verify                Check an X-Signature or Standard Webhooks signature (exit code 0 or 1)
  call <Service/Method> Call any Switchyard gRPC method with JSON
  hash-password         Hash a console password (SWITCHYARD_CONSOLE_PASSWORD_HASH)

Run \`switchyard <command> --help\` for a command's options and examples.
Docs: docs/api.md (every API), docs/subjects.md (the bus), docs/signatures.md (signatures).

Examples:
  npx switchyard tail calls --calls
  npx switchyard send --write-key wk_example_web_0123456789 --event "Signed Up"
  SWITCHYARD_ADMIN_TOKEN=<token> npx switchyard deliveries list`;

type Command = (argv: string[]) => Promise<number | void>;

/** Loaded on use: `verify` should not pay for loading the NATS and gRPC clients. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  tail: async () => (await import("./commands/tail.js")).tail,
  send: async () => (await import("./commands/send.js")).send,
  config: async () => (await import("./commands/config.js")).config,
  block: async () => (await import("./commands/block.js")).block,
  unblock: async () => (await import("./commands/block.js")).unblock,
  connect: async () => (await import("./commands/connect.js")).connect,
  deliveries: async () => (await import("./commands/deliveries.js")).deliveries,
  schema: async () => (await import("./commands/insights.js")).schema,
  usage: async () => (await import("./commands/insights.js")).usage,
  verify: async () => (await import("./commands/verify.js")).verify,
  call: async () => (await import("./commands/call.js")).call,
  "hash-password": async () => (await import("./commands/hash-password.js")).hashPasswordCommand,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(`${HELP}\n`);
    return command === undefined ? 2 : 0;
  }
  const load = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!load) throw new CliError(`unknown command "${command}"\n\n${HELP}`, 2);
  return (await (await load())(rest)) ?? 0;
}

// process.exit: a client still reconnecting (NATS, gRPC) must not keep a finished command alive.
// Writes to stdout/stderr are synchronous for files and pipes on Linux, so nothing printed is lost.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof CliError) {
      console.error(`switchyard: ${error.message}`);
      process.exit(error.exitCode);
    }
    console.error("switchyard: unexpected error:", error);
    process.exit(1);
  },
);
