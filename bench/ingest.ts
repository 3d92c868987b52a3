/**
 * Ingest throughput benchmark: `npm run bench:ingest [-- --calls N]`.
 *
 * Measures, against one nats-server with JetStream (file storage):
 *  1. ingest: calls per second durably accepted through gRPC IngestBatch —
 *     batches of 100 realistic ~600-byte calls, a few batches in flight over
 *     two channels, the ingest service in its own process. A call counts once
 *     its batch was answered with accepted === 100, i.e. after JetStream's
 *     PubAck for the batch.
 *  2. raw: JetStream messages per second published by nats.js, one ~600-byte
 *     encoded call per message, each PubAck awaited, at most 256 in flight.
 *
 * Ingest packs a whole batch into one JetStream message, so it should beat
 * the per-call raw rate by far; the target is ingest ≥ 4 × raw. Requests and
 * payloads are built and encoded before the clock starts, so only sending,
 * ingest's own work and JetStream are timed.
 *
 * Uses its own nats-server on a free port and temp store, or NATS_URL (with a
 * unique namespace, deleted afterwards). Writes bench/results/ingest-<time>.json
 * and bench/results/ingest-latest.json. Exits non-zero only on errors, not when
 * the target is missed. `--cpu-prof-dir DIR` profiles the ingest process.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify, parseArgs } from "node:util";
import { credentials, Metadata } from "@grpc/grpc-js";
import { jetstream, jetstreamManager, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { IngestServiceClient, IngestServiceService, type IngestBatchResponse } from "@switchyard/contracts";
import { basicAuthorization, busNames, type BusNames } from "@switchyard/platform";
import { freePort, NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { IngestChild } from "./lib/ingest-child.js";
import { encodedBatchRequests, encodedCalls, seededRandom } from "./lib/sample-calls.js";

const TARGET_RATIO = 4;
const WRITE_KEY = "wk_bench_0123456789";
const SOURCE_ID = "bench";
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const run = promisify(execFile);

interface Parameters {
  calls: number;
  warmupCalls: number;
  batchSize: number;
  concurrency: number;
  channels: number;
  rawCalls: number;
  rawWarmupCalls: number;
  rawWindow: number;
  cpuProfDir: string | undefined;
}

interface Rate {
  count: number;
  seconds: number;
  perSecond: number;
}

// ---------------------------------------------------------------- options

function parseParameters(argv: string[]): Parameters {
  const { values } = parseArgs({
    args: argv,
    options: {
      calls: { type: "string", default: "200000" },
      "warmup-calls": { type: "string", default: "20000" },
      "batch-size": { type: "string", default: "100" },
      concurrency: { type: "string", default: "4" },
      channels: { type: "string", default: "2" },
      "raw-calls": { type: "string" },
      "raw-window": { type: "string", default: "256" },
      "cpu-prof-dir": { type: "string" },
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
    rawCalls: values["raw-calls"] === undefined ? calls : positiveInt("--raw-calls", values["raw-calls"]),
    rawWarmupCalls: warmupCalls,
    rawWindow: positiveInt("--raw-window", values["raw-window"]),
    cpuProfDir: values["cpu-prof-dir"],
  };
}

function positiveInt(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name}: must be a positive integer, got ${text}`);
  return value;
}

// ---------------------------------------------------------------- cleanup

/** Undo steps, run last-registered first, once, even after a failure or Ctrl-C. */
class Cleanup {
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

// ---------------------------------------------------------------- setup

async function startNats(cleanup: Cleanup): Promise<{ url: string; external: boolean }> {
  const external = process.env.NATS_URL;
  if (external) return { url: external, external: true };
  const server = await NatsServer.start();
  cleanup.add("stop nats-server", () => server.dispose());
  return { url: server.url, external: false };
}

async function writeWorkspaceFile(cleanup: Cleanup): Promise<string> {
  const dir = await mkdtemp(join(os.tmpdir(), "switchyard-bench-"));
  cleanup.add("remove the workspace dir", () => rm(dir, { recursive: true, force: true }));
  const file = join(dir, "workspace.json");
  await writeFile(file, JSON.stringify({ sources: [{ id: SOURCE_ID, writeKeys: [WRITE_KEY] }] }));
  return file;
}

/** On a shared server, removes everything this run created under its namespace. */
async function deleteNamespaceStreams(jsm: JetStreamManager, names: BusNames, rawStream: string): Promise<void> {
  for (const stream of [names.callsStream, `KV_${names.configBucket}`, rawStream]) {
    await jsm.streams.delete(stream).catch(() => false);
  }
}

async function startIngest(params: Parameters, natsUrl: string, namespace: string, workspaceFile: string, cleanup: Cleanup) {
  const ingest = IngestChild.start({
    cwd: REPO_ROOT,
    natsUrl,
    namespace,
    workspaceFile,
    grpcPort: await freePort(),
    httpPort: await freePort(),
    nodeFlags: params.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${params.cpuProfDir}`] : [],
  });
  cleanup.add("stop ingest", () => ingest.stop());
  await ingest.waitUntilReady();
  return ingest;
}

// ---------------------------------------------------------------- timing

/**
 * Runs task(0 … total-1) on `lanes` concurrent lanes: each lane starts its next
 * task as soon as its last one finished, so at most `lanes` are in flight.
 */
async function runLanes(lanes: number, total: number, task: (index: number, lane: number) => Promise<void>): Promise<void> {
  let next = 0;
  const runLane = async (lane: number) => {
    while (next < total) await task(next++, lane);
  };
  await Promise.all(Array.from({ length: Math.min(lanes, total) }, (_, lane) => runLane(lane)));
}

async function timed(count: number, work: () => Promise<void>): Promise<Rate> {
  const start = performance.now();
  await work();
  const seconds = (performance.now() - start) / 1000;
  return { count, seconds, perSecond: count / seconds };
}

// ---------------------------------------------------------------- ingest over gRPC

type SendBatch = (request: Buffer) => Promise<IngestBatchResponse>;

/**
 * A sender over `channels` separate connections (own subchannel pools, so
 * they do not share one). Requests are sent already encoded.
 */
async function grpcSenders(grpcPort: number, channels: number): Promise<{ senders: SendBatch[]; close: () => void }> {
  const metadata = new Metadata();
  metadata.set("authorization", basicAuthorization(WRITE_KEY));
  const clients = Array.from(
    { length: channels },
    () => new IngestServiceClient(`127.0.0.1:${grpcPort}`, credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }),
  );
  await Promise.all(
    clients.map(
      (client) =>
        new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 10_000, (error) => (error ? reject(error) : resolve()))),
    ),
  );
  const senders = clients.map(
    (client): SendBatch =>
      (request) =>
        new Promise((resolve, reject) =>
          client.makeUnaryRequest(
            IngestServiceService.ingestBatch.path,
            (encoded: Buffer) => encoded,
            IngestServiceService.ingestBatch.responseDeserialize,
            request,
            metadata.clone(),
            { deadline: Date.now() + 60_000 },
            (error, response) => (error || !response ? reject(error ?? new Error("no response")) : resolve(response)),
          ),
        ),
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

async function benchmarkIngest(params: Parameters, grpcPort: number): Promise<{ rate: Rate; batches: number; meanCallJsonBytes: number }> {
  const random = seededRandom(1);
  const batches = Math.ceil(params.calls / params.batchSize);
  const warmupBatches = Math.ceil(params.warmupCalls / params.batchSize);
  console.log(`encoding ${warmupBatches + batches} batches of ${params.batchSize} calls …`);
  const warmup = encodedBatchRequests(random, warmupBatches, params.batchSize);
  const measured = encodedBatchRequests(random, batches, params.batchSize);

  const { senders, close } = await grpcSenders(grpcPort, params.channels);
  try {
    console.log(`ingest: warming up with ${warmupBatches * params.batchSize} calls …`);
    await sendAll(senders, warmup.requests, params.concurrency, params.batchSize);
    console.log(
      `ingest: sending ${batches * params.batchSize} calls, ${params.concurrency} batches in flight over ${params.channels} channels …`,
    );
    const rate = await timed(batches * params.batchSize, () => sendAll(senders, measured.requests, params.concurrency, params.batchSize));
    return { rate, batches: warmupBatches + batches, meanCallJsonBytes: measured.meanCallJsonBytes };
  } finally {
    close();
  }
}

// ---------------------------------------------------------------- raw JetStream

async function createRawStream(jsm: JetStreamManager, namespace: string): Promise<{ stream: string; subject: string }> {
  const stream = `${namespace.toUpperCase()}_BENCH_RAW`;
  const subject = `${namespace}.bench.raw`;
  await jsm.streams.add({ name: stream, subjects: [subject], storage: StorageType.File });
  return { stream, subject };
}

async function benchmarkRawJetStream(
  params: Parameters,
  nc: NatsConnection,
  subject: string,
): Promise<{ rate: Rate; payloadBytes: number }> {
  const js = jetstream(nc);
  const payloads = encodedCalls(seededRandom(2), 1000);
  const payloadBytes = payloads.reduce((sum, payload) => sum + payload.length, 0) / payloads.length;
  const publish = async (index: number) => {
    await js.publish(subject, payloads[index % payloads.length]!);
  };
  console.log(`raw: warming up with ${params.rawWarmupCalls} publishes …`);
  await runLanes(params.rawWindow, params.rawWarmupCalls, publish);
  console.log(`raw: publishing ${params.rawCalls} messages, at most ${params.rawWindow} in flight …`);
  const rate = await timed(params.rawCalls, () => runLanes(params.rawWindow, params.rawCalls, publish));
  return { rate, payloadBytes };
}

/** Both runs must have stored exactly what they claim; a shortfall would inflate a rate. */
async function checkStored(jsm: JetStreamManager, stream: string, expected: number): Promise<void> {
  const { state } = await jsm.streams.info(stream);
  if (state.messages !== expected) throw new Error(`${stream} holds ${state.messages} messages, expected ${expected}`);
}

// ---------------------------------------------------------------- report

async function commandOutput(command: string, args: string[]): Promise<string | undefined> {
  try {
    const { stdout } = await run(command, args, { cwd: REPO_ROOT });
    return stdout.trim();
  } catch {
    return undefined;
  }
}

async function machineFacts(nc: NatsConnection) {
  const cpus = os.cpus();
  const commit = await commandOutput("git", ["rev-parse", "--short", "HEAD"]);
  const status = commit === undefined ? undefined : await commandOutput("git", ["status", "--porcelain"]);
  return {
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpuModel: cpus[0]?.model ?? "unknown",
    cpuCount: cpus.length,
    totalMemoryBytes: os.totalmem(),
    nodeVersion: process.version,
    natsServerVersion: (await commandOutput("nats-server", ["--version"])) ?? null,
    natsServerVersionConnected: nc.info?.version ?? null,
    gitCommit: commit ?? null,
    gitDirty: status === undefined ? null : status.length > 0,
  };
}

async function writeResults(results: object, date: Date): Promise<string> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const text = `${JSON.stringify(results, null, 2)}\n`;
  const stamp = date
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replaceAll(":", "");
  const file = join(RESULTS_DIR, `ingest-${stamp}.json`);
  await writeFile(file, text);
  // Replace "latest" atomically, so a reader never sees half a file.
  const latest = join(RESULTS_DIR, "ingest-latest.json");
  await writeFile(`${latest}.tmp`, text);
  await rename(`${latest}.tmp`, latest);
  return file;
}

function printSummary(ingest: Rate, raw: Rate, ratio: number): void {
  const format = (n: number) => Math.round(n).toLocaleString("en-US");
  console.log("");
  console.log(
    `ingest (gRPC, durably accepted): ${format(ingest.perSecond)} calls/s  (${format(ingest.count)} calls in ${ingest.seconds.toFixed(2)} s)`,
  );
  console.log(
    `raw JetStream publish per call:  ${format(raw.perSecond)} msgs/s   (${format(raw.count)} msgs in ${raw.seconds.toFixed(2)} s)`,
  );
  console.log(
    `ratio ingest / raw:              ${ratio.toFixed(2)}×  (target ≥ ${TARGET_RATIO}×: ${ratio >= TARGET_RATIO ? "PASS" : "MISS"})`,
  );
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const params = parseParameters(process.argv.slice(2));
  const cleanup = new Cleanup();
  const onSignal = () => void cleanup.run().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const date = new Date();
    const nats = await startNats(cleanup);
    const namespace = uniqueNamespace();
    const names = busNames(namespace);
    const nc = await connect({ servers: nats.url });
    cleanup.add("close the NATS connection", () => nc.close());
    const jsm = await jetstreamManager(nc);
    const raw = await createRawStream(jsm, namespace);
    if (nats.external) cleanup.add(`delete the ${namespace} streams`, () => deleteNamespaceStreams(jsm, names, raw.stream));

    const ingestChild = await startIngest(params, nats.url, namespace, await writeWorkspaceFile(cleanup), cleanup);
    const ingest = await benchmarkIngest(params, ingestChild.grpcPort);
    await ingestChild.stop(); // before the raw run, so it cannot take CPU (and a profile covers ingest only)
    await checkStored(jsm, names.callsStream, ingest.batches);

    const rawRun = await benchmarkRawJetStream(params, nc, raw.subject);
    await checkStored(jsm, raw.stream, params.rawWarmupCalls + params.rawCalls);

    const ratio = ingest.rate.perSecond / rawRun.rate.perSecond;
    printSummary(ingest.rate, rawRun.rate, ratio);
    const file = await writeResults(
      {
        benchmark: "ingest",
        date: date.toISOString(),
        parameters: {
          calls: ingest.rate.count,
          warmupCalls: params.warmupCalls,
          batchSize: params.batchSize,
          concurrentBatches: params.concurrency,
          grpcChannels: params.channels,
          meanCallJsonBytes: Math.round(ingest.meanCallJsonBytes),
          rawCalls: params.rawCalls,
          rawWarmupCalls: params.rawWarmupCalls,
          rawWindow: params.rawWindow,
          rawPayloadBytes: Math.round(rawRun.payloadBytes),
          storage: "file",
          natsServer: nats.external ? "NATS_URL" : "own nats-server",
          cpuProfiled: params.cpuProfDir !== undefined,
        },
        ingestCallsPerSecond: Math.round(ingest.rate.perSecond),
        ingestSeconds: Number(ingest.rate.seconds.toFixed(3)),
        rawPublishesPerSecond: Math.round(rawRun.rate.perSecond),
        rawSeconds: Number(rawRun.rate.seconds.toFixed(3)),
        ratio: Number(ratio.toFixed(3)),
        target: { ratio: TARGET_RATIO, pass: ratio >= TARGET_RATIO },
        machine: await machineFacts(nc),
      },
      date,
    );
    console.log(`results: ${file}`);
  } finally {
    await cleanup.run();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error("benchmark failed:", error);
    process.exit(1);
  },
);
