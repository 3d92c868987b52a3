/**
 * Delivery benchmark: `npm run bench:delivery [-- options]`.
 *
 * Measures, in one run, against its own nats-server (or NATS_URL with a
 * unique namespace, deleted afterwards), the delivery service in its own
 * process (a fresh one per phase) and webhook receivers in another
 * (bench/lib/webhook-sink.ts, answering 200):
 *
 *  1. throughput: webhooks delivered per second to one destination with one
 *     URL, from a backlog of CallBatch messages of 100 realistic calls on the
 *     calls stream (as ingest publishes them). Compared with the raw undici
 *     POST rate to the same receiver from this process: an Agent with as many
 *     connections as the service's per-destination concurrency, that many
 *     requests in flight, bodies of the same size. The two take turns in
 *     rounds (3 by default), so both see about the same machine. With
 *     `--workers N` (N > 1) it runs again with N worker processes sharing the
 *     destination's connections (so the receiver sees as many connections as
 *     from the raw client), and that run is judged. On a 2-core machine,
 *     where the receiver needs a core too, one process does better, hence
 *     the default of 1. Target: ≥ 0.7 × raw; goal: ≥ 0.9 × raw.
 *  2. isolation: one source, five destinations. Run once with all five
 *     healthy and once with one whose receiver holds every request for 6 s
 *     (past the 5 s timeout). The other four's aggregate rate, from the first
 *     request of the run to the last of theirs, in both runs. Each run is
 *     long enough (50,000 calls a destination) to span the failing destination's
 *     onset: stall, breaker trip at the 5 s timeout, cool-down and a probe.
 *     Healthy and failing runs alternate (two of each by default), each with
 *     a fresh service process. Target: ≥ 0.9. A third run kind has the
 *     fifth destination rate-limited instead (`--isolation-limit`, 200
 *     requests/s by default; 0 leaves it out): its backlog waits on the
 *     retry stream, and the four must keep their rate (same target), while
 *     it gets its limit (its busiest whole second is reported).
 *  3. latency: calls sent through the ingest service (own process, gRPC
 *     IngestBatch) at a steady rate in small batches; latency is the
 *     receiver's arrival time minus the call's `timestamp`, which ingest sets
 *     to its accept time when the client sends none (every process reads the
 *     same clock; both ends have 1 ms resolution). p50 and p99 over the
 *     measured seconds after a warm-up. Targets: p50 ≤ 10 ms, p99 ≤ 50 ms.
 *  4. latency isolation: a steady load through ingest (300 calls/s, a call
 *     per batch as the HTTP API stores them), measured at one healthy
 *     destination, alone and (in the same run, taking turns, a fresh
 *     delivery process each) next to three hostile receivers of the same
 *     source, served by a second sink process: one never answers, one
 *     answers 200 with a 100 MB body, one resets connections.
 *     The hostile ones get their first request with the measured load, so
 *     the onset (before any breaker opens) is measured too; p50/p99 overall,
 *     for the first 3 s, and per second. Target: p99 with them ≤ 3 × p99
 *     alone. Also prints the CPU each process used: the hostile receivers
 *     share this machine's cores, at the lowest priority (`--hostile-nice`,
 *     19 by default; 0 lets them compete as equals). The warm-up (3 s, its
 *     own source, in every round) sends to a healthy receiver and to one
 *     answering as the 100 MB one does, so that the code cutting such answers is compiled
 *     as in any delivery process that has run a while; in a process that
 *     never ran it, it runs interpreted and the first second's p99 shows
 *     that rather than isolation. `--latency-isolation-cold` leaves it
 *     out. The never-answering and resetting receivers are not warmed: their
 *     retries would come back in the measured seconds. The measured load
 *     starts once the warm-up is delivered, and each process's CPU is
 *     counted from then.
 *  5. filters: the throughput phase's load (backlogs of 100-call batches,
 *     the same mix of calls) to two destinations of their own, one whose
 *     connection has a realistic filter that every call matches (FILTER:
 *     type, context.app.version, and properties.revenue for track calls) and
 *     one without, in the same delivery process, taking turns (plain,
 *     filtered, filtered, plain, plain, …: 4 rounds by default) after a
 *     warm-up of both. Compares the webhooks per second and the service's
 *     CPU per webhook. Target: the filtered rate ≥ 0.95 × the plain one.
 *
 * Rates are taken from the receiver's arrival times, for the service and the
 * raw baseline alike: (requests − 1) / (last − first arrival) over the
 * measured requests; warm-up requests come first and are not counted. The
 * throughput phase also reports CPU time per request of the sender and the
 * receiver (from /proc), which a busy machine disturbs less than rates; the
 * load average at start and end is recorded for the same reason.
 *
 * Writes bench/results/delivery-latest.json. Exits
 * non-zero only when the benchmark itself failed, not when a target is
 * missed. Options: `--cpu-prof-dir DIR` profiles each delivery process (into
 * DIR/delivery-<phase>/; the largest file is the main thread's);
 * `--delivery-env KEY=VALUE` (repeatable) sets service settings;
 * `--phases throughput,isolation,latency,latency-isolation,filters` runs a subset; `--calls`,
 * `--rounds`, `--throughput-warmup-calls`, `--workers`, `--isolation-calls`, `--isolation-rounds`, `--isolation-limit`,
 * `--latency-seconds`, `--latency-isolation-rate`, `--latency-isolation-batch-size`, `--latency-isolation-seconds`,
 * `--latency-isolation-rounds`, `--filter-calls` (per round and destination), `--filter-rounds` and others size the phases;
 * `--latency-isolation-kinds hang,huge,reset` picks the hostile receivers; `slow` (answers 200
 * after 500 ms, slower than the load comes) can be picked besides them; `--latency-isolation-cold`
 * leaves the cut answers out of the warm-up; `--hostile-nice N` (0-19, default 19) sets the hostile
 * receivers' priority.
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { credentials, Metadata } from "@grpc/grpc-js";
import { jetstream, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { BUS_MESSAGE_TYPE_NAMES, CALLS_CONSUMER, RETRY_CONSUMER, busMessageHeaders } from "@switchyard/bus";
import {
  CallBatch,
  IngestBatchRequest,
  IngestServiceClient,
  IngestServiceService,
  type Call,
  type IngestBatchResponse,
} from "@switchyard/contracts";
import { loadDeliveryConfig, webhookBody, webhookSignature } from "@switchyard/delivery";
import { basicAuthorization } from "@switchyard/workspace";
import { ensureCallsStream, type BusNames } from "@switchyard/bus";
import { freePort, LOOPBACK_CIDRS } from "@switchyard/testkit";
import { Agent, request } from "undici";
import {
  machineFacts,
  openBenchBus,
  percentile,
  positiveInt,
  processCpuMs,
  processTreeCpuMs,
  runBenchmark,
  runLanes,
  writeResults,
  writeWorkspaceFile,
  type Cleanup,
} from "./lib/run-support.js";
import { ServiceChild } from "./lib/service-child.js";
import { sampleCall, seededRandom } from "./lib/sample-calls.js";
import { WebhookSinkChild } from "./lib/webhook-sink-child.js";

const TARGETS = {
  throughputRatio: 0.7,
  /** Where the HTTP-path work aims delivery's throughput: close to what undici alone sends. */
  throughputGoalRatio: 0.9,
  isolationRatio: 0.9,
  isolationLimitedRatio: 0.9,
  latencyP50Ms: 10,
  latencyP99Ms: 50,
  latencyIsolationP99Ratio: 3,
  filterRatio: 0.95,
};
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const BATCH_SIZE = 100;
const SHARED_SECRET = "bench-shared-secret-0123456789";
/** How long the failing receiver holds each request: past the service's 5 s timeout. */
const HOLD_MS = 6_000;
const PHASES = ["throughput", "isolation", "latency", "latency-isolation", "filters"] as const;
/** The latency-isolation phase's hostile receivers (bench/lib/webhook-sink.ts): never answers, 100 MB body, resets. */
const HOSTILE_KINDS = ["hang", "huge", "reset"] as const;
/** Receivers that can be picked besides: `slow` answers 200 after SLOW_MS, slower than the load arrives at it. */
const EXTRA_KINDS = ["slow"] as const;
type HostileKind = (typeof HOSTILE_KINDS)[number] | (typeof EXTRA_KINDS)[number];
const PICKABLE_KINDS: readonly HostileKind[] = [...HOSTILE_KINDS, ...EXTRA_KINDS];
const SLOW_MS = 500;
/** The onset the latency-isolation phase reports on its own: seconds from the start of the measured load. */
const FIRST_SECONDS = 3;
type Phase = (typeof PHASES)[number];

const PATHS = {
  throughput: "/tp",
  raw: "/raw",
  warm: "/warm",
  latency: "/lat",
  healthy: (i: number) => `/iso-h/${i}`,
  withSlow: (i: number) => `/iso-s/${i}`,
  slow: "/iso-s/slow",
  withLimited: (i: number) => `/iso-l/${i}`,
  limited: "/iso-l/limited",
  liWarm: "/li/warm",
  liWarmCut: "/li/warm-cut",
  liAlone: "/li/alone",
  liHealthy: "/li/healthy",
  hostile: (kind: HostileKind) => `/li/${kind}`,
  filterPlain: "/fl-plain",
  filterOn: "/fl-on",
};

/**
 * The filters phase's filter: realistic, and matched by every call of the sample mix (track,
 * identify, page; every call has context.app; revenue is never negative), so both destinations
 * get every call and only the cost of deciding differs. Four conditions; track calls are looked
 * up in their properties too.
 */
