#!/usr/bin/env node
// The `switchyard` command. It runs the TypeScript source through tsx, so it works right after
// `npm ci` without a build step: `npx switchyard --help` from the repository.
//
// A child Node process is used because the workspace packages are read from source through the
// `switchyard-source` export condition, which only a command-line flag can turn on.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const tsx = import.meta.resolve("tsx");
// --no-deprecation: Node's notices (e.g. about TLS to an IP address) are not the command's output.
const child = spawn(
  process.execPath,
  ["--no-deprecation", "--conditions=switchyard-source", "--import", tsx, main, ...process.argv.slice(2)],
  {
    stdio: "inherit",
  },
);

// Signals are passed on (a Ctrl-C in a terminal reaches both; the command copes with twice), and
// this process waits for the command's exit code. A process that kills only this one must not
// leave the command running.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
  process.exitCode = code ?? (signal === "SIGINT" ? 130 : 1);
});
