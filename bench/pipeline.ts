/**
 * End-to-end benchmark: `npm run bench:pipeline [-- --calls N]`.
 *
 * Measures the whole pipeline as it runs in production, every part in its own
 * process: calls sent over Segment HTTP (POST /v1/batch, batches of 100
 * realistic ~617-byte calls, 16 requests in flight over an undici Pool of 16
 * connections) into ingest, through JetStream (its own nats-server, file
 * storage), out of delivery as signed webhooks to a loopback receiver that
 * answers 200 at once (bench/lib/webhook-sink.ts), with audience-sync
 * running beside them as it would. The workspace has one source connected to
 * one webhook destination; a second pair takes a warm-up first (10,000 calls
 * by default, all delivered before the measured calls are sent).
 *
 * Reports, for N calls (200,000 by default):
 *  - delivered calls/s: N over the time from the first accepted request (its
 *    200 received) to the last webhook received, and ingest's own accept rate;
 *  - time to first webhook, from the first request sent;
 *  - CPU time (user + system, from /proc) per delivered call of each process
 *    (ingest, delivery, audience-sync, the receiver, nats-server, and this
 *    client) and its share of one core over the run; the process with the
 *    highest share is named as what bounds the rate. When none kept a core
 *    80 % busy, the run says so: then the cores all of them share (2 here,
 *    and other work's) bound it as much, and the sum per call is what to
 *    compare.
 * Every call must arrive: the receiver counts the messageIds it saw; missing
 * ones fail the run, repeats (at-least-once delivery) seen by the time the
 * last one arrived are reported.
 *
 * Uses its own nats-server on a free port and temp store, or NATS_URL (in a
 * unique namespace; nats-server CPU is then unknown). Writes
 * bench/results/pipeline-latest.json. Exits non-zero only when the run
 * itself failed.
 */
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort, LOOPBACK_CIDRS, waitFor } from "@switchyard/testkit";
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
  runLanes,
  writeResults,
  writeWorkspaceFile,
  type Cleanup,
} from "./lib/run-support.js";
import { callJsonBytes, sampleCall, seededRandom } from "./lib/sample-calls.js";
import { segmentBatchJson } from "./lib/segment-bodies.js";
import { SegmentHttpSender } from "./lib/segment-http-sender.js";
import { ServiceChild, startIngestChild } from "./lib/service-child.js";
import { WebhookSinkChild } from "./lib/webhook-sink-child.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const SHARED_SECRET = "bench-shared-secret-0123456789";
const ADMIN_TOKEN = "bench-admin-token-0123456789";
const KEYS = { measured: "wk_bench_e2e_0123456789", warm: "wk_bench_e2e_warm_0123456789" };
const PATHS = { measured: "/e2e", warm: "/e2e-warm" };

interface Parameters {
  calls: number;
  warmupCalls: number;
  batchSize: number;
  concurrency: number;
  timeoutSeconds: number;
}

function parseParameters(argv: string[]): Parameters {
  const { values } = parseArgs({
    args: argv,
    options: {
      calls: { type: "string", default: "200000" },
      "warmup-calls": { type: "string", default: "10000" },
      "batch-size": { type: "string", default: "100" },
      concurrency: { type: "string", default: "16" },
      "timeout-s": { type: "string", default: "600" },
    },
  });
  return {
    calls: positiveInt("--calls", values.calls),
    warmupCalls: positiveInt("--warmup-calls", values["warmup-calls"]),
    batchSize: positiveInt("--batch-size", values["batch-size"]),
    concurrency: positiveInt("--concurrency", values.concurrency),
    timeoutSeconds: positiveInt("--timeout-s", values["timeout-s"]),
  };
}

