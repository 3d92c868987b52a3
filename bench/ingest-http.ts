/**
 * Segment HTTP ingest benchmark: `npm run bench:ingest-http [-- --seconds S --rounds N]`.
 *
 * Measures the Segment-compatible HTTP path (POST /v1/batch) of the ingest
 * service, in its own process, against one nats-server with JetStream (file
 * storage), beside two other sides in the same run:
 *  - reference: the least an HTTP ingest must do (bench/lib/http-reference.ts,
 *    its own process like ingest): node:http, JSON.parse of the body, one
 *    JetStream publish of the raw body per request, awaited before the 200
 *    (run through tsx: its few lines cost the same once loaded as bundled).
 *  - gRPC: ingest's IngestBatch with the same calls, so the HTTP path's CPU
 *    per call can be compared with the binary path's on the same machine
 *    at the same moment.
 * Load: batches of 100 realistic calls (~617 bytes of JSON each), 16 requests
 * in flight (HTTP: an undici Pool of 16 keep-alive connections, no
 * pipelining, the write key as Basic auth user like the Segment SDKs; gRPC:
 * 16 calls over 4 HTTP/2 connections, the client of bench/ingest.ts). Each
 * window is 15 s after a 3 s warm-up; the sides take turns (reference, HTTP,
 * gRPC, reference, …; 2 rounds), so a machine whose speed drifts favours none.
 * Bodies are built before the clock starts; before each send only their ids
 * are made new (see StampableBody), since ingest would drop a repeated batch
 * as a duplicate.
 *
 * Per side: calls/s (a call counts once its request was answered 200, i.e.
 * after JetStream's acknowledgement), p50/p99 request latency at that
 * concurrency, and CPU time per call (user + system, from /proc) of the
 * server's process tree, this benchmark's client and nats-server. Goals:
 * HTTP ≥ 0.7 × the reference's calls/s, and ingest CPU per call over HTTP
 * ≤ 1.5 × over gRPC. A missed goal is reported (MISS), not an error exit.
 *
 * Uses its own nats-server on a free port and temp store, or NATS_URL (in a
 * unique namespace, deleted afterwards; nats-server CPU is then unknown).
 * Writes bench/results/ingest-http-latest.json. `--cpu-prof-dir DIR` profiles
 * the ingest process (written when it stops, at the end of the run).
 * `--workers N` runs ingest with N worker processes (SWITCHYARD_WORKERS); the
 * judged figure is one, as the reference has one process.
 */
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { IngestServiceService } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { GrpcHttp2Sender } from "./lib/grpc-http2-sender.js";
import { HttpReferenceChild } from "./lib/http-reference-child.js";
import {
  machineFacts,
  microsPer,
  openBenchBus,
  ownCpuMs,
  percentile,
  positiveInt,
  processCpuMs,
  processTreeCpuMs,
  roundedOrNull,
  runBenchmark,
  runLanesFor,
  writeResults,
  writeWorkspaceFile,
  type Cleanup,
} from "./lib/run-support.js";
import { seededRandom } from "./lib/sample-calls.js";
import { batchForms, type BatchForms, type StampableBody } from "./lib/segment-bodies.js";
import { SegmentHttpSender } from "./lib/segment-http-sender.js";
import { startIngestChild } from "./lib/service-child.js";

const GOALS = { httpOverReference: 0.7, httpCpuOverGrpcCpu: 1.5 };
const WRITE_KEY = "wk_bench_http_0123456789";
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const WORKSPACE = { sources: [{ id: "bench-http", writeKeys: [WRITE_KEY] }] };
const SIDES = ["reference", "http", "grpc"] as const;
type Side = (typeof SIDES)[number];

interface Parameters {
  seconds: number;
  warmupSeconds: number;
  rounds: number;
  batchSize: number;
  concurrency: number;
  grpcChannels: number;
  bodiesPerLane: number;
  cpuProfDir: string | undefined;
  /** Ingest's worker processes (SWITCHYARD_WORKERS): 1, the default and the judged figure, or one per core. */
  workers: number;
}

