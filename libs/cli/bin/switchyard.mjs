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
const child = spawn(process.execPath, ["--conditions=switchyard-source", "--import", tsx, main, ...process.argv.slice(2)], {
  stdio: "inherit",
});

// Ctrl-C reaches the child too (same process group); this process just waits for its exit code.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (signal !== "SIGINT") child.kill(signal);
  });
}
child.on("exit", (code, signal) => {
  process.exitCode = code ?? (signal === "SIGINT" ? 130 : 1);
});