function workspace(sink: WebhookSinkChild) {
  const destination = (id: string, path: string) => ({
    id,
    settings: { webhooks: [{ url: sink.url(path) }], sharedSecret: SHARED_SECRET },
  });
  return {
    sources: [
      { id: "e2e", writeKeys: [KEYS.measured] },
      { id: "e2e-warm", writeKeys: [KEYS.warm] },
    ],
    destinations: [destination("e2e", PATHS.measured), destination("e2e-warm", PATHS.warm)],
    connections: [
      { sourceId: "e2e", destinationId: "e2e" },
      { sourceId: "e2e-warm", destinationId: "e2e-warm" },
    ],
  };
}

/** `calls` realistic calls as /v1/batch bodies of `batchSize`, built before the clock starts. */
function batchBodies(random: () => number, calls: number, batchSize: number): { bodies: Buffer[]; meanCallJsonBytes: number } {
  const bodies: Buffer[] = [];
  let jsonBytes = 0;
  for (let sent = 0; sent < calls; sent += batchSize) {
    const batch = Array.from({ length: Math.min(batchSize, calls - sent) }, () => sampleCall(random));
    if (sent === 0) jsonBytes = batch.reduce((sum, call) => sum + callJsonBytes(call), 0) / batch.length;
    bodies.push(Buffer.from(segmentBatchJson(batch)));
  }
  return { bodies, meanCallJsonBytes: jsonBytes };
}

/** The share of one core above which a process counts as keeping it busy. */
const SATURATED_CORE_SHARE = 0.8;

const PROCESSES = ["ingest", "delivery", "audience-sync", "receiver", "nats-server", "client"] as const;
type ProcessName = (typeof PROCESSES)[number];

async function cpuReadings(pids: Record<Exclude<ProcessName, "client">, number | undefined>) {
  const readings: Record<ProcessName, number | undefined> = {
    ingest: await processTreeCpuMs(pids.ingest),
    delivery: await processTreeCpuMs(pids.delivery),
    "audience-sync": await processTreeCpuMs(pids["audience-sync"]),
    receiver: await processTreeCpuMs(pids.receiver),
    "nats-server": await processCpuMs(pids["nats-server"]),
    client: ownCpuMs(),
  };
  return readings;
}

