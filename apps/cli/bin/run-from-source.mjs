// Runs the CLI's TypeScript source through tsx in a child Node process (see switchyard.mjs).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Runs src/main.ts with `args`; this process exits with the command's exit code.
 * @param {string[]} args
 */
export function runFromSource(args) {
  const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
  const tsx = import.meta.resolve("tsx");
  const child = spawn(process.execPath, ["--no-deprecation", "--conditions=switchyard-source", "--import", tsx, main, ...args], {
    stdio: "inherit",
  });
  // Signals are passed on (a Ctrl-C in a terminal reaches both; the command copes with twice), and
  // this process waits for the command's exit code. A process that kills only this one must not
  // leave the command running.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => {
    process.exitCode = code ?? (signal === "SIGINT" ? 130 : 1);
  });
}