function parseParameters(argv: string[]): Parameters {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: "string", default: "15" },
      "warmup-seconds": { type: "string", default: "3" },
      rounds: { type: "string", default: "2" },
      "batch-size": { type: "string", default: "100" },
      concurrency: { type: "string", default: "16" },
      "grpc-channels": { type: "string", default: "4" },
      "bodies-per-lane": { type: "string", default: "8" },
      "cpu-prof-dir": { type: "string" },
      workers: { type: "string", default: "1" },
    },
  });
  return {
    seconds: positiveInt("--seconds", values.seconds),
    warmupSeconds: positiveInt("--warmup-seconds", values["warmup-seconds"]),
    rounds: positiveInt("--rounds", values.rounds),
    batchSize: positiveInt("--batch-size", values["batch-size"]),
    concurrency: positiveInt("--concurrency", values.concurrency),
    grpcChannels: positiveInt("--grpc-channels", values["grpc-channels"]),
    bodiesPerLane: positiveInt("--bodies-per-lane", values["bodies-per-lane"]),
    cpuProfDir: values["cpu-prof-dir"],
    workers: positiveInt("--workers", values.workers),
  };
}

/** One side's sender: sends lane `lane`'s next body and fails unless all its calls were accepted. */
type Send = (lane: number) => Promise<void>;

/** Each lane cycles through its own bodies, so none is re-stamped while in flight. */
function laneBodies(forms: BatchForms[], concurrency: number, pick: (form: BatchForms) => StampableBody) {
  const perLane = Math.floor(forms.length / concurrency);
  const next = new Array<number>(concurrency).fill(0);
  return (lane: number): StampableBody => {
    const turn = next[lane]!;
    next[lane] = turn + 1;
    return pick(forms[lane * perLane + (turn % perLane)]!);
  };
}

interface Window {
  calls: number;
  requests: number;
  seconds: number;
  /** CPU ms during the window: the side's server process tree, this client, nats-server. */
  cpuMs: { server: number | undefined; client: number; natsServer: number | undefined };
  latenciesMs: number[];
}

interface Measured {
  side: Side;
  windows: Window[];
}

async function measureWindow(
  params: Parameters,
  send: Send,
  pids: { server: number | undefined; nats: number | undefined },
  counts: { requests: number },
): Promise<Window> {
  // Warm-up: JIT, connection pools, and the server's young generation.
  counts.requests += await runLanesFor(params.concurrency, params.warmupSeconds * 1000, send);
  const latenciesMs: number[] = [];
  const timedSend = async (lane: number) => {
    const start = performance.now();
    await send(lane);
    latenciesMs.push(performance.now() - start);
  };
  const serverBefore = await processTreeCpuMs(pids.server);
  const natsBefore = await processCpuMs(pids.nats);
  const clientBefore = ownCpuMs();
  const start = performance.now();
  const requests = await runLanesFor(params.concurrency, params.seconds * 1000, timedSend);
  const seconds = (performance.now() - start) / 1000;
  const client = ownCpuMs() - clientBefore;
  const natsAfter = await processCpuMs(pids.nats);
  const serverAfter = await processTreeCpuMs(pids.server);
  counts.requests += requests;
  const between = (before: number | undefined, after: number | undefined) =>
    before === undefined || after === undefined ? undefined : after - before;
  return {
    calls: requests * params.batchSize,
    requests,
    seconds,
    cpuMs: { server: between(serverBefore, serverAfter), client, natsServer: between(natsBefore, natsAfter) },
    latenciesMs,
  };
}

interface SideSummary {
  side: Side;
  callsPerSecond: number;
  calls: number;
  seconds: number;
  windows: { callsPerSecond: number; seconds: number }[];
  /** µs per call: the server's process tree (ingest, or the reference), this client, nats-server. */
  cpuMicrosPerCall: { server: number | undefined; client: number | undefined; natsServer: number | undefined };
  latencyMs: { p50: number; p99: number };
}

function summarize({ side, windows }: Measured): SideSummary {
  const calls = windows.reduce((sum, w) => sum + w.calls, 0);
  const seconds = windows.reduce((sum, w) => sum + w.seconds, 0);
  const sum = (pick: (w: Window) => number | undefined) =>
    windows.reduce<number | undefined>((total, w) => (total === undefined || pick(w) === undefined ? undefined : total + pick(w)!), 0);
  const latencies = windows.flatMap((w) => w.latenciesMs).sort((a, b) => a - b);
  return {
    side,
    callsPerSecond: calls / seconds,
    calls,
    seconds,
    windows: windows.map((w) => ({ callsPerSecond: Math.round(w.calls / w.seconds), seconds: Number(w.seconds.toFixed(3)) })),
    cpuMicrosPerCall: {
      server: microsPer(
        sum((w) => w.cpuMs.server),
        calls,
      ),
      client: microsPer(
        sum((w) => w.cpuMs.client),
        calls,
      ),
      natsServer: microsPer(
        sum((w) => w.cpuMs.natsServer),
        calls,
      ),
    },
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
  };
}