const FILTER = {
  all: {
    filters: [
      { field: { path: "type", in: ["track", "identify", "page"] } },
      { field: { path: "context.app.version", exists: true } },
      {
        any: {
          filters: [{ not: { field: { path: "type", equals: "track" } } }, { field: { path: "properties.revenue", greaterOrEqual: 0 } }],
        },
      },
    ],
  },
};

interface Parameters {
  phases: Phase[];
  calls: number;
  rounds: number;
  /** Calls before each isolation run. */
  warmupCalls: number;
  /** Calls (and raw POSTs) before the throughput rounds. */
  throughputWarmupCalls: number;
  isolationCalls: number;
  isolationRounds: number;
  /** The rate-limited destination's maxRequestsPerSecond in the isolation phase's third run kind; 0: no such runs. */
  isolationLimit: number;
  latencyRate: number;
  latencyBatchSize: number;
  latencySeconds: number;
  latencyWarmupSeconds: number;
  latencyIsolationRate: number;
  latencyIsolationBatchSize: number;
  latencyIsolationSeconds: number;
  latencyIsolationWarmupSeconds: number;
  latencyIsolationRounds: number;
  /** The hostile receivers the latency-isolation phase puts beside the healthy one (all three by default). */
  latencyIsolationKinds: HostileKind[];
  /** The warm-up also sends to a receiver whose answers delivery cuts (unless --latency-isolation-cold). */
  latencyIsolationWarmCut: boolean;
  /** The nice value of the hostile receivers' process (--hostile-nice, 19 by default; see main). */
  hostileNice: number;
  phaseTimeoutMs: number;
  deliveryEnv: Record<string, string>;
  /** Worker processes of the throughput phase's second run (the first has one). */
  workers: number;
  /** Calls per destination in each round of the filters phase. */
  filterCalls: number;
  filterRounds: number;
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
      phases: { type: "string", default: PHASES.join(",") },
      calls: { type: "string", default: "45000" },
      rounds: { type: "string", default: "3" },
      "warmup-calls": { type: "string", default: "5000" },
      // The service's CPU per webhook keeps falling for its first tens of thousands (JIT tiers, the young generation
      // growing to its 64 MB semi-spaces): rounds before that measure start-up, not the throughput it keeps up.
      "throughput-warmup-calls": { type: "string", default: "50000" },
      "isolation-calls": { type: "string", default: "50000" },
      "isolation-rounds": { type: "string", default: "2" },
      "isolation-limit": { type: "string", default: "200" },
      "latency-rate": { type: "string", default: "1000" },
      "latency-batch-size": { type: "string", default: "10" },
      "latency-seconds": { type: "string", default: "20" },
      "latency-warmup-seconds": { type: "string", default: "5" },
      // A call per batch, as the HTTP API stores them; 300 a second leave a 2-core machine room for the
      // 100 MB receiver, which costs a new connection per request at both ends.
      "latency-isolation-rate": { type: "string", default: "300" },
      "latency-isolation-batch-size": { type: "string", default: "1" },
      "latency-isolation-seconds": { type: "string", default: "15" },
      "latency-isolation-warmup-seconds": { type: "string", default: "3" },
      "latency-isolation-rounds": { type: "string", default: "2" },
      "latency-isolation-kinds": { type: "string", default: HOSTILE_KINDS.join(",") },
      "latency-isolation-cold": { type: "boolean", default: false },
      "hostile-nice": { type: "string", default: "19" },
      "phase-timeout-s": { type: "string", default: "60" },
      "delivery-env": { type: "string", multiple: true, default: [] },
      workers: { type: "string", default: "1" },
      "filter-calls": { type: "string", default: "15000" },
      "filter-rounds": { type: "string", default: "4" },
      "cpu-prof-dir": { type: "string" },
    },
  });
  const phases = values.phases.split(",").map((phase) => phase.trim());
  for (const phase of phases) {
    if (!(PHASES as readonly string[]).includes(phase)) throw new Error(`--phases: unknown phase "${phase}" (${PHASES.join(", ")})`);
  }
  const deliveryEnv: Record<string, string> = {};
  for (const entry of values["delivery-env"]) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(entry);
    if (!match) throw new Error(`--delivery-env: expected KEY=VALUE, got ${entry}`);
    deliveryEnv[match[1]!] = match[2]!;
  }
  return {
    phases: phases as Phase[],
    calls: positiveInt("--calls", values.calls),
    rounds: positiveInt("--rounds", values.rounds),
    warmupCalls: positiveInt("--warmup-calls", values["warmup-calls"]),
    throughputWarmupCalls: positiveInt("--throughput-warmup-calls", values["throughput-warmup-calls"]),
    isolationCalls: positiveInt("--isolation-calls", values["isolation-calls"]),
    isolationRounds: positiveInt("--isolation-rounds", values["isolation-rounds"]),
    isolationLimit: nonNegativeInt("--isolation-limit", values["isolation-limit"]),
    latencyRate: positiveInt("--latency-rate", values["latency-rate"]),
    latencyBatchSize: positiveInt("--latency-batch-size", values["latency-batch-size"]),
    latencySeconds: positiveInt("--latency-seconds", values["latency-seconds"]),
    latencyWarmupSeconds: positiveInt("--latency-warmup-seconds", values["latency-warmup-seconds"]),
    latencyIsolationRate: positiveInt("--latency-isolation-rate", values["latency-isolation-rate"]),
    latencyIsolationBatchSize: positiveInt("--latency-isolation-batch-size", values["latency-isolation-batch-size"]),
    latencyIsolationSeconds: positiveInt("--latency-isolation-seconds", values["latency-isolation-seconds"]),
    latencyIsolationWarmupSeconds: positiveInt("--latency-isolation-warmup-seconds", values["latency-isolation-warmup-seconds"]),
    latencyIsolationRounds: positiveInt("--latency-isolation-rounds", values["latency-isolation-rounds"]),
    latencyIsolationKinds: hostileKinds(values["latency-isolation-kinds"]),
    latencyIsolationWarmCut: !values["latency-isolation-cold"],
    hostileNice: niceValue(values["hostile-nice"]),
    phaseTimeoutMs: positiveInt("--phase-timeout-s", values["phase-timeout-s"]) * 1000,
    deliveryEnv,
    workers: positiveInt("--workers", values.workers),
    filterCalls: positiveInt("--filter-calls", values["filter-calls"]),
    filterRounds: positiveInt("--filter-rounds", values["filter-rounds"]),
    cpuProfDir: values["cpu-prof-dir"],
  };
}

