/**
 * Ingest throughput benchmark: `npm run bench:ingest [-- --calls N --raw-calls N]`.
 *
 * Measures, against one nats-server with JetStream (file storage):
 *  1. ingest: calls per second durably accepted through gRPC IngestBatch —
 *     batches of 100 realistic ~600-byte calls, 16 batches in flight over
 *     four connections (several clients), the ingest service in its own
 *     process. A call counts once its batch was answered with accepted ===
 *     100, i.e. after JetStream's PubAck for the batch. Measured with one
 *     worker process (the service's default), and again with `--workers`
 *     (default: one per core, as SWITCHYARD_WORKERS=auto runs it).
 *  2. raw: JetStream messages per second published by nats.js, one ~600-byte
 *     encoded call per message, each PubAck awaited, at most 256 in flight;
 *     once before the ingest runs and once after, counted together. The
 *     judged reference publishes over a connection opened exactly as ingest
 *     opens its own (libs/infra/platform connectBus), so both sides run nats.js
 *     with the same options. Among them is noAsyncTraces, which spares every
 *     request a stack capture: ingest makes one request per batch, a per-call
 *     publisher one per call, so with nats.js's default options the reference
 *     would be slower than it needs to be. That reference, nats.js with its
 *     defaults, is measured too and reported beside the judged one.
 *
 * Both sides are timed over comparable stretches, a few seconds each (600,000
 * calls through ingest, 2 × 200,000 raw publishes): a shared machine's speed
 * drifts within seconds, and a short window on one side only would make the
 * ratio swing with it.
 *
 * Each run also reports CPU time (user + system, during the timed part): per
 * call, of the ingest processes, this benchmark's gRPC client and nats-server;
 * per raw message, of the publisher (this process) and nats-server. On a
 * shared machine the rates move with other load, the CPU cost much less, and
 * the figures show what bounds each rate: the raw reference is bound by its
 * one publishing thread, single-worker ingest by its one thread, and both by
 * the 2 cores that ingest, its client and nats-server share. (Not readable at
 * NATS_URL, whose nats-server is not this run's process.) The
 * client is a minimal one (lib/grpc-http2-sender.ts), since on this machine
 * its CPU is taken from the service; requests are built, encoded and framed
 * before the clock starts, so only sending, ingest's own work and JetStream
 * are timed.
 *
 * Ingest packs a whole batch into one JetStream message, so it should beat
 * the per-call raw rate by far; the target is ingest ≥ 4 × raw, judged on
 * the default single-worker run; the run with more workers is reported
 * beside it.
 *
 * `--insights` measures something else instead: what the insights service
 * (source schemas and usage, services/insights) costs ingest. Single-worker
 * ingest takes the same load in rounds without insights and with it running
 * (off, on, on, off, … : `--insights-rounds` of each), a fresh ingest process
 * each round. Before an "on" round insights is started and has read every
 * call already stored (its `switchyard_insights_read_sequence` gauge reaches
 * the calls stream's last sequence), so it counts the round's own calls as
 * they arrive; after the round it is stopped once it has caught up, and how
 * far behind it was when the round ended and how long it then took are
 * reported with its CPU per call. Target: calls/s with insights ≥ 0.95 × without.
 * Writes bench/results/ingest-insights-latest.json.
 *
 * Uses its own nats-server on a free port and temp store, or NATS_URL (with a
 * unique namespace, deleted afterwards). Writes bench/results/ingest-latest.json. Exits non-zero only on errors, not when
 * the target is missed. `--cpu-prof-dir DIR` profiles the ingest process (and, with `--insights`,
 * the insights process, in DIR/insights).
 */
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { jetstream, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { IngestServiceService, type IngestBatchResponse } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { connectBus, createLogger } from "@switchyard/platform";
import { freePort, waitFor } from "@switchyard/testkit";
import {
  machineFacts,
  microsPer,
  openBenchBus,
  ownCpuMs,
  positiveInt,
  processCpuMs,
  processTreeCpuMs,
  roundedOrNull,
  runBenchmark,
  runLanes,
  writeResults,
  writeWorkspaceFile,
  type Cleanup,
} from "./lib/run-support.js";
import { encodedBatchRequests, encodedCalls, seededRandom } from "./lib/sample-calls.js";
import { GrpcHttp2Sender } from "./lib/grpc-http2-sender.js";
import { ServiceChild } from "./lib/service-child.js";

const TARGET_RATIO = 4;
const WRITE_KEY = "wk_bench_0123456789";
const SOURCE_ID = "bench";
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const WORKSPACE = { sources: [{ id: SOURCE_ID, writeKeys: [WRITE_KEY] }] };

interface Parameters {
  calls: number;
  warmupCalls: number;
  batchSize: number;
  concurrency: number;
  channels: number;
  workers: number;
  rawCalls: number;
  rawWarmupCalls: number;
  rawWindow: number;
  cpuProfDir: string | undefined;
  /** Rounds of each kind in the insights comparison; 0 runs the usual benchmark. */
  insightsRounds: number;
}

interface Rate {
  count: number;
  seconds: number;
  perSecond: number;
}

/**
 * A raw reference's rate and the CPU time (user + system, ms) spent on it
 * during the timed stretch: by the publisher (this process) and by
 * nats-server (undefined at NATS_URL, whose process is not ours to read).
 */
interface MeasuredRate extends Rate {
  cpu: { publisher: number | undefined; natsServer: number | undefined };
}

// ---------------------------------------------------------------- options

function parseParameters(argv: string[]): Parameters {
  const { values } = parseArgs({
    args: argv,
    options: {
      calls: { type: "string", default: "600000" },
      "warmup-calls": { type: "string", default: "20000" },
      "batch-size": { type: "string", default: "100" },
      concurrency: { type: "string", default: "16" },
      channels: { type: "string", default: "4" },
      workers: { type: "string", default: String(os.availableParallelism()) },
      "raw-calls": { type: "string", default: "200000" },
      "raw-window": { type: "string", default: "256" },
      "cpu-prof-dir": { type: "string" },
      insights: { type: "boolean", default: false },
      "insights-rounds": { type: "string", default: "2" },
    },
  });
  const calls = positiveInt("--calls", values.calls);
  const warmupCalls = positiveInt("--warmup-calls", values["warmup-calls"]);
  return {
    calls,
    warmupCalls,
    batchSize: positiveInt("--batch-size", values["batch-size"]),
    concurrency: positiveInt("--concurrency", values.concurrency),
    channels: positiveInt("--channels", values.channels),
    workers: positiveInt("--workers", values.workers),
    rawCalls: positiveInt("--raw-calls", values["raw-calls"]),
    rawWarmupCalls: warmupCalls,
    rawWindow: positiveInt("--raw-window", values["raw-window"]),
    cpuProfDir: values["cpu-prof-dir"],
    insightsRounds: values.insights ? positiveInt("--insights-rounds", values["insights-rounds"]) : 0,
  };
}

// ---------------------------------------------------------------- setup

interface Run {
  natsUrl: string;
  /** The run's own nats-server, whose CPU time is read; undefined at NATS_URL. */
  natsPid: number | undefined;
  namespace: string;
  workspaceFile: string;
  cleanup: Cleanup;
}

async function startIngest(params: Parameters, run: Run, workers: number): Promise<ServiceChild> {
  const grpcPort = await freePort();
  const ingest = ServiceChild.start({
    service: "ingest",
    cwd: REPO_ROOT,
    grpcPort,
    env: {
      NATS_URL: run.natsUrl,
      SWITCHYARD_NAMESPACE: run.namespace,
      SWITCHYARD_WORKSPACE_FILE: run.workspaceFile,
      SWITCHYARD_WORKERS: String(workers),
      INGEST_GRPC_PORT: String(grpcPort),
      INGEST_HTTP_PORT: String(await freePort()),
      // Info, so waitUntilReady can count the workers' "ingest ready" lines; ingest logs nothing per request at info.
      LOG_LEVEL: "info",
    },
    // With workers, every worker process writes its own profile.
    nodeFlags: params.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${params.cpuProfDir}/workers-${workers}`] : [],
  });
  run.cleanup.add(`stop ingest (${workers} workers)`, () => ingest.stop());
  await ingest.waitUntilReady({ workers });
  return ingest;
}

// ---------------------------------------------------------------- timing

/** Two runs as one: their calls over their seconds, their CPU added up. */
function combined(a: MeasuredRate, b: MeasuredRate): MeasuredRate {
  const count = a.count + b.count;
  const seconds = a.seconds + b.seconds;
  const sum = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? undefined : x + y);
  return {
    count,
    seconds,
    perSecond: count / seconds,
    cpu: { publisher: sum(a.cpu.publisher, b.cpu.publisher), natsServer: sum(a.cpu.natsServer, b.cpu.natsServer) },
  };
}

/** CPU ms between two readings; undefined when either is missing. */
function cpuBetween(before: number | undefined, after: number | undefined): number | undefined {
  return before === undefined || after === undefined ? undefined : after - before;
}

async function timed(count: number, work: () => Promise<void>): Promise<Rate> {
  const start = performance.now();
  await work();
  const seconds = (performance.now() - start) / 1000;
  return { count, seconds, perSecond: count / seconds };
}

// ---------------------------------------------------------------- ingest over gRPC

type SendBatch = (framedRequest: Buffer) => Promise<IngestBatchResponse>;

/** A sender over each of `channels` separate HTTP/2 connections (see GrpcHttp2Sender for why not grpc-js). */
async function grpcSenders(grpcPort: number, channels: number): Promise<{ senders: SendBatch[]; close: () => void }> {
  const clients = await Promise.all(
    Array.from({ length: channels }, () =>
      GrpcHttp2Sender.connect(`127.0.0.1:${grpcPort}`, IngestServiceService.ingestBatch.path, {
        authorization: basicAuthorization(WRITE_KEY),
      }),
    ),
  );
  const senders = clients.map(
    (client): SendBatch =>
      async (framedRequest) =>
        IngestServiceService.ingestBatch.responseDeserialize(await client.call(framedRequest)),
  );
  return { senders, close: () => clients.forEach((client) => client.close()) };
}

function checkAccepted(response: IngestBatchResponse, batchSize: number): void {
  if (response.accepted !== batchSize || response.rejections.length > 0 || response.duplicate) {
    const firstRejection = response.rejections[0]?.message ?? "none";
    throw new Error(
      `batch ${response.batchId}: accepted ${response.accepted} of ${batchSize} (duplicate: ${response.duplicate}, first rejection: ${firstRejection})`,
    );
  }
}

/** Sends every request, `concurrency` at a time; lanes are spread over the channels round-robin. */
async function sendAll(senders: SendBatch[], requests: Buffer[], concurrency: number, batchSize: number): Promise<void> {
  await runLanes(concurrency, requests.length, async (index, lane) => {
    const send = senders[lane % senders.length]!;
    checkAccepted(await send(requests[index]!), batchSize);
  });
}

interface IngestRun {
  workers: number;
  rate: Rate;
  /** Batches stored, warm-up included. */
  batches: number;
  meanCallJsonBytes: number;
  /**
   * CPU per measured call, in microseconds (user + system, during the timed
   * part): the ingest processes (workers included), this benchmark's gRPC
   * client, and nats-server. Rates depend on the machine's other load; these
   * less so.
   */
  cpuMicrosPerCall: { ingest: number | undefined; client: number; natsServer: number | undefined };
}

/** Starts ingest with `workers` processes, warms it up, times the measured calls, stops it. */
async function benchmarkIngest(params: Parameters, run: Run, workers: number): Promise<IngestRun> {
  const ingest = await startIngest(params, run, workers);
  // Same calls in every run (batch ids differ, so none is a duplicate).
  const random = seededRandom(1);
  const batches = Math.ceil(params.calls / params.batchSize);
  const warmupBatches = Math.ceil(params.warmupCalls / params.batchSize);
  console.log(`encoding ${warmupBatches + batches} batches of ${params.batchSize} calls …`);
  const warmup = encodedBatchRequests(random, warmupBatches, params.batchSize);
  const measured = encodedBatchRequests(random, batches, params.batchSize);
  // Framed as gRPC messages before the clock starts, like the encoding.
  const warmupRequests = warmup.requests.map(GrpcHttp2Sender.frame);
  const measuredRequests = measured.requests.map(GrpcHttp2Sender.frame);

  const { senders, close } = await grpcSenders(ingest.grpcPort, params.channels);
  try {
    console.log(`ingest (${workers} workers): warming up with ${warmupBatches * params.batchSize} calls …`);
    await ingest.guard(sendAll(senders, warmupRequests, params.concurrency, params.batchSize));
    console.log(
      `ingest (${workers} workers): sending ${batches * params.batchSize} calls, ${params.concurrency} batches in flight over ${params.channels} channels …`,
    );
    const ingestCpuBefore = await processTreeCpuMs(ingest.pid);
    const natsCpuBefore = await processCpuMs(run.natsPid);
    const clientCpuBefore = ownCpuMs();
    const rate = await timed(batches * params.batchSize, () =>
      ingest.guard(sendAll(senders, measuredRequests, params.concurrency, params.batchSize)),
    );
    const clientCpu = ownCpuMs() - clientCpuBefore;
    const natsCpuAfter = await processCpuMs(run.natsPid);
    const ingestCpuAfter = await processTreeCpuMs(ingest.pid);
    const cpuMicrosPerCall = {
      ingest: microsPer(cpuBetween(ingestCpuBefore, ingestCpuAfter), rate.count),
      client: (clientCpu * 1000) / rate.count,
      natsServer: microsPer(cpuBetween(natsCpuBefore, natsCpuAfter), rate.count),
    };
    return { workers, rate, batches: warmupBatches + batches, meanCallJsonBytes: measured.meanCallJsonBytes, cpuMicrosPerCall };
  } finally {
    close();
    // Before the next run, so it cannot take CPU (and a profile covers one run only).
    await ingest.stop();
  }
}

// ---------------------------------------------------------------- raw JetStream

async function createRawStream(jsm: JetStreamManager, namespace: string): Promise<{ stream: string; subject: string }> {
  const stream = `${namespace.toUpperCase()}_BENCH_RAW`;
  const subject = `${namespace}.bench.raw`;
  await jsm.streams.add({ name: stream, subjects: [subject], storage: StorageType.File });
  return { stream, subject };
}

const RAW_PAYLOADS = encodedCalls(seededRandom(2), 1000);

function meanPayloadBytes(): number {
  return RAW_PAYLOADS.reduce((sum, payload) => sum + payload.length, 0) / RAW_PAYLOADS.length;
}

async function benchmarkRawJetStream(
  params: Parameters,
  nc: NatsConnection,
  target: { subject: string; natsPid: number | undefined },
  label: string,
): Promise<MeasuredRate> {
  const js = jetstream(nc);
  const publish = async (index: number) => {
    await js.publish(target.subject, RAW_PAYLOADS[index % RAW_PAYLOADS.length]!);
  };
  console.log(`raw (${label}): warming up with ${params.rawWarmupCalls} publishes …`);
  await runLanes(params.rawWindow, params.rawWarmupCalls, publish);
  console.log(`raw (${label}): publishing ${params.rawCalls} messages, at most ${params.rawWindow} in flight …`);
  const natsCpuBefore = await processCpuMs(target.natsPid);
  const publisherCpuBefore = ownCpuMs();
  const rate = await timed(params.rawCalls, () => runLanes(params.rawWindow, params.rawCalls, publish));
  const publisher = ownCpuMs() - publisherCpuBefore;
  const natsServer = cpuBetween(natsCpuBefore, await processCpuMs(target.natsPid));
  return { ...rate, cpu: { publisher, natsServer } };
}

/** Both references, one after the other. */
async function benchmarkRawReferences(
  params: Parameters,
  connections: { likeIngest: NatsConnection; defaultOptions: NatsConnection },
  target: { subject: string; natsPid: number | undefined },
): Promise<RawReferences> {
  return {
    likeIngest: await benchmarkRawJetStream(params, connections.likeIngest, target, "as ingest's nats.js"),
    defaultOptions: await benchmarkRawJetStream(params, connections.defaultOptions, target, "nats.js defaults"),
  };
}

function rateRecord(rate: Rate): { publishesPerSecond: number; seconds: number } {
  return { publishesPerSecond: Math.round(rate.perSecond), seconds: Number(rate.seconds.toFixed(3)) };
}

function cpuRecord(cpu: { publisher: number | undefined; natsServer: number | undefined }): {
  publisher: number | null;
  natsServer: number | null;
} {
  return { publisher: roundedOrNull(cpu.publisher), natsServer: roundedOrNull(cpu.natsServer) };
}

/** Both runs must have stored exactly what they claim; a shortfall would inflate a rate. */
async function checkStored(jsm: JetStreamManager, stream: string, expected: number): Promise<void> {
  const { state } = await jsm.streams.info(stream);
  if (state.messages !== expected) throw new Error(`${stream} holds ${state.messages} messages, expected ${expected}`);
}

// ---------------------------------------------------------------- report

/** The two raw references: the judged one (nats.js as ingest configures it) and nats.js with its default options. */
interface RawReferences {
  likeIngest: MeasuredRate;
  defaultOptions: MeasuredRate;
}

/** CPU per published message of a raw reference, in µs: the publisher (this process) and nats-server. */
function rawCpuMicrosPerPublish(rate: MeasuredRate): { publisher: number | undefined; natsServer: number | undefined } {
  return { publisher: microsPer(rate.cpu.publisher, rate.count), natsServer: microsPer(rate.cpu.natsServer, rate.count) };
}

function micros(value: number | undefined): string {
  return value === undefined ? "?" : value.toFixed(1);
}

function printSummary(ingestRuns: IngestRun[], raw: RawReferences): void {
  const format = (n: number) => Math.round(n).toLocaleString("en-US");
  console.log("");
  for (const { workers, rate, cpuMicrosPerCall } of ingestRuns) {
    const label = `ingest, ${workers} worker${workers === 1 ? "" : "s"} (gRPC, durably accepted):`.padEnd(56);
    console.log(
      `${label}${format(rate.perSecond)} calls/s  (${format(rate.count)} calls in ${rate.seconds.toFixed(2)} s, ${(rate.perSecond / raw.likeIngest.perSecond).toFixed(2)}× raw; ` +
        `CPU per call: ingest ${micros(cpuMicrosPerCall.ingest)} µs, client ${micros(cpuMicrosPerCall.client)} µs, nats-server ${micros(cpuMicrosPerCall.natsServer)} µs)`,
    );
  }
  for (const [label, rate] of [
    ["raw JetStream publish per call (as ingest's nats.js):", raw.likeIngest],
    ["raw, nats.js default options (not judged):", raw.defaultOptions],
  ] as const) {
    const cpu = rawCpuMicrosPerPublish(rate);
    console.log(
      `${label.padEnd(56)}${format(rate.perSecond)} msgs/s   (${format(rate.count)} msgs in ${rate.seconds.toFixed(2)} s; ` +
        `CPU per message: publisher ${micros(cpu.publisher)} µs, nats-server ${micros(cpu.natsServer)} µs)`,
    );
  }
  const judged = ingestRuns[0]!;
  const ratio = judged.rate.perSecond / raw.likeIngest.perSecond;
  console.log(
    `ratio ingest (${judged.workers} workers) / raw: ${ratio.toFixed(2)}×  (target ≥ ${TARGET_RATIO}×: ${ratio >= TARGET_RATIO ? "PASS" : "MISS"}); ` +
      `against nats.js's default options: ${(judged.rate.perSecond / raw.defaultOptions.perSecond).toFixed(2)}×`,
  );
}

// ---------------------------------------------------------------- main

async function main(cleanup: Cleanup): Promise<void> {
  const params = parseParameters(process.argv.slice(2));
  if (params.insightsRounds > 0) return benchmarkInsightsCost(params, cleanup);
  const date = new Date();
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, names, nc, jsm } = await openBenchBus(cleanup);
  const raw = await createRawStream(jsm, namespace);
  const run: Run = {
    natsUrl: nats.url,
    natsPid: nats.pid,
    namespace,
    workspaceFile: await writeWorkspaceFile(cleanup, WORKSPACE),
    cleanup,
  };

  // Over a connection opened as ingest opens its own; the benchmark's other connection has nats.js's default options.
  const likeIngest = await connectBus({
    servers: [nats.url],
    name: "switchyard-bench-raw",
    logger: createLogger({ service: "bench", level: "silent" }),
  });
  cleanup.add("close the raw reference's connection", () => likeIngest.drain());
  const references = { likeIngest: likeIngest.nc, defaultOptions: nc };

  // Raw before and after the ingest runs, both counted: a machine whose speed drifts during the run favours neither side.
  const rawTarget = { subject: raw.subject, natsPid: nats.pid };
  const rawBefore = await benchmarkRawReferences(params, references, rawTarget);
  const ingestRuns: IngestRun[] = [];
  for (const workers of params.workers > 1 ? [1, params.workers] : [1]) {
    ingestRuns.push(await benchmarkIngest(params, run, workers));
    await checkStored(
      jsm,
      names.callsStream,
      ingestRuns.reduce((sum, ingestRun) => sum + ingestRun.batches, 0),
    );
  }

  const rawAfter = await benchmarkRawReferences(params, references, rawTarget);
  await checkStored(jsm, raw.stream, 4 * (params.rawWarmupCalls + params.rawCalls));
  const rawRates: RawReferences = {
    likeIngest: combined(rawBefore.likeIngest, rawAfter.likeIngest),
    defaultOptions: combined(rawBefore.defaultOptions, rawAfter.defaultOptions),
  };
  const payloadBytes = meanPayloadBytes();

  printSummary(ingestRuns, rawRates);
  const judged = ingestRuns[0]!;
  const ratio = judged.rate.perSecond / rawRates.likeIngest.perSecond;
  const file = await writeResults(RESULTS_DIR, "ingest", {
    benchmark: "ingest",
    date: date.toISOString(),
    parameters: {
      calls: judged.rate.count,
      warmupCalls: params.warmupCalls,
      batchSize: params.batchSize,
      concurrentBatches: params.concurrency,
      grpcChannels: params.channels,
      workers: params.workers,
      meanCallJsonBytes: Math.round(judged.meanCallJsonBytes),
      rawCalls: params.rawCalls,
      rawWarmupCalls: params.rawWarmupCalls,
      rawWindow: params.rawWindow,
      rawPayloadBytes: Math.round(payloadBytes),
      storage: "file",
      natsServer: nats.external ? "NATS_URL" : "own nats-server",
      cpuProfiled: params.cpuProfDir !== undefined,
    },
    ingestRuns: ingestRuns.map(({ workers, rate, cpuMicrosPerCall }) => ({
      workers,
      callsPerSecond: Math.round(rate.perSecond),
      seconds: Number(rate.seconds.toFixed(3)),
      ratio: Number((rate.perSecond / rawRates.likeIngest.perSecond).toFixed(3)),
      ratioAgainstDefaultOptions: Number((rate.perSecond / rawRates.defaultOptions.perSecond).toFixed(3)),
      ingestCpuMicrosPerCall: roundedOrNull(cpuMicrosPerCall.ingest),
      clientCpuMicrosPerCall: roundedOrNull(cpuMicrosPerCall.client),
      natsServerCpuMicrosPerCall: roundedOrNull(cpuMicrosPerCall.natsServer),
    })),
    ingestCallsPerSecond: Math.round(judged.rate.perSecond),
    rawReference: "nats.js connected as ingest connects (libs/infra/platform connectBus: noAsyncTraces)",
    rawPublishesPerSecond: Math.round(rawRates.likeIngest.perSecond),
    rawSeconds: Number(rawRates.likeIngest.seconds.toFixed(3)),
    rawRuns: [rawBefore.likeIngest, rawAfter.likeIngest].map(rateRecord),
    rawCpuMicrosPerPublish: cpuRecord(rawCpuMicrosPerPublish(rawRates.likeIngest)),
    rawDefaultOptions: {
      publishesPerSecond: Math.round(rawRates.defaultOptions.perSecond),
      cpuMicrosPerPublish: cpuRecord(rawCpuMicrosPerPublish(rawRates.defaultOptions)),
      runs: [rawBefore.defaultOptions, rawAfter.defaultOptions].map(rateRecord),
      ratio: Number((judged.rate.perSecond / rawRates.defaultOptions.perSecond).toFixed(3)),
    },
    ratio: Number(ratio.toFixed(3)),
    target: { ratio: TARGET_RATIO, judgedOnWorkers: judged.workers, pass: ratio >= TARGET_RATIO },
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
}

// ---------------------------------------------------------------- insights on and off

const INSIGHTS_TARGET_RATIO = 0.95;

/** Insights in its own process, as npm start runs it (nice 10), with an ops port to read its progress from. */
async function startInsights(run: Run, cpuProfDir: string | undefined): Promise<{ insights: ServiceChild; opsPort: number }> {
  const grpcPort = await freePort();
  const opsPort = await freePort();
  const insights = ServiceChild.start({
    service: "insights",
    cwd: REPO_ROOT,
    grpcPort,
    nodeFlags: cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}/insights`] : [],
    env: {
      NATS_URL: run.natsUrl,
      SWITCHYARD_NAMESPACE: run.namespace,
      SWITCHYARD_WORKSPACE_FILE: run.workspaceFile,
      INSIGHTS_GRPC_PORT: String(grpcPort),
      INSIGHTS_OPS_PORT: String(opsPort),
    },
  });
  run.cleanup.add("stop insights", () => insights.stop());
  await insights.waitUntilReady();
  return { insights, opsPort };
}

/** The last calls-stream sequence insights has read, from its metrics. */
async function insightsReadSequence(opsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
  const match = /^switchyard_insights_read_sequence\{stream="calls"\} (\d+)/m.exec(text);
  return match ? Number(match[1]) : 0;
}

/** Waits until insights has read every stored call; resolves with how long that took. */
async function insightsCaughtUp(jsm: JetStreamManager, stream: string, insights: ServiceChild, opsPort: number): Promise<number> {
  const start = performance.now();
  const { state } = await jsm.streams.info(stream);
  const caughtUp = insights.guard(
    waitFor(
      `insights to read the calls stream up to ${state.last_seq}`,
      async () => (await insightsReadSequence(opsPort)) >= state.last_seq,
      {
        timeoutMs: Number(process.env.BENCH_INSIGHTS_CATCH_UP_MS ?? 300_000),
        intervalMs: 100,
      },
    ),
  );
  await caughtUp.catch(async (error: unknown) => {
    throw new Error(`${String(error)}; insights read ${await insightsReadSequence(opsPort)}; its output:\n${insights.recentOutput}`);
  });
  return (performance.now() - start) / 1000;
}

interface InsightsRound {
  insights: boolean;
  run: IngestRun;
  /** Calls of the round insights had not read when the round ended, and the seconds it then needed. */
  lagCallsAtEnd?: number;
  catchUpSeconds?: number;
  insightsCpuMicrosPerCall?: number;
}

async function benchmarkInsightsCost(params: Parameters, cleanup: Cleanup): Promise<void> {
  const date = new Date();
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, names, nc, jsm } = await openBenchBus(cleanup);
  const run: Run = {
    natsUrl: nats.url,
    natsPid: nats.pid,
    namespace,
    workspaceFile: await writeWorkspaceFile(cleanup, WORKSPACE),
    cleanup,
  };
  const order = Array.from({ length: params.insightsRounds * 2 }, (_, index) => index % 4 === 1 || index % 4 === 2);
  const rounds: InsightsRound[] = [];
  for (const withInsights of order) {
    if (!withInsights) {
      console.log("round without insights …");
      rounds.push({ insights: false, run: await benchmarkIngest(params, run, 1) });
      continue;
    }
    console.log("round with insights: starting it and letting it read what is stored …");
    const { insights, opsPort } = await startInsights(run, params.cpuProfDir);
    await insightsCaughtUp(jsm, names.callsStream, insights, opsPort);
    const cpuBefore = await insights.cpuSeconds();
    const ingestRun = await benchmarkIngest(params, run, 1);
    const { state } = await jsm.streams.info(names.callsStream);
    const lagBatches = state.last_seq - (await insightsReadSequence(opsPort));
    const catchUpSeconds = await insightsCaughtUp(jsm, names.callsStream, insights, opsPort);
    const cpuAfter = await insights.cpuSeconds();
    await insights.stop();
    rounds.push({
      insights: true,
      run: ingestRun,
      lagCallsAtEnd: lagBatches * params.batchSize,
      catchUpSeconds,
      insightsCpuMicrosPerCall: microsPer(
        cpuBetween(cpuBefore === undefined ? undefined : cpuBefore * 1000, cpuAfter === undefined ? undefined : cpuAfter * 1000),
        ingestRun.batches * params.batchSize,
      ),
    });
  }

  const rate = (withInsights: boolean) => {
    const chosen = rounds.filter((round) => round.insights === withInsights).map((round) => round.run.rate);
    return chosen.reduce((sum, r) => sum + r.count, 0) / chosen.reduce((sum, r) => sum + r.seconds, 0);
  };
  const off = rate(false);
  const on = rate(true);
  const ratio = on / off;
  const format = (n: number) => Math.round(n).toLocaleString("en-US");
  console.log("");
  for (const round of rounds) {
    const extra = round.insights
      ? `; insights ${round.lagCallsAtEnd} calls behind at the end, caught up ${round.catchUpSeconds!.toFixed(1)} s later, CPU ${micros(round.insightsCpuMicrosPerCall)} µs per call`
      : "";
    console.log(
      `${(round.insights ? "with insights:" : "without:").padEnd(16)}${format(round.run.rate.perSecond)} calls/s (ingest CPU ${micros(round.run.cpuMicrosPerCall.ingest)} µs per call${extra})`,
    );
  }
  console.log(
    `calls/s with insights / without: ${format(on)} / ${format(off)} = ${ratio.toFixed(3)}× (target ≥ ${INSIGHTS_TARGET_RATIO}×: ${ratio >= INSIGHTS_TARGET_RATIO ? "PASS" : "MISS"})`,
  );
  const file = await writeResults(RESULTS_DIR, "ingest-insights", {
    benchmark: "ingest-insights",
    date: date.toISOString(),
    parameters: {
      callsPerRound: params.calls,
      warmupCalls: params.warmupCalls,
      batchSize: params.batchSize,
      concurrentBatches: params.concurrency,
      grpcChannels: params.channels,
      workers: 1,
      order: order.map((withInsights) => (withInsights ? "with insights" : "without")),
      natsServer: nats.external ? "NATS_URL" : "own nats-server",
    },
    rounds: rounds.map((round) => ({
      insights: round.insights,
      callsPerSecond: Math.round(round.run.rate.perSecond),
      seconds: Number(round.run.rate.seconds.toFixed(3)),
      ingestCpuMicrosPerCall: roundedOrNull(round.run.cpuMicrosPerCall.ingest),
      natsServerCpuMicrosPerCall: roundedOrNull(round.run.cpuMicrosPerCall.natsServer),
      ...(round.insights
        ? {
            insightsLagCallsAtEnd: round.lagCallsAtEnd,
            insightsCatchUpSeconds: Number(round.catchUpSeconds!.toFixed(2)),
            insightsCpuMicrosPerCall: roundedOrNull(round.insightsCpuMicrosPerCall),
          }
        : {}),
    })),
    callsPerSecondWithout: Math.round(off),
    callsPerSecondWith: Math.round(on),
    ratio: Number(ratio.toFixed(3)),
    target: { ratio: INSIGHTS_TARGET_RATIO, pass: ratio >= INSIGHTS_TARGET_RATIO },
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
}

runBenchmark(main);
