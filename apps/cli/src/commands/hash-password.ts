import { hashPassword } from "@switchyard/platform";
import { parseCommandArgs } from "../args.js";
import { CliError } from "../cli-error.js";

export const HASH_PASSWORD_HELP = `Usage: switchyard hash-password [< password]

Prints the scrypt hash of a console password, for SWITCHYARD_CONSOLE_PASSWORD_HASH. The password
is read from stdin (its first line); on a terminal it is asked for without being shown. It never
appears in the command line, so it stays out of the shell history and the process list.

Examples:
  npx switchyard hash-password
  printf '%s' "$CONSOLE_PASSWORD" | npx switchyard hash-password`;

/** Passwords shorter than this are refused: the hash is only as strong as what it hides. */
const MIN_PASSWORD_LENGTH = 12;

export async function hashPasswordCommand(argv: string[]): Promise<void> {
  const args = parseCommandArgs("hash-password", argv, {});
  if (!args) return void process.stdout.write(`${HASH_PASSWORD_HELP}\n`);
  const password = process.stdin.isTTY ? await askHidden("Password: ") : firstLine(await readAll());
  if (password.length < MIN_PASSWORD_LENGTH) throw new CliError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`, 2);
  process.stdout.write(`${await hashPassword(password)}\n`);
}

async function readAll(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function firstLine(text: string): string {
  return text.split(/\r?\n/, 1)[0] ?? "";
}

/** Reads a line from the terminal in raw mode, echoing nothing. */
function askHidden(prompt: string): Promise<string> {
  process.stderr.write(prompt);
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = "";
    const done = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n") return done();
        if (char === "\u0003") return done(new CliError("cancelled", 130));
        if (char === "\u007f" || char === "\b") typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    stdin.on("data", onData);
  });
}