function nonNegativeInt(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name}: must be a whole number, 0 or more, got ${text}`);
  return value;
}

// ---------------------------------------------------------------- setup

interface Context {
  params: Parameters;
  natsUrl: string;
  namespace: string;
  names: BusNames;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  sink: WebhookSinkChild;
  workspaceFile: string;
  cleanup: Cleanup;
  /** The service's per-destination concurrency (and connections per origin). */
  destinationConcurrency: number;
  /** The run's own nats-server; undefined with NATS_URL. */
  natsPid: number | undefined;
}

const writeKey = (sourceId: string) => `wk_bench_${sourceId}_0123456789`;

/** `--latency-isolation-kinds`: a comma-separated subset of hang, huge, reset and slow. */
function hostileKinds(list: string): HostileKind[] {
  const kinds = list.split(",").map((kind) => kind.trim());
  const unknown = kinds.filter((kind) => !PICKABLE_KINDS.includes(kind as HostileKind));
  if (unknown.length > 0 || kinds.length === 0) {
    throw new Error(
      `--latency-isolation-kinds: must be a comma-separated subset of ${PICKABLE_KINDS.join(", ")}, got ${JSON.stringify(list)}`,
    );
  }
  return kinds as HostileKind[];
}

/** `--hostile-nice`: a nice value, 0 (as every other process) to 19 (the lowest priority). */
function niceValue(text: string): number {
  const value = nonNegativeInt("--hostile-nice", text);
  if (value > 19) throw new Error(`--hostile-nice: 19 is the lowest priority, got ${text}`);
  return value;
}

/**
 * Every source, destination and connection of every phase; each phase has its own source. The hostile
 * receivers of the latency-isolation phase, when it runs, answer from a sink process of their own.
 */
function workspace(
  sink: WebhookSinkChild,
  isolationLimit: number,
  hostileSink?: WebhookSinkChild,
  hostileKinds: readonly HostileKind[] = HOSTILE_KINDS,
  warmCut = true,
) {
  const destination = (id: string, path: string, at = sink) => ({
    id,
    settings: { webhooks: [{ url: at.url(path) }], sharedSecret: SHARED_SECRET },
  });
  const healthy = [0, 1, 2, 3, 4].map((i) => destination(`iso-h-${i}`, PATHS.healthy(i)));
  const withSlow = [0, 1, 2, 3].map((i) => destination(`iso-s-${i}`, PATHS.withSlow(i)));
  const slow = destination("iso-s-slow", PATHS.slow);
  const withLimited = [0, 1, 2, 3].map((i) => destination(`iso-l-${i}`, PATHS.withLimited(i)));
  const limited = { ...destination("iso-l-limited", PATHS.limited), maxRequestsPerSecond: isolationLimit };
  const connections = (sourceId: string, destinations: { id: string }[]) => destinations.map((d) => ({ sourceId, destinationId: d.id }));
  const single = {
    tp: destination("tp", PATHS.throughput),
    warm: destination("warm", PATHS.warm),
    lat: destination("lat", PATHS.latency),
    flPlain: destination("fl-plain", PATHS.filterPlain),
    flOn: destination("fl-on", PATHS.filterOn),
  };
  const li = hostileSink
    ? {
        warm: destination("li-warm", PATHS.liWarm),
        // Answers as the 100 MB receiver does (a body delivery cuts): see the latency-isolation phase's warm-up.
        warmCut: destination("li-warm-cut", PATHS.liWarmCut, hostileSink),
        alone: destination("li-alone", PATHS.liAlone),
        healthy: destination("li-healthy", PATHS.liHealthy),
        hostile: hostileKinds.map((kind) => destination(`li-${kind}`, PATHS.hostile(kind), hostileSink)),
      }
    : undefined;
  return {
    sources: [
      "tp",
      "warm",
      "lat",
      "iso-h",
      "iso-s",
      "iso-l",
      "fl-plain",
      "fl-on",
      ...(li ? ["li-warm", "li-alone", "li-hostile"] : []),
    ].map((id) => ({
      id,
      writeKeys: [writeKey(id)],
    })),
    destinations: [
      single.tp,
      single.warm,
      single.lat,
      single.flPlain,
      single.flOn,
      ...healthy,
      ...withSlow,
      slow,
      ...withLimited,
      limited,
      ...(li ? [li.warm, li.warmCut, li.alone, li.healthy, ...li.hostile] : []),
    ],
    connections: [
      ...(li
        ? [
            ...connections("li-warm", warmCut ? [li.warm, li.warmCut] : [li.warm]),
            ...connections("li-alone", [li.alone]),
            ...connections("li-hostile", [li.healthy, ...li.hostile]),
          ]
        : []),
      ...connections("tp", [single.tp]),
      ...connections("warm", [single.warm]),
      ...connections("lat", [single.lat]),
      ...connections("fl-plain", [single.flPlain]),
      { sourceId: "fl-on", destinationId: single.flOn.id, filter: FILTER },
      ...connections("iso-h", healthy),
      ...connections("iso-s", [...withSlow, slow]),
      ...connections("iso-l", [...withLimited, limited]),
    ],
  };
}

/** The settings every service of a run shares. */
function serviceEnv(ctx: Context): Record<string, string> {
  return { NATS_URL: ctx.natsUrl, SWITCHYARD_NAMESPACE: ctx.namespace, SWITCHYARD_WORKSPACE_FILE: ctx.workspaceFile };
}

/**
 * With `workers` > 1 the destination's connections are shared out among the
 * workers (each worker has its own pool), so the receiver sees as many
 * connections as with one process and as the raw client opens.
 */
async function startDelivery(ctx: Context, phase: string, workers = 1): Promise<ServiceChild> {
  const { params } = ctx;
  const grpcPort = await freePort();
  const perWorker: Record<string, string> =
    workers > 1
      ? {
          SWITCHYARD_WORKERS: String(workers),
          DELIVERY_DESTINATION_CONCURRENCY: String(Math.ceil(ctx.destinationConcurrency / workers)),
          // So waitUntilReady can count the workers' "delivery ready" lines; nothing is logged per request at info.
          LOG_LEVEL: "info",
        }
      : {};
  const delivery = ServiceChild.start({
    service: "delivery",
    cwd: REPO_ROOT,
    grpcPort,
    // The bench's receivers listen on loopback, which delivery refuses unless allowed (SSRF protection).
    env: {
      ...serviceEnv(ctx),
      DELIVERY_GRPC_PORT: String(grpcPort),
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
      ...params.deliveryEnv,
      ...perWorker,
    },
    nodeFlags: params.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${join(params.cpuProfDir, `delivery-${phase}`)}`] : [],
  });
  ctx.cleanup.add(`stop delivery (${phase})`, () => delivery.stop());
  await delivery.waitUntilReady({ workers });
  return delivery;
}

// ---------------------------------------------------------------- bus

/** CallBatch messages ready to publish for one source. */
interface EncodedBatches {
  sourceId: string;
  batches: { batchId: string; data: Uint8Array }[];
}

/** `count` realistic calls for a source as ingest would store them: CallBatch messages of up to 100 calls. */
function encodeCalls(sourceId: string, count: number, random: () => number): EncodedBatches {
  const now = new Date();
  const batches: EncodedBatches["batches"] = [];
  for (let first = 0; first < count; first += BATCH_SIZE) {
    const calls = Array.from({ length: Math.min(BATCH_SIZE, count - first) }, (): Call => ({ ...sampleCall(random), receivedAt: now }));
    const batchId = randomUUID();
    batches.push({ batchId, data: CallBatch.encode({ batchId, sourceId, receivedAt: now, calls }).finish() });
  }
  return { sourceId, batches };
}

/** Publishes encoded batches as ingest would: a message id and the type header on each. */
async function publishBatches(ctx: Context, { sourceId, batches }: EncodedBatches): Promise<void> {
  await runLanes(16, batches.length, async (index) => {
    const batch = batches[index]!;
    // Headers per message: publish adds the message id to them.
    const header = busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch);
    await ctx.js.publish(ctx.names.callsSubject(sourceId), batch.data, { headers: header, msgID: `${sourceId}:${batch.batchId}` });
  });
}

async function publishCalls(ctx: Context, sourceId: string, count: number, random: () => number): Promise<void> {
  await publishBatches(ctx, encodeCalls(sourceId, count, random));
}

