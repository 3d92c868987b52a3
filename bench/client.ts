/**
 * Client library benchmark: `npm run bench:client [-- --enqueue-calls N --deliver-calls N --runs R]`.
 *
 * Switchyard's client (@switchyard/analytics) against @segment/analytics-node as the peer:
 *  1. enqueue: calls per second into the queue, and heap retained per queued call. Each library
 *     runs in a child process of its own with --expose-gc (bench/lib/client-enqueue-child.ts),
 *     `runs` times (default 5), alternating; the median is reported. The rate is measured per
 *     second of CPU time the process used (the target's ratio) and per wall-clock second (also
 *     reported): on a shared machine the wall clock mostly measures when the process got a core.
 *     A run is 20,000 calls after 20,000 warm-up calls, for both. A Switchyard run is then short
 *     enough for one scheduling hiccup to show, hence five runs rather than three. Longer runs
 *     would not be like for like: the peer keeps far more heap per queued call, so its GC cost
 *     per call grows with the run, which would flatter us.
 *  2. delivered: calls per second from the first call until the library reports everything sent
 *     (our flush(), the peer's closeAndFlush()), into the same ingest service (its own process)
 *     and nats-server: ours over gRPC, the peer over ingest's Segment HTTP API (/v1/batch). Both use
 *     the same batch size (--flush-at, default 100). The peer sends every full batch at once; ours
 *     keeps at most --max-in-flight (default 16) batches out. Every call is then counted in JetStream.
 *
 * Calls are the ingest benchmark's realistic ~600-byte mix. Targets: enqueue ≥ 10× the peer,
 * heap per queued call ≤ 1/10 of the peer's, delivered ≥ 3× the peer. The machine's load average
 * is recorded with the results (bench/results/client-latest.json): on a
 * shared machine, compare ratios rather than absolute rates. Exits non-zero only on errors.
 */
import { execFile } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Analytics as SegmentAnalytics } from "@segment/analytics-node";
import { busNames } from "@switchyard/bus";
import { readCallBatches, uniqueNamespace } from "@switchyard/testkit";
import { Analytics } from "@switchyard/analytics";
import { clientMessages, type ClientMessage } from "./lib/client-messages.js";
import { machineFacts, runBenchmark, startNats, writeResults, writeWorkspaceFile, type Cleanup } from "./lib/run-support.js";
import { startIngestChild } from "./lib/service-child.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const TARGETS = { enqueueRatio: 10, heapRatio: 10, deliveredRatio: 3 };
const SOURCES = {
  switchyard: { id: "bench-switchyard", writeKey: "wk_bench_switchyard_0123456789" },
  segment: { id: "bench-segment", writeKey: "wk_bench_segment_0123456789" },
};
const run = promisify(execFile);

interface EnqueueResult {
  library: string;
  calls: number;
  seconds: number;
  callsPerSecond: number;
  cpuSeconds: number;
  callsPerCpuSecond: number;
  heapBytesPerCall: number;
}