async function main(cleanup: Cleanup): Promise<void> {
  const params = parseParameters(process.argv.slice(2));
  const date = new Date();
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, nc } = await openBenchBus(cleanup);

  const sink = await WebhookSinkChild.start(REPO_ROOT);
  cleanup.add("stop the webhook sink", () => sink.stop());
  await sink.countMessageIds(PATHS.measured);
  const workspaceFile = await writeWorkspaceFile(cleanup, workspace(sink));
  const shared = { NATS_URL: nats.url, SWITCHYARD_NAMESPACE: namespace, SWITCHYARD_WORKSPACE_FILE: workspaceFile };

  const { ingest, httpPort } = await startIngestChild(cleanup, { cwd: REPO_ROOT, natsUrl: nats.url, namespace, workspaceFile });
  const deliveryPort = await freePort();
  const delivery = ServiceChild.start({
    service: "delivery",
    cwd: REPO_ROOT,
    grpcPort: deliveryPort,
    // The receiver is on loopback, which delivery refuses unless allowed.
    env: {
      ...shared,
      DELIVERY_GRPC_PORT: String(deliveryPort),
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
    },
  });
  cleanup.add("stop delivery", () => delivery.stop());
  const audiencePort = await freePort();
  const audience = ServiceChild.start({
    service: "audience-sync",
    cwd: REPO_ROOT,
    grpcPort: audiencePort,
    env: { ...shared, SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN, AUDIENCE_GRPC_PORT: String(audiencePort) },
  });
  cleanup.add("stop audience-sync", () => audience.stop());
  await Promise.all([delivery.waitUntilReady(), audience.waitUntilReady()]);
  const services = [ingest, delivery, audience];
  const guard = <T>(work: Promise<T>) => services.reduce((guarded, service) => service.guard(guarded), work);

  console.log(`building ${params.warmupCalls + params.calls} calls in batches of ${params.batchSize} …`);
  const random = seededRandom(1);
  const warm = batchBodies(random, params.warmupCalls, params.batchSize);
  const measured = batchBodies(random, params.calls, params.batchSize);
  const origin = `http://127.0.0.1:${httpPort}`;
  const warmSender = new SegmentHttpSender(origin, KEYS.warm, params.concurrency);
  const sender = new SegmentHttpSender(origin, KEYS.measured, params.concurrency);
  cleanup.add("close the HTTP clients", () => Promise.all([warmSender.close(), sender.close()]));
  const timeoutMs = params.timeoutSeconds * 1000;

  console.log(`warm-up: ${params.warmupCalls} calls through every service …`);
  await guard(runLanes(params.concurrency, warm.bodies.length, (index) => warmSender.post(warm.bodies[index]!)));
  await guard(
    waitFor(`${params.warmupCalls} warm-up webhooks`, async () => (await sink.count(PATHS.warm)) >= params.warmupCalls, {
      timeoutMs,
      intervalMs: 100,
    }),
  );

  const pids = {
    ingest: ingest.pid,
    delivery: delivery.pid,
    "audience-sync": audience.pid,
    receiver: sink.pid,
    "nats-server": nats.pid,
  };
  console.log(`sending ${params.calls} calls, ${params.concurrency} requests in flight …`);
  const cpuBefore = await cpuReadings(pids);
  const sendStartedAt = Date.now();
  let firstAcceptedAt: number | undefined;
  const answerMs: number[] = [];
  await guard(
    runLanes(params.concurrency, measured.bodies.length, async (index) => {
      const start = performance.now();
      await sender.post(measured.bodies[index]!);
      answerMs.push(performance.now() - start);
      firstAcceptedAt ??= Date.now();
    }),
  );
  const sendDoneAt = Date.now();
  console.log(`all accepted after ${((sendDoneAt - sendStartedAt) / 1000).toFixed(2)} s; waiting for the webhooks …`);
  await guard(
    waitFor(
      `${params.calls} webhooks with distinct messageIds`,
      async () => (await sink.idCounts(PATHS.measured)).distinct >= params.calls,
      {
        timeoutMs,
        intervalMs: 50,
      },
    ),
  ).catch(async (error: unknown) => {
    const counts = await sink.idCounts(PATHS.measured);
    throw new Error(`${(error as Error).message}; received ${counts.distinct} distinct of ${params.calls} (${counts.total} in all)`);
  });
  const cpuAfter = await cpuReadings(pids);
  const stats = (await sink.stats()).paths[PATHS.measured]!;
  const ids = await sink.idCounts(PATHS.measured);
  if (ids.distinct !== params.calls || ids.missing > 0) {
    throw new Error(
      `the receiver saw ${ids.distinct} distinct messageIds (expected ${params.calls}) and ${ids.missing} bodies without one`,
    );
  }

  const first = firstAcceptedAt!;
  const deliveredSeconds = (stats.lastAt - first) / 1000;
  const deliveredPerSecond = params.calls / deliveredSeconds;
  const wallMs = stats.lastAt - sendStartedAt;
  const perProcess = Object.fromEntries(
    PROCESSES.map((name) => {
      const before = cpuBefore[name];
      const after = cpuAfter[name];
      const cpuMs = before === undefined || after === undefined ? undefined : after - before;
      return [name, { cpuMs, microsPerCall: microsPer(cpuMs, params.calls), coreShare: cpuMs === undefined ? undefined : cpuMs / wallMs }];
    }),
  ) as Record<ProcessName, { cpuMs: number | undefined; microsPerCall: number | undefined; coreShare: number | undefined }>;
  const bound = PROCESSES.reduce((best, name) => ((perProcess[name].coreShare ?? -1) > (perProcess[best].coreShare ?? -1) ? name : best));
  const totalMicros = PROCESSES.reduce((sum, name) => sum + (perProcess[name].microsPerCall ?? 0), 0);
  const totalShare = PROCESSES.reduce((sum, name) => sum + (perProcess[name].coreShare ?? 0), 0);
  const sortedAnswers = answerMs.sort((a, b) => a - b);
  const acceptedPerSecond = params.calls / ((sendDoneAt - sendStartedAt) / 1000);
  const firstWebhookMs = stats.firstAt - sendStartedAt;
  const repeats = ids.total - ids.distinct;

  const format = (n: number) => Math.round(n).toLocaleString("en-US");
  console.log("");
  console.log(
    `delivered: ${format(deliveredPerSecond)} calls/s  (${format(params.calls)} calls, first accepted → last webhook ${deliveredSeconds.toFixed(2)} s); ` +
      `accepted by ingest: ${format(acceptedPerSecond)} calls/s; first webhook ${firstWebhookMs} ms after the first request`,
  );
  console.log(`every call arrived: ${format(ids.distinct)} distinct messageIds, ${repeats} repeated`);
  console.log(
    `HTTP answers at ${params.concurrency} in flight: p50 ${percentile(sortedAnswers, 50).toFixed(1)} ms, p99 ${percentile(sortedAnswers, 99).toFixed(1)} ms`,
  );
  console.log(`CPU per delivered call, and share of one core over the ${(wallMs / 1000).toFixed(2)} s:`);
  for (const name of PROCESSES) {
    const { microsPerCall, coreShare } = perProcess[name];
    console.log(
      `  ${name.padEnd(14)}${(microsPerCall === undefined ? "?" : microsPerCall.toFixed(2)).padStart(8)} µs  ${coreShare === undefined ? "?" : `${(coreShare * 100).toFixed(0)} %`}`,
    );
  }
  console.log(
    `  ${"all".padEnd(14)}${totalMicros.toFixed(2).padStart(8)} µs  ${(totalShare * 100).toFixed(0)} % (of ${os.cpus().length} cores)`,
  );
  const boundShare = perProcess[bound].coreShare ?? 0;
  // A process that had a core to itself and kept it busy bounds the rate; when none did, the machine's cores did.
  const machineBound = boundShare < SATURATED_CORE_SHARE;
  console.log(
    `bounded by: ${bound} (${(boundShare * 100).toFixed(0)} % of one core)` +
      (machineBound
        ? `; no process kept a core busy (load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores): the shared cores bound the run as much`
        : ""),
  );

  const file = await writeResults(RESULTS_DIR, "pipeline", {
    benchmark: "pipeline",
    date: date.toISOString(),
    parameters: {
      calls: params.calls,
      warmupCalls: params.warmupCalls,
      batchSize: params.batchSize,
      concurrentRequests: params.concurrency,
      httpConnections: params.concurrency,
      meanCallJsonBytes: Math.round(measured.meanCallJsonBytes),
      transport: "Segment HTTP POST /v1/batch",
      processes: ["nats-server", "ingest", "delivery", "audience-sync", "webhook receiver", "client (this process)"],
      natsServer: nats.external ? "NATS_URL" : "own nats-server",
    },
    deliveredCallsPerSecond: Math.round(deliveredPerSecond),
    deliveredSeconds: Number(deliveredSeconds.toFixed(3)),
    acceptedCallsPerSecond: Math.round(acceptedPerSecond),
    firstWebhookMs,
    httpAnswerMs: { p50: roundedOrNull(percentile(sortedAnswers, 50)), p99: roundedOrNull(percentile(sortedAnswers, 99)) },
    received: { distinctMessageIds: ids.distinct, webhooks: ids.total, repeated: repeats },
    cpuMicrosPerDeliveredCall: Object.fromEntries(PROCESSES.map((name) => [name, roundedOrNull(perProcess[name].microsPerCall)])),
    coreShare: Object.fromEntries(PROCESSES.map((name) => [name, roundedOrNull(perProcess[name].coreShare)])),
    cpuMicrosPerDeliveredCallAll: roundedOrNull(totalMicros),
    boundedBy: bound,
    boundingProcessSaturated: !machineBound,
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
}

runBenchmark(main);