/** Waits until each path has at least its expected count; false when the phase's time ran out first. */
async function waitForCounts(ctx: Context, expected: Record<string, number>, delivery?: ServiceChild): Promise<boolean> {
  const deadline = Date.now() + ctx.params.phaseTimeoutMs;
  for (;;) {
    const { paths } = await ctx.sink.stats();
    if (Object.entries(expected).every(([path, count]) => (paths[path]?.count ?? 0) >= count)) return true;
    if (delivery?.exited) throw new Error(`delivery exited:\n${delivery.recentOutput}`);
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until the hostile receivers' process has had `count` requests at `path` (within the phase's time-out). */
async function waitForHostileCount(ctx: Context, hostileSink: WebhookSinkChild, path: string, count: number): Promise<void> {
  const deadline = Date.now() + ctx.params.phaseTimeoutMs;
  while (((await hostileSink.stats()).paths[path]?.count ?? 0) < count) {
    if (Date.now() > deadline) throw new Error(`${path}: fewer than ${count} requests within the phase's time-out`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Rate over the arrivals from index `from` to `to` (inclusive), sorted. */
function arrivalRate(sorted: number[], from: number, to: number): Rate {
  const last = Math.min(to, sorted.length - 1);
  const count = last - from;
  const seconds = (sorted[last]! - sorted[from]!) / 1000;
  return { count, seconds, perSecond: count > 0 && seconds > 0 ? count / seconds : 0 };
}

/** Retry-stream counters that only grow: tasks ever stored, and tasks ever handed to the retry consumer (each nak → one more). */
async function retryCounters(ctx: Context): Promise<{ published: number; deliveries: number }> {
  try {
    const retry = await ctx.jsm.streams.info(ctx.names.retryStream);
    const consumer = await ctx.jsm.consumers.info(ctx.names.retryStream, RETRY_CONSUMER);
    return { published: retry.state.last_seq, deliveries: consumer.delivered.consumer_seq };
  } catch {
    return { published: 0, deliveries: 0 }; // not created yet: the service makes them on its first start
  }
}

/** What the bus holds after a run; the retry counters count since `since` (taken before the run). */
async function busState(ctx: Context, since: { published: number; deliveries: number }) {
  const consumer = await ctx.jsm.consumers.info(ctx.names.callsStream, CALLS_CONSUMER);
  const retry = await ctx.jsm.streams.info(ctx.names.retryStream);
  const dead = await ctx.jsm.streams.info(ctx.names.deadStream);
  const counters = await retryCounters(ctx);
  return {
    callsPending: consumer.num_pending,
    callsAckPending: consumer.num_ack_pending,
    callsRedelivered: consumer.num_redelivered,
    retryTasks: retry.state.messages,
    retryTasksPublished: counters.published - since.published,
    retryDeliveries: counters.deliveries - since.deliveries,
    deadLetters: dead.state.messages,
  };
}

// ---------------------------------------------------------------- 1. throughput

/** CPU time per request (µs) of the sending process and of the receiver, where /proc tells. */
interface CpuCost {
  senderMicrosPerRequest: number | undefined;
  receiverMicrosPerRequest: number | undefined;
}

function perRequest(fromMs: number | undefined, toMs: number | undefined, requests: number): number | undefined {
  return fromMs === undefined || toMs === undefined ? undefined : Math.round(((toMs - fromMs) * 1000) / requests);
}

interface ThroughputRound {
  delivered: Rate;
  deliveryCpu: CpuCost;
  raw: Rate;
  rawCpu: CpuCost;
  ratio: number;
}

interface ThroughputResult {
  /** Delivery's worker processes. */
  workers: number;
  /** All rounds together: their requests over the sum of their windows. */
  delivered: Rate;
  raw: Rate;
  ratio: number;
  rounds: ThroughputRound[];
  complete: boolean;
  meanBodyBytes: number;
  bus: Awaited<ReturnType<typeof busState>>;
}

/** Requests over seconds, summed over rounds. */
function combined(rates: Rate[]): Rate {
  const count = rates.reduce((sum, rate) => sum + rate.count, 0);
  const seconds = rates.reduce((sum, rate) => sum + rate.seconds, 0);
  return { count, seconds, perSecond: seconds > 0 ? count / seconds : 0 };
}

/**
 * The service and the raw client take turns, round by round, so both see
 * about the same machine: on a shared one, load from elsewhere comes and goes.
 * Each service round is a backlog, encoded beforehand, published while the
 * service is idle (it starts on it as the first batch lands); each raw round
 * the same number of POSTs. Warm-ups (JIT, connections) come first and are
 * not measured.
 */
async function throughputPhase(ctx: Context, workers: number): Promise<ThroughputResult> {
  const { params, sink } = ctx;
  const perRound = Math.ceil(params.calls / params.rounds);
  const random = seededRandom(11);
  console.log(
    `throughput (${workers} worker${workers === 1 ? "" : "s"}): ${params.throughputWarmupCalls} warm-up calls, then ${params.rounds} rounds of ${perRound} webhooks and ${perRound} raw POSTs …`,
  );
  // What an earlier run left at the receiver: this run's requests come after it.
  const earlier = await sink.arrivals([PATHS.throughput, PATHS.raw]);
  const serviceBase = earlier[PATHS.throughput]!.length;
  const rawBase = earlier[PATHS.raw]!.length;
  const since = await retryCounters(ctx);
  await publishCalls(ctx, "tp", params.throughputWarmupCalls, random);
  const delivery = await startDelivery(ctx, `throughput-${workers}`, workers);
  let complete = await waitForCounts(ctx, { [PATHS.throughput]: serviceBase + params.throughputWarmupCalls }, delivery);
  const raw = rawClient(ctx);
  try {
    await raw.send(params.throughputWarmupCalls);
    const rounds: ThroughputRound[] = [];
    for (let round = 0; round < params.rounds && complete; round++) {
      const first = params.throughputWarmupCalls + round * perRound;
      // Encoded before the round: in it, this process would take CPU time from the service and the receiver.
      const backlog = encodeCalls("tp", perRound, random);
      // With workers, the service's CPU is its workers' (the primary only supervises).
      const serviceBefore = await processTreeCpuMs(delivery.pid);
      const sinkBefore = await processCpuMs(sink.pid);
      await publishBatches(ctx, backlog);
      complete = await waitForCounts(ctx, { [PATHS.throughput]: serviceBase + first + perRound }, delivery);
      const serviceAfter = await processTreeCpuMs(delivery.pid);
      const sinkAfter = await processCpuMs(sink.pid);
      const arrivals = (await sink.arrivals([PATHS.throughput]))[PATHS.throughput]!.sort((a, b) => a - b);
      const delivered = arrivalRate(arrivals, serviceBase + first, serviceBase + first + perRound - 1);

      const rawRound = await raw.measure(perRound, rawBase + first);
      rounds.push({
        delivered,
        deliveryCpu: {
          senderMicrosPerRequest: perRequest(serviceBefore, serviceAfter, perRound),
          receiverMicrosPerRequest: perRequest(sinkBefore, sinkAfter, perRound),
        },
        raw: rawRound.rate,
        rawCpu: rawRound.cpu,
        ratio: delivered.perSecond / rawRound.rate.perSecond,
      });
    }
    await delivery.stop();
    const delivered = combined(rounds.map((round) => round.delivered));
    const rawRate = combined(rounds.map((round) => round.raw));
    return {
      workers,
      delivered,
      raw: rawRate,
      ratio: rawRate.perSecond > 0 ? delivered.perSecond / rawRate.perSecond : 0,
      rounds,
      complete,
      meanBodyBytes: raw.meanBodyBytes,
      bus: await busState(ctx, since),
    };
  } finally {
    await raw.close();
  }
}

/** Webhook bodies as the service sends them, and the headers it adds, for the same kind of calls. */
function sampleRequests(count: number): { bodies: Buffer[]; headers: Record<string, string>[]; meanBodyBytes: number } {
  const random = seededRandom(12);
  const now = new Date();
  const bodies = Array.from({ length: count }, () => Buffer.from(JSON.stringify(webhookBody({ ...sampleCall(random), receivedAt: now }))));
  const headers = bodies.map((body) => ({
    "user-agent": "Switchyard/1.0",
    "content-type": "application/json",
    "x-signature": webhookSignature(body, SHARED_SECRET),
  }));
  return { bodies, headers, meanBodyBytes: bodies.reduce((sum, body) => sum + body.length, 0) / count };
}

/**
 * The raw baseline: plain undici request() POSTs from this process, with an
 * Agent of as many connections as the service uses per destination, as many
 * in flight, and bodies like the service's.
 */
function rawClient(ctx: Context) {
  const { sink, destinationConcurrency } = ctx;
  const { bodies, headers, meanBodyBytes } = sampleRequests(1000);
  const agent = new Agent({ connections: destinationConcurrency, keepAliveTimeout: 10_000 });
  const url = sink.url(PATHS.raw);
  let sent = 0;
  const post = async () => {
    const index = sent++;
    const response = await request(url, {
      method: "POST",
      headers: headers[index % headers.length]!,
      body: bodies[index % bodies.length]!,
      dispatcher: agent,
    });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`raw POST answered ${response.statusCode}`);
  };
  const send = (count: number) => runLanes(destinationConcurrency, count, post);
  return {
    meanBodyBytes,
    send,
    /** Sends `count` POSTs; `first` is how many the receiver had on the raw path before. */
    measure: async (count: number, first: number): Promise<{ rate: Rate; cpu: CpuCost }> => {
      const sinkBefore = await processCpuMs(sink.pid);
      const ownBefore = process.cpuUsage();
      await send(count);
      const own = process.cpuUsage(ownBefore);
      const sinkAfter = await processCpuMs(sink.pid);
      const arrivals = (await sink.arrivals([PATHS.raw]))[PATHS.raw]!.sort((a, b) => a - b);
      return {
        rate: arrivalRate(arrivals, first, first + count - 1),
        cpu: {
          senderMicrosPerRequest: Math.round((own.user + own.system) / count),
          receiverMicrosPerRequest: perRequest(sinkBefore, sinkAfter, count),
        },
      };
    },
    close: () => agent.close(),
  };
}

// ---------------------------------------------------------------- 2. isolation

interface IsolationRun {
  /** The four destinations that stay healthy in both runs: their aggregate. */
  fourHealthy: Rate;
  fourHealthyPerSecondTimeline: number[];
  complete: boolean;
  fifthDestinationRequests: number;
  /** The fifth destination's requests per whole second (the first and last, partial, left out). */
  fifthPerWholeSecond: number[];
  bus: Awaited<ReturnType<typeof busState>>;
}

type IsolationLabel = "healthy" | "withSlow" | "withLimited";

const ISOLATION_RUNS: Record<IsolationLabel, { sourceId: string; four: (i: number) => string; fifth: string }> = {
  healthy: { sourceId: "iso-h", four: PATHS.healthy, fifth: PATHS.healthy(4) },
  withSlow: { sourceId: "iso-s", four: PATHS.withSlow, fifth: PATHS.slow },
  withLimited: { sourceId: "iso-l", four: PATHS.withLimited, fifth: PATHS.limited },
};

/** Requests per whole second, without the first and last (partial) seconds. */
function perWholeSecond(times: number[]): number[] {
  if (times.length === 0) return [];
  const counts = new Map<number, number>();
  for (const time of times) counts.set(Math.floor(time / 1000), (counts.get(Math.floor(time / 1000)) ?? 0) + 1);
  const first = Math.min(...counts.keys());
  const last = Math.max(...counts.keys());
  const whole: number[] = [];
  for (let second = first + 1; second < last; second++) whole.push(counts.get(second) ?? 0);
  return whole;
}

async function isolationRun(ctx: Context, label: IsolationLabel): Promise<IsolationRun> {
  const { params, sink } = ctx;
  const { sourceId, fifth } = ISOLATION_RUNS[label];
  const four = [0, 1, 2, 3].map(ISOLATION_RUNS[label].four);
  await sink.reset();
  console.log(
    `isolation (${label}): publishing ${params.warmupCalls} warm-up calls and ${params.isolationCalls} calls for 5 destinations …`,
  );
  await publishCalls(ctx, "warm", params.warmupCalls, seededRandom(21));
  await publishCalls(ctx, sourceId, params.isolationCalls, seededRandom(22));
  const since = await retryCounters(ctx);
  const delivery = await startDelivery(ctx, `isolation-${label}`);
  const expected = Object.fromEntries(four.map((path) => [path, params.isolationCalls]));
  const complete = await waitForCounts(ctx, expected, delivery);
  const stats = await sink.stats();
  await delivery.stop();
  const bus = await busState(ctx, since);

  const arrivals = await sink.arrivals([...four, fifth]);
  const start = Math.min(...Object.values(arrivals).map((times) => times[0] ?? Infinity));
  const merged = four.flatMap((path) => arrivals[path]!).sort((a, b) => a - b);
  const last = Math.min(merged.length, four.length * params.isolationCalls) - 1;
  const seconds = (merged[last]! - start) / 1000;
  // Requests per second of the four, from the run's first request: shows a stall, if any.
  const timeline: number[] = [];
  for (const time of merged.slice(0, last + 1)) {
    const second = Math.floor((time - start) / 1000);
    while (timeline.length <= second) timeline.push(0);
    timeline[second]!++;
  }
  return {
    fourHealthy: { count: last + 1, seconds, perSecond: (last + 1) / seconds },
    fourHealthyPerSecondTimeline: timeline,
    complete,
    fifthDestinationRequests: stats.paths[fifth]?.count ?? 0,
    fifthPerWholeSecond: perWholeSecond(arrivals[fifth]!.filter((time) => time <= merged[last]!)),
    bus,
  };
}

/**
 * Healthy and failing runs take turns (healthy, failing, healthy, …) so both
 * see about the same machine; each run has a fresh service process. After a
 * failing run its leftover retries are purged, so no run inherits another's.
 */
async function isolationPhase(ctx: Context) {
  await ctx.sink.hold(PATHS.slow, HOLD_MS);
  const healthy: IsolationRun[] = [];
  const withSlow: IsolationRun[] = [];
  const withLimited: IsolationRun[] = [];
  for (let round = 0; round < ctx.params.isolationRounds; round++) {
    healthy.push(await isolationRun(ctx, "healthy"));
    withSlow.push(await isolationRun(ctx, "withSlow"));
    await ctx.jsm.streams.purge(ctx.names.retryStream);
    if (ctx.params.isolationLimit > 0) {
      withLimited.push(await isolationRun(ctx, "withLimited"));
      // Its backlog, and the send schedule that placed it, go: the next run starts afresh.
      await ctx.jsm.streams.purge(ctx.names.retryStream);
      await ctx.jsm.streams.purge(`KV_${ctx.names.rateLimitBucket}`);
    }
  }
  const healthyRate = combined(healthy.map((run) => run.fourHealthy));
  const withSlowRate = combined(withSlow.map((run) => run.fourHealthy));
  const withLimitedRate = withLimited.length > 0 ? combined(withLimited.map((run) => run.fourHealthy)) : undefined;
  return {
    healthy: healthyRate,
    withSlow: withSlowRate,
    ratio: healthyRate.perSecond > 0 ? withSlowRate.perSecond / healthyRate.perSecond : 0,
    withLimited: withLimitedRate,
    limitedRatio: withLimitedRate && healthyRate.perSecond > 0 ? withLimitedRate.perSecond / healthyRate.perSecond : undefined,
    /** The rate-limited destination's busiest whole second over its runs. */
    limitedBusiestSecond: Math.max(0, ...withLimited.flatMap((run) => run.fifthPerWholeSecond)),
    runs: { healthy, withSlow, withLimited },
  };
}

// ---------------------------------------------------------------- 3. latency

/** An ingest service in its own process and a gRPC client to it, both closed at clean-up. */
async function startIngest(ctx: Context): Promise<{ ingest: ServiceChild; client: IngestServiceClient }> {
  const grpcPort = await freePort();
  const ingest = ServiceChild.start({
    service: "ingest",
    cwd: REPO_ROOT,
    grpcPort,
    env: { ...serviceEnv(ctx), INGEST_GRPC_PORT: String(grpcPort), INGEST_HTTP_PORT: String(await freePort()) },
  });
  ctx.cleanup.add("stop ingest", () => ingest.stop());
  await ingest.waitUntilReady();
  const client = new IngestServiceClient(`127.0.0.1:${ingest.grpcPort}`, credentials.createInsecure());
  ctx.cleanup.add("close the gRPC client", async () => client.close());
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 10_000, (error) => (error ? reject(error) : resolve())));
  return { ingest, client };
}

interface SteadyLoad {
  /** Calls per second, in batches of `batchSize`. */
  rate: number;
  batchSize: number;
  /** Batches sent before measuring starts, on `warmupSourceId`. */
  warmupBatches: number;
  warmupSourceId: string;
  /** Batches measured, on `sourceId`. */
  measuredBatches: number;
  sourceId: string;
  seed: number;
  /**
   * Called once every warm-up batch is answered (with how many failed); the measured batches
   * start when it resolves. Unset: they follow the warm-up on the same schedule.
   */
  beforeMeasuring?: (warmupFailures: number) => Promise<void>;
}

interface SteadyLoadResult {
  /** Date.now() when the first measured batch was sent: calls stamped from then on are measured. */
  measureFrom: number;
  /** Batches that ingest refused or did not answer. */
  failures: number;
  /** Ingest's answer times of the measured batches (ms), sorted. */
  answerMs: number[];
  sendSeconds: number;
  /** Seconds from the first measured batch to the last one sent. */
  measuredSendSeconds: number;
  maxLateMs: number;
}

/**
 * Sends batches through ingest (gRPC IngestBatch) at a steady rate,
 * warm-up batches first, and waits for every answer. The calls carry no
 * timestamp: ingest sets it to its accept time, which latency is measured from.
 */
async function sendSteadily(client: IngestServiceClient, load: SteadyLoad): Promise<SteadyLoadResult> {
  const intervalMs = (1000 * load.batchSize) / load.rate;
  const totalBatches = load.warmupBatches + load.measuredBatches;
  const random = seededRandom(load.seed);
  const requests = Array.from({ length: totalBatches }, () =>
    Buffer.from(
      IngestBatchRequest.encode({
        batchId: randomUUID(),
        calls: Array.from({ length: load.batchSize }, () => ({ ...sampleCall(random), timestamp: undefined })),
      }).finish(),
    ),
  );
  const metadataOf = (sourceId: string) => {
    const metadata = new Metadata();
    metadata.set("authorization", basicAuthorization(writeKey(sourceId)));
    return metadata;
  };
  const warmupMetadata = metadataOf(load.warmupSourceId);
  const measuredMetadata = metadataOf(load.sourceId);

  const answerMs: number[] = [];
  let failures = 0;
  let firstFailure: unknown;
  const inFlight = new Set<Promise<void>>();
  const send = (index: number) => {
    const sentAt = performance.now();
    const metadata = index < load.warmupBatches ? warmupMetadata : measuredMetadata;
    const done = new Promise<IngestBatchResponse>((resolve, reject) =>
      client.makeUnaryRequest(
        IngestServiceService.ingestBatch.path,
        (encoded: Buffer) => encoded,
        IngestServiceService.ingestBatch.responseDeserialize,
        requests[index]!,
        metadata.clone(),
        { deadline: Date.now() + 10_000 },
        (error, response) => (error || !response ? reject(error ?? new Error("no response")) : resolve(response)),
      ),
    ).then(
      (response) => {
        if (response.accepted !== load.batchSize) throw new Error(`accepted ${response.accepted} of ${load.batchSize}`);
        if (index >= load.warmupBatches) answerMs.push(performance.now() - sentAt);
      },
      (error: unknown) => {
        failures++;
        firstFailure ??= error;
      },
    );
    const task = done.finally(() => inFlight.delete(task));
    inFlight.add(task);
  };

  // Paced on a fixed schedule: batch k is due at start + (k - first) × interval, so timer lateness never accumulates.
  let measureFrom = Infinity;
  let measuredStart = Number.NaN;
  let maxLateMs = 0;
  const sendRange = (first: number, end: number) =>
    new Promise<void>((resolve) => {
      const start = performance.now();
      let next = first;
      const tick = () => {
        const now = performance.now();
        while (next < end && start + (next - first) * intervalMs <= now) {
          maxLateMs = Math.max(maxLateMs, now - (start + (next - first) * intervalMs));
          if (next === load.warmupBatches) {
            measureFrom = Date.now();
            measuredStart = performance.now();
          }
          send(next++);
        }
        if (next >= end) resolve();
        else setTimeout(tick, Math.max(0, start + (next - first) * intervalMs - performance.now()));
      };
      tick();
    });
  const started = performance.now();
  if (load.beforeMeasuring) {
    await sendRange(0, load.warmupBatches);
    await Promise.all(inFlight);
    await load.beforeMeasuring(failures);
    await sendRange(load.warmupBatches, totalBatches);
  } else {
    await sendRange(0, totalBatches);
  }
  const sendSeconds = (performance.now() - started) / 1000;
  const measuredSendSeconds = (performance.now() - measuredStart) / 1000;
  await Promise.all(inFlight);
  if (failures > 0) console.error(`${failures} ingest batches failed; first:`, firstFailure);
  return { measureFrom, failures, answerMs: answerMs.sort((a, b) => a - b), sendSeconds, measuredSendSeconds, maxLateMs };
}

async function latencyPhase(ctx: Context) {
  const { params, sink } = ctx;
  const { ingest, client } = await startIngest(ctx);
  const delivery = await startDelivery(ctx, "latency");
  await sink.recordLatency(PATHS.latency);

  const intervalMs = (1000 * params.latencyBatchSize) / params.latencyRate;
  const warmupBatches = Math.round((params.latencyWarmupSeconds * 1000) / intervalMs);
  const totalBatches = warmupBatches + Math.round((params.latencySeconds * 1000) / intervalMs);
  console.log(
    `latency: ${params.latencyRate} calls/s through ingest (${params.latencyBatchSize} per batch every ${intervalMs} ms), ` +
      `${params.latencyWarmupSeconds} s warm-up + ${params.latencySeconds} s measured …`,
  );
  const sent = await sendSteadily(client, {
    rate: params.latencyRate,
    batchSize: params.latencyBatchSize,
    warmupBatches,
    warmupSourceId: "lat",
    measuredBatches: totalBatches - warmupBatches,
    sourceId: "lat",
    seed: 31,
  });
  const expectedCalls = (totalBatches - sent.failures) * params.latencyBatchSize;
  const complete = await waitForCounts(ctx, { [PATHS.latency]: expectedCalls }, delivery);
  const { samples, before } = await sink.latencies(PATHS.latency, sent.measureFrom, Infinity);
  const { badBodies } = await sink.stats();
  await delivery.stop();
  await ingest.stop();

  const sorted = samples.sort((a, b) => a - b);
  const answers = sent.answerMs;
  return {
    samples: sorted.length,
    warmupSamples: before,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? Number.NaN,
    meanMs: sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length),
    ingestAnswerP50Ms: round(percentile(answers, 50), 2),
    ingestAnswerP99Ms: round(percentile(answers, 99), 2),
    sentCallsPerSecond: round((totalBatches * params.latencyBatchSize) / sent.sendSeconds, 1),
    maxTimerLateMs: round(sent.maxLateMs, 2),
    failedBatches: sent.failures,
    unreadableBodies: badBodies,
    complete,
  };
}

