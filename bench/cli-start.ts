/**
 * CLI start-up benchmark: `npm run bench:cli [-- --runs N]`.
 *
 * How long the `switchyard` command takes from process start to exit, as users run it
 * (`node apps/cli/bin/switchyard.mjs ...`, which runs the esbuild bundle in apps/cli/dist), against
 * the reference measured in the same run: the same source run through tsx, as the bin would run
 * without its bundle (`node --conditions=switchyard-source --import tsx apps/cli/src/main.ts ...`).
 * Commands: `--help`, and `send` to a port where nothing listens (loads the gRPC client, makes
 * one call, fails at once). Runs alternate bundle/source, `runs` times each (default 10), and the
 * median wall time is reported with the ratio source/bundle. Target: the bundle starts in under
 * 0.5 s. Results: bench/results/cli-start-latest.json. Builds the bundle
 * first (apps/cli/scripts/build.mjs).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { writeResults } from "./lib/run-support.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const TARGET_SECONDS = 0.5;
const run = promisify(execFile);

const COMMANDS: Record<string, string[]> = {
  help: ["--help"],
  send: ["send", "--write-key", "wk_bench_cli_0123456789", "--ingest", "127.0.0.1:1"],
};

/** Wall seconds of one process run (its exit code is not the point: `send` fails on purpose). */
async function timed(args: string[]): Promise<number> {
  const started = performance.now();
  await run(process.execPath, args, { cwd: REPO_ROOT, timeout: 60_000 }).catch((error: { code?: unknown }) => {
    if (typeof error.code !== "number") throw error;
  });
  return (performance.now() - started) / 1000;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const ms = (seconds: number) => Math.round(seconds * 1000);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "10" } } });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs: must be a positive integer");
  const loadAverageAtStart = os.loadavg();
  await run(process.execPath, ["apps/cli/scripts/build.mjs"], { cwd: REPO_ROOT });
  if (!existsSync(`${REPO_ROOT}apps/cli/dist/main.js`)) throw new Error("apps/cli/dist/main.js was not built");

  const results: Record<
    string,
    { bundleMedianSeconds: number; sourceMedianSeconds: number; ratio: number; bundle: number[]; source: number[] }
  > = {};
  for (const [name, args] of Object.entries(COMMANDS)) {
    const bundle: number[] = [];
    const source: number[] = [];
    // One untimed run of each warms the file cache (and tsx's transpile cache, as a user's second run would).
    await timed(["apps/cli/bin/switchyard.mjs", ...args]);
    await timed(["--conditions=switchyard-source", "--import", "tsx", "apps/cli/src/main.ts", ...args]);
    for (let i = 0; i < runs; i++) {
      bundle.push(await timed(["apps/cli/bin/switchyard.mjs", ...args]));
      source.push(await timed(["--conditions=switchyard-source", "--import", "tsx", "apps/cli/src/main.ts", ...args]));
    }
    const bundleMedianSeconds = median(bundle);
    const sourceMedianSeconds = median(source);
    results[name] = { bundleMedianSeconds, sourceMedianSeconds, ratio: sourceMedianSeconds / bundleMedianSeconds, bundle, source };
    console.log(
      `switchyard ${args.join(" ")}: bundle ${ms(bundleMedianSeconds)} ms, tsx source ${ms(sourceMedianSeconds)} ms ` +
        `(median of ${runs}; ${(sourceMedianSeconds / bundleMedianSeconds).toFixed(1)}x faster; target < ${TARGET_SECONDS * 1000} ms: ` +
        `${bundleMedianSeconds < TARGET_SECONDS ? "met" : "NOT met"})`,
    );
  }

  const cpus = os.cpus();
  const file = await writeResults(RESULTS_DIR, "cli-start", {
    benchmark: "cli-start",
    runs,
    targetSeconds: TARGET_SECONDS,
    results,
    machine: {
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      cpuModel: cpus[0]?.model ?? "unknown",
      cpuCount: cpus.length,
      totalMemoryBytes: os.totalmem(),
      loadAverageAtStart: loadAverageAtStart.map((n) => Number(n.toFixed(2))),
      loadAverageAtEnd: os.loadavg().map((n) => Number(n.toFixed(2))),
      nodeVersion: process.version,
    },
  });
  console.log(`results: ${file}`);
}

main().catch((error: unknown) => {
  console.error("benchmark failed:", error);
  process.exit(1);
});