/** Every accepted request must be stored: a shortfall would inflate a rate. */
async function checkStored(jsm: JetStreamManager, stream: string, expected: number): Promise<void> {
  const { state } = await jsm.streams.info(stream);
  if (state.messages !== expected) throw new Error(`${stream} holds ${state.messages} messages, expected ${expected}`);
}

const micros = (value: number | undefined) => (value === undefined ? "?" : value.toFixed(2));
const verdict = (pass: boolean) => (pass ? "PASS" : "MISS");

async function main(cleanup: Cleanup): Promise<void> {
  const params = parseParameters(process.argv.slice(2));
  const date = new Date();
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, names, nc, jsm } = await openBenchBus(cleanup);
  const referenceStream = `${namespace.toUpperCase()}_BENCH_HTTP_REFERENCE`;
  const referenceSubject = `${namespace}.bench.http-reference`;
  await jsm.streams.add({ name: referenceStream, subjects: [referenceSubject], storage: StorageType.File });

  const workspaceFile = await writeWorkspaceFile(cleanup, WORKSPACE);
  const { ingest, grpcPort, httpPort } = await startIngestChild(cleanup, {
    cwd: REPO_ROOT,
    natsUrl: nats.url,
    namespace,
    workspaceFile,
    nodeFlags: params.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${params.cpuProfDir}`] : [],
    workers: params.workers,
  });
  const reference = await HttpReferenceChild.start(cleanup, { cwd: REPO_ROOT, natsUrl: nats.url, subject: referenceSubject });

  console.log(`building ${params.concurrency * params.bodiesPerLane} batches of ${params.batchSize} calls …`);
  const forms = batchForms(seededRandom(1), params.concurrency * params.bodiesPerLane, params.batchSize);
  const meanCallJsonBytes = forms.reduce((sum, form) => sum + form.meanCallJsonBytes, 0) / forms.length;
  const counter = { next: 1 };

  const referenceHttp = new SegmentHttpSender(`http://127.0.0.1:${reference.port}`, WRITE_KEY, params.concurrency);
  const ingestHttp = new SegmentHttpSender(`http://127.0.0.1:${httpPort}`, WRITE_KEY, params.concurrency);
  cleanup.add("close the HTTP clients", () => Promise.all([referenceHttp.close(), ingestHttp.close()]));
  const channels = await Promise.all(
    Array.from({ length: params.grpcChannels }, () =>
      GrpcHttp2Sender.connect(`127.0.0.1:${grpcPort}`, IngestServiceService.ingestBatch.path, {
        authorization: basicAuthorization(WRITE_KEY),
      }),
    ),
  );
  cleanup.add("close the gRPC channels", async () => channels.forEach((channel) => channel.close()));

  const jsonBody = laneBodies(forms, params.concurrency, (form) => form.json);
  const grpcBody = laneBodies(forms, params.concurrency, (form) => form.grpc);
  const senders: Record<Side, Send> = {
    reference: (lane) => reference.guard(referenceHttp.post(jsonBody(lane).stamp(counter))),
    http: (lane) => ingest.guard(ingestHttp.post(jsonBody(lane).stamp(counter))),
    grpc: async (lane) => {
      const answer = IngestServiceService.ingestBatch.responseDeserialize(
        await ingest.guard(channels[lane % channels.length]!.call(grpcBody(lane).stamp(counter))),
      );
      if (answer.accepted !== params.batchSize || answer.rejections.length > 0 || answer.duplicate) {
        throw new Error(
          `gRPC batch ${answer.batchId}: accepted ${answer.accepted} of ${params.batchSize} (duplicate: ${answer.duplicate}, first rejection: ${answer.rejections[0]?.message ?? "none"})`,
        );
      }
    },
  };
  const pids: Record<Side, number | undefined> = { reference: reference.pid, http: ingest.pid, grpc: ingest.pid };
  const counts: Record<Side, { requests: number }> = { reference: { requests: 0 }, http: { requests: 0 }, grpc: { requests: 0 } };
  const measured: Record<Side, Measured> = {
    reference: { side: "reference", windows: [] },
    http: { side: "http", windows: [] },
    grpc: { side: "grpc", windows: [] },
  };

  for (let round = 1; round <= params.rounds; round++) {
    for (const side of SIDES) {
      console.log(`round ${round}/${params.rounds}, ${side}: ${params.warmupSeconds} s warm-up, ${params.seconds} s measured …`);
      const window = await measureWindow(params, senders[side], { server: pids[side], nats: nats.pid }, counts[side]);
      measured[side].windows.push(window);
      console.log(`  ${Math.round(window.calls / window.seconds).toLocaleString("en-US")} calls/s`);
    }
  }
  await checkStored(jsm, names.callsStream, counts.http.requests + counts.grpc.requests);
  await checkStored(jsm, referenceStream, counts.reference.requests);

  const sides = Object.fromEntries(SIDES.map((side) => [side, summarize(measured[side])])) as Record<Side, SideSummary>;
  const rateRatio = sides.http.callsPerSecond / sides.reference.callsPerSecond;
  const httpCpu = sides.http.cpuMicrosPerCall.server;
  const grpcCpu = sides.grpc.cpuMicrosPerCall.server;
  const cpuRatio = httpCpu !== undefined && grpcCpu !== undefined ? httpCpu / grpcCpu : Number.NaN;

  console.log("");
  const labels: Record<Side, string> = {
    reference: "reference (node:http + JSON.parse + 1 publish)",
    http: `ingest${params.workers > 1 ? ` (${params.workers} workers)` : ""}, Segment HTTP /v1/batch`,
    grpc: `ingest${params.workers > 1 ? ` (${params.workers} workers)` : ""}, gRPC IngestBatch`,
  };
  for (const side of SIDES) {
    const s = sides[side];
    console.log(
      `${labels[side].padEnd(48)}${Math.round(s.callsPerSecond).toLocaleString("en-US").padStart(9)} calls/s  ` +
        `p50 ${s.latencyMs.p50.toFixed(1)} ms, p99 ${s.latencyMs.p99.toFixed(1)} ms at ${params.concurrency} in flight; CPU per call: ` +
        `${side === "reference" ? "reference" : "ingest"} ${micros(s.cpuMicrosPerCall.server)} µs, client ${micros(s.cpuMicrosPerCall.client)} µs, ` +
        `nats-server ${micros(s.cpuMicrosPerCall.natsServer)} µs`,
    );
  }
  const ratePass = rateRatio >= GOALS.httpOverReference;
  const cpuPass = cpuRatio <= GOALS.httpCpuOverGrpcCpu;
  console.log(`HTTP / reference calls/s: ${rateRatio.toFixed(2)}×  (goal ≥ ${GOALS.httpOverReference}×: ${verdict(ratePass)})`);
  console.log(`ingest CPU per call, HTTP / gRPC: ${cpuRatio.toFixed(2)}×  (goal ≤ ${GOALS.httpCpuOverGrpcCpu}×: ${verdict(cpuPass)})`);

  const record = (s: SideSummary) => ({
    callsPerSecond: Math.round(s.callsPerSecond),
    calls: s.calls,
    seconds: Number(s.seconds.toFixed(3)),
    windows: s.windows,
    serverCpuMicrosPerCall: roundedOrNull(s.cpuMicrosPerCall.server),
    clientCpuMicrosPerCall: roundedOrNull(s.cpuMicrosPerCall.client),
    natsServerCpuMicrosPerCall: roundedOrNull(s.cpuMicrosPerCall.natsServer),
    latencyMs: { p50: roundedOrNull(s.latencyMs.p50), p99: roundedOrNull(s.latencyMs.p99) },
  });
  const file = await writeResults(RESULTS_DIR, "ingest-http", {
    benchmark: "ingest-http",
    date: date.toISOString(),
    parameters: {
      batchSize: params.batchSize,
      concurrentRequests: params.concurrency,
      httpConnections: params.concurrency,
      grpcChannels: params.grpcChannels,
      ingestWorkers: params.workers,
      measuredSecondsPerWindow: params.seconds,
      warmupSecondsPerWindow: params.warmupSeconds,
      rounds: params.rounds,
      order: SIDES,
      distinctBodies: forms.length,
      meanCallJsonBytes: Math.round(meanCallJsonBytes),
      storage: "file",
      natsServer: nats.external ? "NATS_URL" : "own nats-server",
    },
    reference: { what: "node:http, JSON.parse, one JetStream publish of the raw body per request (awaited)", ...record(sides.reference) },
    http: { what: "ingest POST /v1/batch", ...record(sides.http) },
    grpc: { what: "ingest gRPC IngestBatch", ...record(sides.grpc) },
    httpOverReference: Number(rateRatio.toFixed(3)),
    httpCpuOverGrpcCpu: roundedOrNull(cpuRatio),
    goals: {
      httpOverReference: { goal: GOALS.httpOverReference, pass: ratePass },
      httpCpuOverGrpcCpu: { goal: GOALS.httpCpuOverGrpcCpu, pass: cpuPass },
    },
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
}

runBenchmark(main);
