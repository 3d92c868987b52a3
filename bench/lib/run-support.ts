import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { busNames, type BusNames } from "@switchyard/bus";
import { NatsServer, uniqueNamespace } from "@switchyard/testkit";

const run = promisify(execFile);

/** Undo steps, run last-registered first, once, even after a failure or Ctrl-C. */
export class Cleanup {
  private readonly steps: { what: string; undo: () => Promise<unknown> }[] = [];
  private done: Promise<void> | undefined;

  add(what: string, undo: () => Promise<unknown>): void {
    this.steps.push({ what, undo });
  }

  run(): Promise<void> {
    this.done ??= (async () => {
      for (const step of this.steps.reverse()) {
        await step.undo().catch((error: unknown) => console.error(`cleanup: ${step.what} failed:`, error));
      }
    })();
    return this.done;
  }
}

/** NATS_URL when set (the run then uses a unique namespace there), else an own nats-server on a free port. */
export async function startNats(cleanup: Cleanup): Promise<{ url: string; external: boolean; pid: number | undefined }> {
  const external = process.env.NATS_URL;
  if (external) return { url: external, external: true, pid: undefined };
  const server = await NatsServer.start();
  cleanup.add("stop nats-server", () => server.dispose());
  return { url: server.url, external: false, pid: server.pid };
}

/**
 * Runs a benchmark's main: it gets a Cleanup whose steps run once it ends,
 * fails or is interrupted (Ctrl-C, SIGTERM). Exits 0, or 1 after printing the
 * error; a missed target is not an error.
 */
export function runBenchmark(main: (cleanup: Cleanup) => Promise<void>): void {
  const cleanup = new Cleanup();
  const onSignal = () => void cleanup.run().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  main(cleanup)
    .finally(() => cleanup.run())
    .then(
      () => process.exit(0),
      (error: unknown) => {
        console.error("benchmark failed:", error);
        process.exit(1);
      },
    );
}

/** The run's NATS (see startNats), a fresh namespace on it, and a connection closed at clean-up. */
export async function openBenchBus(cleanup: Cleanup): Promise<{
  nats: { url: string; external: boolean; pid: number | undefined };
  namespace: string;
  names: BusNames;
  nc: NatsConnection;
  jsm: JetStreamManager;
}> {
  const nats = await startNats(cleanup);
  const namespace = uniqueNamespace();
  const nc = await connect({ servers: nats.url });
  cleanup.add("close the NATS connection", () => nc.close());
  const jsm = await jetstreamManager(nc);
  if (nats.external) cleanup.add(`delete the ${namespace} streams`, () => deleteNamespaceStreams(jsm, namespace));
  return { nats, namespace, names: busNames(namespace), nc, jsm };
}

/**
 * On a shared server, removes every stream the run created under its (unique) namespace: the
 * services' streams (`<NS>_…`), key-value buckets (`KV_<ns>_…`), object stores (`OBJ_<ns>_…`) and
 * a benchmark's own reference streams, which follow the `<NS>_` form too.
 */
async function deleteNamespaceStreams(jsm: JetStreamManager, namespace: string): Promise<void> {
  const prefixes = [`${namespace.toUpperCase()}_`, `KV_${namespace}_`, `OBJ_${namespace}_`];
  const names: string[] = [];
  for await (const name of jsm.streams.names()) if (prefixes.some((prefix) => name.startsWith(prefix))) names.push(name);
  for (const name of names) await jsm.streams.delete(name).catch(() => false);
}

/** Writes the run's workspace file into a temp folder removed at clean-up; returns its path. */
export async function writeWorkspaceFile(cleanup: Cleanup, workspace: object): Promise<string> {
  const dir = await mkdtemp(join(os.tmpdir(), "switchyard-bench-"));
  cleanup.add("remove the workspace dir", () => rm(dir, { recursive: true, force: true }));
  const file = join(dir, "workspace.json");
  await writeFile(file, JSON.stringify(workspace));
  return file;
}

async function commandOutput(cwd: string, command: string, args: string[]): Promise<string | undefined> {
  try {
    const { stdout } = await run(command, args, { cwd });
    return stdout.trim();
  } catch {
    return undefined;
  }
}

/**
 * The facts a result needs to be compared with another: machine, versions,
 * commit, and the 1/5/15-minute load average when the run started and ended
 * (the machine may be shared, and a busy one skews every rate).
 */