// ---------------------------------------------------------------- 4. latency isolation

interface LatencySummary {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

function summarise(values: number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  return { samples: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted.at(-1) ?? Number.NaN };
}

interface LatencyIsolationRun {
  label: "alone" | "hostile";
  /** The healthy destination's latencies over the measured seconds. */
  latency: LatencySummary;
  /** The same, second by second from the start of the measured load (by the calls' timestamps). */
  perSecond: LatencySummary[];
  complete: boolean;
  failedBatches: number;
  /** CPU used while the load was sent, in cores: delivery, the healthy receivers' sink, the hostile receivers' sink, nats-server. */
  cpuCores: { delivery: number | undefined; sink: number | undefined; hostileSink: number | undefined; natsServer: number | undefined };
  /** Requests each hostile receiver got (hostile runs). */
  hostileRequests: Record<string, number>;
  bus: Awaited<ReturnType<typeof busState>>;
  /** Every sample, and those of the first FIRST_SECONDS, for the rounds' combined figures (not written out). */
  samples: number[];
  firstSamples: number[];
}

/**
 * One run of the latency-isolation phase: a fresh delivery process, a short
 * warm-up on a source of its own (so the hostile receivers' first requests
 * come with the measured load, not before it), then the steady load on the
 * measured source: the healthy destination alone, or the healthy destination
 * and the three hostile ones.
 */
async function latencyIsolationRun(
  ctx: Context,
  client: IngestServiceClient,
  hostileSink: WebhookSinkChild,
  label: "alone" | "hostile",
  seed: number,
): Promise<LatencyIsolationRun> {
  const { params, sink } = ctx;
  const measured = label === "alone" ? PATHS.liAlone : PATHS.liHealthy;
  await sink.reset();
  await hostileSink.reset();
  const intervalMs = (1000 * params.latencyIsolationBatchSize) / params.latencyIsolationRate;
  const warmupBatches = Math.round((params.latencyIsolationWarmupSeconds * 1000) / intervalMs);
  const measuredBatches = Math.round((params.latencyIsolationSeconds * 1000) / intervalMs);
  console.log(
    `latency isolation (${label === "alone" ? "healthy alone" : `healthy + ${params.latencyIsolationKinds.join(", ")}`}): ` +
      `${params.latencyIsolationRate} calls/s in batches of ${params.latencyIsolationBatchSize}, ${params.latencyIsolationWarmupSeconds} s warm-up${params.latencyIsolationWarmCut ? " (with cut answers)" : ""} + ${params.latencyIsolationSeconds} s measured …`,
  );
  const since = await retryCounters(ctx);
  const delivery = await startDelivery(ctx, `latency-isolation-${label}`);
  const cpuOf = () =>
    Promise.all([processTreeCpuMs(delivery.pid), processCpuMs(sink.pid), processCpuMs(hostileSink.pid), processCpuMs(ctx.natsPid)]);
  let cpuBefore: (number | undefined)[] = [];
  const sent = await sendSteadily(client, {
    rate: params.latencyIsolationRate,
    batchSize: params.latencyIsolationBatchSize,
    warmupBatches,
    warmupSourceId: "li-warm",
    measuredBatches,
    sourceId: label === "alone" ? "li-alone" : "li-hostile",
    seed,
    // The measured load starts once delivery has delivered the warm-up: each of the warm-up's cut
    // answers costs it a new connection, and a first round (every process cold) could still be
    // working through that backlog when the measured calls came, which queued behind it for up
    // to a second (seen as a first alone second whose latencies fall steadily from its first call).
    beforeMeasuring: async (warmupFailures) => {
      const warmCalls = (warmupBatches - warmupFailures) * params.latencyIsolationBatchSize;
      await waitForCounts(ctx, { [PATHS.liWarm]: warmCalls }, delivery);
      if (params.latencyIsolationWarmCut) await waitForHostileCount(ctx, hostileSink, PATHS.liWarmCut, warmCalls);
      cpuBefore = await cpuOf();
    },
  });
  const cpuAfter = await cpuOf();
  const complete = await waitForCounts(ctx, { [measured]: (measuredBatches - sent.failures) * params.latencyIsolationBatchSize }, delivery);
  const { samples } = await sink.latencies(measured, sent.measureFrom, Infinity);
  const perSecond: LatencySummary[] = [];
  for (let second = 0; second < params.latencyIsolationSeconds; second++) {
    const from = sent.measureFrom + second * 1000;
    perSecond.push(summarise((await sink.latencies(measured, from, from + 1000)).samples));
  }
  const firstSamples = (await sink.latencies(measured, sent.measureFrom, sent.measureFrom + FIRST_SECONDS * 1000)).samples;
  const hostilePaths = await hostileSink.stats();
  await delivery.stop();
  const bus = await busState(ctx, since);
  // Deferred calls of the hostile destinations would otherwise burden the next run.
  await ctx.jsm.streams.purge(ctx.names.retryStream);
  // Share of one core each process used while the load was sent: a hostile receiver on this machine competes for it.
  const coreShare = (index: number) => {
    const before = cpuBefore[index];
    const after = cpuAfter[index];
    return before === undefined || after === undefined ? undefined : round((after - before) / 1000 / sent.measuredSendSeconds, 2);
  };
  return {
    label,
    latency: summarise(samples),
    cpuCores: { delivery: coreShare(0), sink: coreShare(1), hostileSink: coreShare(2), natsServer: coreShare(3) },
    perSecond,
    complete,
    failedBatches: sent.failures,
    hostileRequests: Object.fromEntries(
      ctx.params.latencyIsolationKinds.map((kind) => [kind, hostilePaths.paths[PATHS.hostile(kind)]?.count ?? 0]),
    ),
    bus,
    samples,
    firstSamples,
  };
}

/**
 * Runs alone and with the hostile three take turns (alone, hostile, alone, …),
 * each with a fresh delivery process; ingest is shared. The ratio is the
 * healthy destination's p99 with the hostile three over its p99 alone, all
 * rounds' samples together.
 */
async function latencyIsolationPhase(ctx: Context, hostileSink: WebhookSinkChild) {
  const { sink } = ctx;
  for (const kind of ctx.params.latencyIsolationKinds) {
    if (kind === "slow") await hostileSink.hold(PATHS.hostile(kind), SLOW_MS);
    else await hostileSink.hostile(PATHS.hostile(kind), kind);
  }
  await hostileSink.hostile(PATHS.liWarmCut, "huge");
  await sink.recordLatency(PATHS.liAlone);
  await sink.recordLatency(PATHS.liHealthy);
  const { ingest, client } = await startIngest(ctx);
  const runs: LatencyIsolationRun[] = [];
  for (let round = 0; round < ctx.params.latencyIsolationRounds; round++) {
    runs.push(await latencyIsolationRun(ctx, client, hostileSink, "alone", 41 + round));
    runs.push(await latencyIsolationRun(ctx, client, hostileSink, "hostile", 51 + round));
  }
  await ingest.stop();
  const of = (label: LatencyIsolationRun["label"]) => runs.filter((run) => run.label === label);
  const alone = summarise(of("alone").flatMap((run) => run.samples));
  const hostile = summarise(of("hostile").flatMap((run) => run.samples));
  // The onset: before any breaker could open (the first trips after the 5 s request timeout).
  const hostileFirstSeconds = summarise(of("hostile").flatMap((run) => run.firstSamples));
  // Each round's ratio on its own: one disturbed round (an alone one, say) moves the pooled ratio, and shows here.
  const roundRatios = of("hostile").map((run, index) => round(run.latency.p99Ms / Math.max(of("alone")[index]!.latency.p99Ms, 1), 2));
  return {
    alone,
    hostile,
    hostileFirstSeconds,
    roundRatios,
    p99Ratio: alone.p99Ms > 0 ? hostile.p99Ms / alone.p99Ms : Number.POSITIVE_INFINITY,
    firstSecondsP99Ratio: alone.p99Ms > 0 ? hostileFirstSeconds.p99Ms / alone.p99Ms : Number.POSITIVE_INFINITY,
    runs: runs.map(({ samples: _samples, firstSamples: _first, ...run }) => run),
  };
}

// ---------------------------------------------------------------- 5. filters

interface FilterRound {
  label: "plain" | "filtered";
  delivered: Rate;
  /** The delivery process's CPU per webhook (µs). */
  cpuMicrosPerRequest: number | undefined;
  /** Calls sent to the retry path during the round (a stalled receiver's, say): a slow round's usual cause. */
  retryTasksPublished: number;
}

/**
 * One delivery process; the same load to the unfiltered and the filtered destination in turn
 * (plain, filtered, filtered, plain, …), each a backlog encoded beforehand and published while
 * the service is idle, as in the throughput phase. Both are warmed up first, the filter compiled
 * and its code optimised. The ratio is of all rounds' rates together; the CPU per webhook, which
 * a busy machine disturbs less, is printed beside it.
 */
async function filtersPhase(ctx: Context) {
  const { params, sink } = ctx;
  const perRound = params.filterCalls;
  const random = seededRandom(61);
  console.log(
    `filters: ${params.throughputWarmupCalls} warm-up calls, then ${params.filterRounds} rounds of ${perRound} webhooks ` +
      `to a destination without a filter and ${perRound} to one with a filter every call matches …`,
  );
  const paths = { plain: PATHS.filterPlain, filtered: PATHS.filterOn };
  const sources = { plain: "fl-plain", filtered: "fl-on" };
  const earlier = await sink.arrivals([paths.plain, paths.filtered]);
  const counts = { plain: earlier[paths.plain]!.length, filtered: earlier[paths.filtered]!.length };
  const warmup = Math.ceil(params.throughputWarmupCalls / 2);
  await publishCalls(ctx, sources.plain, warmup, random);
  await publishCalls(ctx, sources.filtered, warmup, random);
  const delivery = await startDelivery(ctx, "filters");
  counts.plain += warmup;
  counts.filtered += warmup;
  let complete = await waitForCounts(ctx, { [paths.plain]: counts.plain, [paths.filtered]: counts.filtered }, delivery);
  const rounds: FilterRound[] = [];
  for (let round = 0; round < params.filterRounds && complete; round++) {
    // Plain first in even rounds, filtered first in odd ones: a machine speeding up or slowing down
    // during the phase favours neither.
    for (const label of round % 2 === 0 ? (["plain", "filtered"] as const) : (["filtered", "plain"] as const)) {
      const backlog = encodeCalls(sources[label], perRound, random);
      const retriesBefore = await retryCounters(ctx);
      const cpuBefore = await processTreeCpuMs(delivery.pid);
      await publishBatches(ctx, backlog);
      complete = await waitForCounts(ctx, { [paths[label]]: counts[label] + perRound }, delivery);
      const cpuAfter = await processTreeCpuMs(delivery.pid);
      const retriesAfter = await retryCounters(ctx);
      const arrivals = (await sink.arrivals([paths[label]]))[paths[label]]!.sort((a, b) => a - b);
      rounds.push({
        label,
        delivered: arrivalRate(arrivals, counts[label], counts[label] + perRound - 1),
        cpuMicrosPerRequest: perRequest(cpuBefore, cpuAfter, perRound),
        retryTasksPublished: retriesAfter.published - retriesBefore.published,
      });
      counts[label] += perRound;
      if (!complete) break;
    }
  }
  await delivery.stop();
  const of = (label: FilterRound["label"]) => rounds.filter((round) => round.label === label);
  const plain = combined(of("plain").map((round) => round.delivered));
  const filtered = combined(of("filtered").map((round) => round.delivered));
  const meanCpu = (list: FilterRound[]) => {
    const known = list.map((round) => round.cpuMicrosPerRequest).filter((value): value is number => value !== undefined);
    return known.length > 0 ? Math.round(known.reduce((sum, value) => sum + value, 0) / known.length) : undefined;
  };
  return {
    plain,
    filtered,
    ratio: plain.perSecond > 0 ? filtered.perSecond / plain.perSecond : 0,
    cpuMicrosPerRequest: { plain: meanCpu(of("plain")), filtered: meanCpu(of("filtered")) },
    rounds,
    complete,
  };
}

// ---------------------------------------------------------------- report

const round = (value: number, digits = 0) => Number(value.toFixed(digits));
const format = (n: number) => Math.round(n).toLocaleString("en-US");
const verdict = (pass: boolean) => (pass ? "PASS" : "MISS");
const rateJson = (rate: Rate) => ({ count: rate.count, seconds: round(rate.seconds, 3), perSecond: Math.round(rate.perSecond) });

// ---------------------------------------------------------------- main

async function main(cleanup: Cleanup): Promise<void> {
  const params = parseParameters(process.argv.slice(2));
  const date = new Date();
  // The machine may be shared: a busy one at the start or end explains odd figures.
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, names, nc, jsm } = await openBenchBus(cleanup);
  // As the services create it (their defaults), so the backlogs can be published before delivery starts.
  await ensureCallsStream(jsm, names, { duplicateWindowMs: 10 * 60_000, maxAgeMs: 7 * 24 * 3600_000, replicas: 1 });