function parameters() {
  const { values } = parseArgs({
    options: {
      "enqueue-calls": { type: "string", default: "20000" },
      "deliver-calls": { type: "string", default: "20000" },
      "warmup-calls": { type: "string", default: "5000" },
      "flush-at": { type: "string", default: "100" },
      "max-in-flight": { type: "string", default: "16" },
      runs: { type: "string", default: "5" },
    },
  });
  const int = (name: string, text: string) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name}: must be a positive integer, got ${text}`);
    return value;
  };
  return {
    enqueueCalls: int("enqueue-calls", values["enqueue-calls"]),
    deliverCalls: int("deliver-calls", values["deliver-calls"]),
    warmupCalls: int("warmup-calls", values["warmup-calls"]),
    flushAt: int("flush-at", values["flush-at"]),
    maxInFlight: int("max-in-flight", values["max-in-flight"]),
    runs: int("runs", values.runs),
  };
}

async function enqueueRun(library: "switchyard" | "segment", calls: number): Promise<EnqueueResult> {
  const { stdout } = await run(
    process.execPath,
    [
      "--expose-gc",
      "--conditions=switchyard-source",
      "--import",
      "tsx",
      "bench/lib/client-enqueue-child.ts",
      "--library",
      library,
      "--calls",
      String(calls),
    ],
    { cwd: REPO_ROOT, maxBuffer: 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split("\n").pop()!) as EnqueueResult;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function meanJsonBytes(messages: ClientMessage[]): number {
  const total = messages.reduce((sum, { type, message }) => sum + Buffer.byteLength(JSON.stringify({ type, ...message })), 0);
  return Math.round(total / messages.length);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function send(client: { [K in ClientMessage["type"]]: (message: never) => unknown }, { type, message }: ClientMessage): void {
  client[type](message as never);
}

/** Our client: all calls, then flush(); resolves with the seconds taken. */
async function deliverSwitchyard(endpoint: string, messages: ClientMessage[], flushAt: number, maxInFlight: number): Promise<number> {
  // A queue that holds the whole run: the peer's has no limit.
  const client = new Analytics(SOURCES.switchyard.writeKey, {
    endpoint,
    flushAt,
    maxInFlight,
    maxQueueSize: messages.length + 1,
    maxQueueBytes: 1 << 30,
  });
  let failed = 0;
  client.on("failed", (event) => (failed += event.messageIds.length));
  const start = performance.now();
  for (const message of messages) send(client, message);
  await client.flush();
  const seconds = (performance.now() - start) / 1000;
  await client.close();
  if (failed > 0) throw new Error(`switchyard: ${failed} calls failed`);
  return seconds;
}

let segmentHttpRequests = 0;

/** The peer: all calls, then closeAndFlush(); resolves with the seconds taken. */
async function deliverSegment(host: string, messages: ClientMessage[], flushAt: number): Promise<number> {
  const client = new SegmentAnalytics({ writeKey: SOURCES.segment.writeKey, host, flushAt, flushInterval: 10_000 });
  let errors = 0;
  client.on("error", () => errors++);
  // Every HTTP request it makes, retries included (it sends each full batch at once, with no limit).
  client.on("http_request", () => segmentHttpRequests++);
  const start = performance.now();
  for (const message of messages) send(client, message);
  await client.closeAndFlush({ timeout: 600_000 });
  const seconds = (performance.now() - start) / 1000;
  if (errors > 0) throw new Error(`segment: ${errors} errors`);
  return seconds;
}

async function main(cleanup: Cleanup): Promise<void> {
  const params = parameters();
  const loadBefore = os.loadavg();
  // ---- enqueue rate and heap per queued call
  const enqueue: Record<"switchyard" | "segment", EnqueueResult[]> = { switchyard: [], segment: [] };
  for (let runIndex = 0; runIndex < params.runs; runIndex++) {
    for (const library of ["switchyard", "segment"] as const) {
      const result = await enqueueRun(library, params.enqueueCalls);
      enqueue[library].push(result);
      console.log(
        `enqueue ${library}: ${result.callsPerSecond} calls/s, ${result.callsPerCpuSecond} calls/CPU-s, ${result.heapBytesPerCall} bytes/call`,
      );
    }
  }
  const enqueueRate = (library: "switchyard" | "segment") => median(enqueue[library].map((result) => result.callsPerSecond));
  const enqueueCpuRate = (library: "switchyard" | "segment") => median(enqueue[library].map((result) => result.callsPerCpuSecond));
  const heapPerCall = (library: "switchyard" | "segment") => median(enqueue[library].map((result) => result.heapBytesPerCall));

  // ---- delivered into one ingest
  const nats = await startNats(cleanup);
  const workspaceFile = await writeWorkspaceFile(cleanup, {
    sources: Object.values(SOURCES).map(({ id, writeKey }) => ({ id, writeKeys: [writeKey] })),
  });
  const namespace = uniqueNamespace();
  const names = busNames(namespace);
  const { grpcPort, httpPort } = await startIngestChild(cleanup, {
    cwd: REPO_ROOT,
    natsUrl: nats.url,
    namespace,
    workspaceFile: workspaceFile,
  });
  const nc = await connect({ servers: nats.url });
  cleanup.add("close the NATS connection", () => nc.close());
  if (nats.external) {
    const jsm = await jetstreamManager(nc);
    cleanup.add("delete the run's streams", async () => {
      for (const stream of [names.callsStream, `KV_${names.configBucket}`]) await jsm.streams.delete(stream).catch(() => false);
    });
  }

  const endpoint = `127.0.0.1:${grpcPort}`;
  const host = `http://127.0.0.1:${httpPort}`;
  const warmup = clientMessages(params.warmupCalls, 7);
  const messages = clientMessages(params.deliverCalls);
  // Warm up both paths through ingest (and ingest's JIT) before timing either.
  await deliverSwitchyard(endpoint, warmup, params.flushAt, params.maxInFlight);
  await deliverSegment(host, warmup, params.flushAt);
  const switchyardSeconds = await deliverSwitchyard(endpoint, messages, params.flushAt, params.maxInFlight);
  console.log(`delivered switchyard: ${Math.round(params.deliverCalls / switchyardSeconds)} calls/s`);
  segmentHttpRequests = 0;
  const segmentSeconds = await deliverSegment(host, messages, params.flushAt);
  console.log(`delivered segment: ${Math.round(params.deliverCalls / segmentSeconds)} calls/s`);

  // Every call must be in JetStream, once per run: warm-up plus measured, per source.
  const stored = { switchyard: 0, segment: 0 };
  for (const { batch } of await readCallBatches(nc, names)) {
    if (batch.sourceId === SOURCES.switchyard.id) stored.switchyard += batch.calls.length;
    if (batch.sourceId === SOURCES.segment.id) stored.segment += batch.calls.length;
  }
  const expected = params.warmupCalls + params.deliverCalls;
  if (stored.switchyard !== expected || stored.segment !== expected) {
    throw new Error(`JetStream holds ${stored.switchyard} (switchyard) and ${stored.segment} (segment) calls, expected ${expected} each`);
  }

  const ratios = {
    enqueue: round(enqueueCpuRate("switchyard") / enqueueCpuRate("segment")),
    enqueueWallClock: round(enqueueRate("switchyard") / enqueueRate("segment")),
    heapPerCall: round(heapPerCall("segment") / heapPerCall("switchyard")),
    delivered: round(segmentSeconds / switchyardSeconds),
  };
  const date = new Date();
  const results = {
    benchmark: "client",
    date: date.toISOString(),
    parameters: { ...params, meanCallJsonBytes: meanJsonBytes(messages), peer: "@segment/analytics-node 3.1.0 (HTTP /v1/batch)" },
    enqueue: {
      switchyardCallsPerCpuSecond: enqueueCpuRate("switchyard"),
      segmentCallsPerCpuSecond: enqueueCpuRate("segment"),
      switchyardCallsPerSecond: enqueueRate("switchyard"),
      segmentCallsPerSecond: enqueueRate("segment"),
      switchyardHeapBytesPerCall: heapPerCall("switchyard"),
      segmentHeapBytesPerCall: heapPerCall("segment"),
      runs: enqueue,
    },
    delivered: {
      switchyardCallsPerSecond: Math.round(params.deliverCalls / switchyardSeconds),
      segmentCallsPerSecond: Math.round(params.deliverCalls / segmentSeconds),
      switchyardSeconds: round(switchyardSeconds),
      segmentSeconds: round(segmentSeconds),
      storedInJetStream: stored,
      // Batches the peer needed, and the HTTP requests it made for them (more: retries after timeouts).
      segmentBatches: Math.ceil(params.deliverCalls / params.flushAt),
      segmentHttpRequests,
    },
    ratios,
    targets: {
      enqueue: { ratio: TARGETS.enqueueRatio, pass: ratios.enqueue >= TARGETS.enqueueRatio },
      heapPerCall: { ratio: TARGETS.heapRatio, pass: ratios.heapPerCall >= TARGETS.heapRatio },
      delivered: { ratio: TARGETS.deliveredRatio, pass: ratios.delivered >= TARGETS.deliveredRatio },
    },
    machine: await machineFacts(REPO_ROOT, nc, loadBefore),
  };
  const file = await writeResults(RESULTS_DIR, "client", results);
  console.log(
    JSON.stringify(
      {
        ratios,
        targets: results.targets,
        loadAverage: { start: results.machine.loadAverageAtStart, end: results.machine.loadAverageAtEnd },
      },
      null,
      2,
    ),
  );
  console.log(`results: ${file}`);
}

runBenchmark(main);