/** `nc`: the benchmark's NATS connection, whose server version is recorded; undefined for a benchmark without NATS. */
export async function machineFacts(repoRoot: string, nc: NatsConnection | undefined, loadAverageAtStart: number[]) {
  const cpus = os.cpus();
  const commit = await commandOutput(repoRoot, "git", ["rev-parse", "--short", "HEAD"]);
  const status = commit === undefined ? undefined : await commandOutput(repoRoot, "git", ["status", "--porcelain"]);
  return {
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpuModel: cpus[0]?.model ?? "unknown",
    cpuCount: cpus.length,
    totalMemoryBytes: os.totalmem(),
    loadAverageAtStart: loadAverageAtStart.map(twoDecimals),
    loadAverageAtEnd: os.loadavg().map(twoDecimals),
    nodeVersion: process.version,
    natsServerVersion: (await commandOutput(repoRoot, "nats-server", ["--version"])) ?? null,
    natsServerVersionConnected: nc?.info?.version ?? null,
    gitCommit: commit ?? null,
    gitDirty: status === undefined ? null : status.length > 0,
  };
}

const twoDecimals = (n: number) => Number(n.toFixed(2));

/**
 * Replaces `<name>-latest.json` atomically and returns its path. Only the latest
 * result of each benchmark is kept in the folder; earlier ones are in git history.
 */
export async function writeResults(resultsDir: string, name: string, results: object): Promise<string> {
  await mkdir(resultsDir, { recursive: true });
  const text = `${JSON.stringify(results, null, 2)}\n`;
  const latest = join(resultsDir, `${name}-latest.json`);
  await writeFile(`${latest}.tmp`, text);
  await rename(`${latest}.tmp`, latest);
  return latest;
}

/**
 * Runs task(0 … total-1) on `lanes` concurrent lanes: each lane starts its next
 * task as soon as its last one finished, so at most `lanes` are in flight.
 */
export async function runLanes(lanes: number, total: number, task: (index: number, lane: number) => Promise<void>): Promise<void> {
  let next = 0;
  const runLane = async (lane: number) => {
    while (next < total) await task(next++, lane);
  };
  await Promise.all(Array.from({ length: Math.min(lanes, total) }, (_, lane) => runLane(lane)));
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc (Linux);
 * undefined elsewhere or when it is gone. Resolution: one clock tick (10 ms).
 */
export async function processCpuMs(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** CPU time (ms) of a process and its live children, such as a service's worker processes. */
export async function processTreeCpuMs(pid: number | undefined): Promise<number | undefined> {
  const own = await processCpuMs(pid);
  if (own === undefined) return undefined;
  let children: number[] = [];
  try {
    const list = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8");
    children = list.split(" ").filter(Boolean).map(Number);
  } catch {
    // No children file (or the process is gone): its own time is all there is.
  }
  let total = own;
  for (const child of children) total += (await processCpuMs(child)) ?? 0;
  return total;
}

/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** This process's CPU time so far (user + system), in ms. */
export function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** CPU ms spent over `count` items, in µs each; undefined when the CPU time could not be read. */
export function microsPer(cpuMs: number | undefined, count: number): number | undefined {
  return cpuMs === undefined || count === 0 ? undefined : (cpuMs * 1000) / count;
}

/** A command-line option that must be a positive integer, with an error naming it. */
export function positiveInt(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name}: must be a positive integer, got ${text}`);
  return value;
}

/** Rounded to two decimals, or null when unknown (for results files). */
export function roundedOrNull(value: number | undefined): number | null {
  return value === undefined || Number.isNaN(value) ? null : Number(value.toFixed(2));
}

/**
 * Runs task(lane) on `lanes` concurrent lanes until `ms` have passed: each
 * lane starts its next task as soon as its last one finished, and none starts
 * after the deadline. Resolves with the tasks completed.
 */
export async function runLanesFor(lanes: number, ms: number, task: (lane: number) => Promise<void>): Promise<number> {
  const end = performance.now() + ms;
  let completed = 0;
  const runLane = async (lane: number) => {
    while (performance.now() < end) {
      await task(lane);
      completed++;
    }
  };
  await Promise.all(Array.from({ length: lanes }, (_, lane) => runLane(lane)));
  return completed;
}