  const sink = await WebhookSinkChild.start(REPO_ROOT);
  cleanup.add("stop the webhook sink", () => sink.stop());
  let hostileSink: WebhookSinkChild | undefined;
  if (params.phases.includes("latency-isolation")) {
    hostileSink = await WebhookSinkChild.start(REPO_ROOT);
    const started = hostileSink;
    // The hostile receivers stand for other people's servers, which run on their own machines: here they share
    // delivery's cores, and the 100 MB one spends a good share of a core pushing bytes into sockets
    // delivery closes. At the lowest priority they get what the rest leaves, as if elsewhere; 0 measures them
    // competing for the cores.
    os.setPriority(hostileSink.pid!, params.hostileNice);
    cleanup.add("stop the hostile webhook sink", () => started.stop());
  }
  const workspaceFile = await writeWorkspaceFile(
    cleanup,
    workspace(sink, params.isolationLimit, hostileSink, params.latencyIsolationKinds, params.latencyIsolationWarmCut),
  );
  const settings = loadDeliveryConfig({ NATS_URL: nats.url, SWITCHYARD_NAMESPACE: namespace, ...params.deliveryEnv });

  const ctx: Context = {
    params,
    natsUrl: nats.url,
    namespace,
    names,
    nc,
    js: jetstream(nc),
    jsm,
    sink,
    workspaceFile,
    cleanup,
    destinationConcurrency: settings.DELIVERY_DESTINATION_CONCURRENCY,
    natsPid: nats.pid,
  };
  // Isolation last: its failing destination leaves retries behind.
  // One process, then (with --workers) several, which is then the run judged.
  const throughputRuns: ThroughputResult[] = [];
  if (params.phases.includes("throughput")) {
    for (const workers of params.workers > 1 ? [1, params.workers] : [1]) throughputRuns.push(await throughputPhase(ctx, workers));
  }
  const throughput = throughputRuns.at(-1);
  const latency = params.phases.includes("latency") ? await latencyPhase(ctx) : undefined;
  const latencyIsolation = hostileSink ? await latencyIsolationPhase(ctx, hostileSink) : undefined;
  const filters = params.phases.includes("filters") ? await filtersPhase(ctx) : undefined;
  const isolation = params.phases.includes("isolation") ? await isolationPhase(ctx) : undefined;

  const targets = {
    ...(throughput
      ? {
          throughputRatio: {
            target: TARGETS.throughputRatio,
            value: round(throughput.ratio, 3),
            pass: throughput.ratio >= TARGETS.throughputRatio,
          },
          throughputGoalRatio: {
            target: TARGETS.throughputGoalRatio,
            value: round(throughput.ratio, 3),
            pass: throughput.ratio >= TARGETS.throughputGoalRatio,
          },
        }
      : {}),
    ...(isolation
      ? {
          isolationRatio: {
            target: TARGETS.isolationRatio,
            value: round(isolation.ratio, 3),
            pass: isolation.ratio >= TARGETS.isolationRatio,
          },
          ...(isolation.limitedRatio !== undefined
            ? {
                isolationLimitedRatio: {
                  target: TARGETS.isolationLimitedRatio,
                  value: round(isolation.limitedRatio, 3),
                  pass: isolation.limitedRatio >= TARGETS.isolationLimitedRatio,
                },
              }
            : {}),
        }
      : {}),
    ...(latency
      ? {
          latencyP50Ms: { target: TARGETS.latencyP50Ms, value: latency.p50Ms, pass: latency.p50Ms <= TARGETS.latencyP50Ms },
          latencyP99Ms: { target: TARGETS.latencyP99Ms, value: latency.p99Ms, pass: latency.p99Ms <= TARGETS.latencyP99Ms },
        }
      : {}),
    ...(latencyIsolation
      ? {
          latencyIsolationP99Ratio: {
            target: TARGETS.latencyIsolationP99Ratio,
            value: round(latencyIsolation.p99Ratio, 2),
            pass: latencyIsolation.p99Ratio <= TARGETS.latencyIsolationP99Ratio,
          },
          latencyIsolationFirstSecondsP99Ratio: {
            target: TARGETS.latencyIsolationP99Ratio,
            value: round(latencyIsolation.firstSecondsP99Ratio, 2),
            pass: latencyIsolation.firstSecondsP99Ratio <= TARGETS.latencyIsolationP99Ratio,
          },
        }
      : {}),
    ...(filters
      ? { filterRatio: { target: TARGETS.filterRatio, value: round(filters.ratio, 3), pass: filters.ratio >= TARGETS.filterRatio } }
      : {}),
  };

  console.log("");
  for (const run of throughputRuns.slice(0, -1)) {
    console.log(
      `1. throughput  ${run.workers} worker${run.workers === 1 ? "" : "s"}: ${run.ratio.toFixed(2)}× raw (${format(run.delivered.perSecond)} vs ${format(run.raw.perSecond)}/s)`,
    );
  }
  if (throughput) {
    console.log(
      `1. throughput  ${throughput.workers} worker${throughput.workers === 1 ? "" : "s"}: delivered ${format(throughput.delivered.perSecond)} webhooks/s (${format(throughput.delivered.count)} in ${throughput.delivered.seconds.toFixed(2)} s)`,
    );
    console.log(
      `               raw undici ${format(throughput.raw.perSecond)} POSTs/s (${format(throughput.raw.count)} in ${throughput.raw.seconds.toFixed(2)} s)`,
    );
    console.log(
      `               ratio ${throughput.ratio.toFixed(2)}× (target ≥ ${TARGETS.throughputRatio}×: ${verdict(targets.throughputRatio!.pass)}; goal ≥ ${TARGETS.throughputGoalRatio}×: ${verdict(targets.throughputGoalRatio!.pass)})`,
    );
    const perRound = throughput.rounds.map((r) => `${r.ratio.toFixed(2)}×`).join(", ");
    const cpu = (costs: CpuCost[]) => costs.map((cost) => cost.senderMicrosPerRequest ?? "?").join("/");
    console.log(
      `               per round ${perRound}; CPU µs per request, service ${cpu(throughput.rounds.map((r) => r.deliveryCpu))} vs raw client ${cpu(throughput.rounds.map((r) => r.rawCpu))}`,
    );
  }
  if (isolation) {
    const runs = (list: IsolationRun[]) => list.map((run) => format(run.fourHealthy.perSecond)).join(", ");
    console.log(
      `2. isolation   four healthy, all healthy: ${format(isolation.healthy.perSecond)} webhooks/s (runs: ${runs(isolation.runs.healthy)})`,
    );
    console.log(
      `               four healthy, one failing: ${format(isolation.withSlow.perSecond)} webhooks/s (runs: ${runs(isolation.runs.withSlow)})`,
    );
    console.log(
      `               ratio ${isolation.ratio.toFixed(2)} (target ≥ ${TARGETS.isolationRatio}: ${verdict(targets.isolationRatio!.pass)})`,
    );
    if (isolation.withLimited && isolation.limitedRatio !== undefined) {
      console.log(
        `               four healthy, one limited to ${params.isolationLimit}/s: ${format(isolation.withLimited.perSecond)} webhooks/s (runs: ${runs(isolation.runs.withLimited)})`,
      );
      console.log(
        `               ratio ${isolation.limitedRatio.toFixed(2)} (target ≥ ${TARGETS.isolationLimitedRatio}: ${verdict(targets.isolationLimitedRatio!.pass)}); ` +
          `the limited one's busiest whole second ${isolation.limitedBusiestSecond} requests`,
      );
    }
  }
  if (latency) {
    console.log(
      `3. latency     p50 ${latency.p50Ms} ms (target ≤ ${TARGETS.latencyP50Ms}: ${verdict(targets.latencyP50Ms!.pass)}), p99 ${latency.p99Ms} ms (target ≤ ${TARGETS.latencyP99Ms}: ${verdict(targets.latencyP99Ms!.pass)}), max ${latency.maxMs} ms, ${format(latency.samples)} calls`,
    );
  }

  if (latencyIsolation) {
    const li = latencyIsolation;
    const figures = (summary: LatencySummary) => `p50 ${summary.p50Ms} ms, p99 ${summary.p99Ms} ms, max ${summary.maxMs} ms`;
    console.log(`4. latency isolation  healthy alone: ${figures(li.alone)} (${format(li.alone.samples)} calls)`);
    console.log(
      `               with ${params.latencyIsolationKinds.join(", ")} (nice ${params.hostileNice}): ${figures(li.hostile)} (${format(li.hostile.samples)} calls)`,
    );
    console.log(`               first ${FIRST_SECONDS} s with them: ${figures(li.hostileFirstSeconds)}`);
    console.log(
      `               p99 ratio ${li.p99Ratio.toFixed(2)}× (target ≤ ${TARGETS.latencyIsolationP99Ratio}×: ${verdict(targets.latencyIsolationP99Ratio!.pass)}), ` +
        `first ${FIRST_SECONDS} s ${li.firstSecondsP99Ratio.toFixed(2)}× (${verdict(targets.latencyIsolationFirstSecondsP99Ratio!.pass)}); ` +
        `round by round ${li.roundRatios.map((ratio) => `${ratio}×`).join(", ")}`,
    );
    for (const run of li.runs) {
      console.log(
        `               ${run.label.padEnd(7)} p99 per second: ${run.perSecond.map((second) => second.p99Ms).join(", ")}; ` +
          `CPU cores: delivery ${run.cpuCores.delivery}, sink ${run.cpuCores.sink}, hostile sink ${run.cpuCores.hostileSink}, ` +
          `nats-server ${run.cpuCores.natsServer}; retry deliveries ${run.bus.retryDeliveries}`,
      );
    }
  }

  if (filters) {
    const cpu = filters.cpuMicrosPerRequest;
    console.log(
      `5. filters     without a filter: ${format(filters.plain.perSecond)} webhooks/s; with one every call matches: ${format(filters.filtered.perSecond)} webhooks/s`,
    );
    console.log(
      `               ratio ${filters.ratio.toFixed(3)}× (target ≥ ${TARGETS.filterRatio}×: ${verdict(targets.filterRatio!.pass)}); ` +
        `CPU µs per webhook ${cpu.plain ?? "?"} without, ${cpu.filtered ?? "?"} with; in turn ` +
        filters.rounds
          .map(
            (r) =>
              `${r.label} ${format(r.delivered.perSecond)}${r.retryTasksPublished > 0 ? ` (${format(r.retryTasksPublished)} retry tasks)` : ""}`,
          )
          .join(", "),
    );
  }

  const file = await writeResults(RESULTS_DIR, "delivery", {
    benchmark: "delivery",
    date: date.toISOString(),
    parameters: {
      phases: params.phases,
      batchSize: BATCH_SIZE,
      throughputCalls: params.calls,
      throughputRounds: params.rounds,
      warmupCalls: params.warmupCalls,
      throughputWarmupCalls: params.throughputWarmupCalls,
      isolationCallsPerDestination: params.isolationCalls,
      isolationRounds: params.isolationRounds,
      isolationFailingHoldMs: HOLD_MS,
      isolationLimit: params.isolationLimit,
      latencyCallsPerSecond: params.latencyRate,
      latencyBatchSize: params.latencyBatchSize,
      latencySeconds: params.latencySeconds,
      latencyWarmupSeconds: params.latencyWarmupSeconds,
      latencyIsolationCallsPerSecond: params.latencyIsolationRate,
      latencyIsolationBatchSize: params.latencyIsolationBatchSize,
      latencyIsolationSeconds: params.latencyIsolationSeconds,
      latencyIsolationWarmupSeconds: params.latencyIsolationWarmupSeconds,
      latencyIsolationRounds: params.latencyIsolationRounds,
      latencyIsolationKinds: params.latencyIsolationKinds,
      latencyIsolationWarmupWithCutAnswers: params.latencyIsolationWarmCut,
      latencyIsolationHostileNice: params.hostileNice,
      filterCallsPerRound: params.filterCalls,
      filterRounds: params.filterRounds,
      filter: FILTER,
      phaseTimeoutSeconds: params.phaseTimeoutMs / 1000,
      deliveryEnv: params.deliveryEnv,
      deliveryDestinationConcurrency: settings.DELIVERY_DESTINATION_CONCURRENCY,
      deliveryBatchConcurrency: settings.DELIVERY_BATCH_CONCURRENCY,
      deliveryRequestTimeoutMs: settings.DELIVERY_REQUEST_TIMEOUT_MS,
      rawConnections: ctx.destinationConcurrency,
      signedWebhooks: true,
      natsServer: nats.external ? "NATS_URL" : "own nats-server",
      cpuProfiled: params.cpuProfDir !== undefined,
    },
    ...(throughput
      ? {
          throughputRuns: throughputRuns.map((run) => ({
            workers: run.workers,
            delivered: rateJson(run.delivered),
            raw: rateJson(run.raw),
            ratio: round(run.ratio, 3),
          })),
          throughput: {
            workers: throughput.workers,
            delivered: rateJson(throughput.delivered),
            raw: rateJson(throughput.raw),
            ratio: round(throughput.ratio, 3),
            rounds: throughput.rounds.map((r) => ({
              delivered: rateJson(r.delivered),
              raw: rateJson(r.raw),
              ratio: round(r.ratio, 3),
              cpuMicrosPerRequest: { service: r.deliveryCpu, rawClient: r.rawCpu },
            })),
            complete: throughput.complete,
            meanBodyBytes: Math.round(throughput.meanBodyBytes),
            bus: throughput.bus,
          },
        }
      : {}),
    ...(isolation
      ? {
          isolation: {
            fourHealthyAllHealthy: rateJson(isolation.healthy),
            fourHealthyOneFailing: rateJson(isolation.withSlow),
            ratio: round(isolation.ratio, 3),
            ...(isolation.withLimited && isolation.limitedRatio !== undefined
              ? {
                  fourHealthyOneLimited: rateJson(isolation.withLimited),
                  limitedRatio: round(isolation.limitedRatio, 3),
                  limitedMaxRequestsPerSecond: params.isolationLimit,
                  limitedBusiestWholeSecond: isolation.limitedBusiestSecond,
                }
              : {}),
            runs: {
              allHealthy: isolation.runs.healthy.map((run) => ({ ...run, fourHealthy: rateJson(run.fourHealthy) })),
              oneFailing: isolation.runs.withSlow.map((run) => ({ ...run, fourHealthy: rateJson(run.fourHealthy) })),
              oneLimited: isolation.runs.withLimited.map((run) => ({ ...run, fourHealthy: rateJson(run.fourHealthy) })),
            },
          },
        }
      : {}),
    ...(latency ? { latency } : {}),
    ...(latencyIsolation ? { latencyIsolation } : {}),
    ...(filters
      ? {
          filters: {
            plain: rateJson(filters.plain),
            filtered: rateJson(filters.filtered),
            ratio: round(filters.ratio, 3),
            cpuMicrosPerRequest: filters.cpuMicrosPerRequest,
            rounds: filters.rounds.map((r) => ({
              label: r.label,
              delivered: rateJson(r.delivered),
              cpuMicrosPerRequest: r.cpuMicrosPerRequest,
            })),
            complete: filters.complete,
          },
        }
      : {}),
    targets,
    pass: Object.values(targets).every((target) => target.pass),
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
}

runBenchmark(main);
