/**
 * Audience sync benchmark: `npm run bench:audience [-- --members N | --large]`.
 *
 * Measures the audience-sync service (its own process) against its own
 * nats-server (or NATS_URL with a unique namespace, deleted afterwards):
 *
 *  1. first sync: a snapshot of N members (default 100,000; `--large` is
 *     1,000,000) streamed over gRPC SyncAudienceSnapshot in chunks of
 *     `--chunk` ids (5,000). Every member is new, so N identify calls go onto
 *     the calls stream.
 *  2. re-sync: the same audience again with 1% changed — 0.5% of the members
 *     left out, 0.5% new ones added — so 1% of N calls are emitted.
 *
 * Each sync is timed from opening the stream to the service's answer, which
 * comes after every call was acknowledged by JetStream and the new state was
 * stored. Members per second is N over that time. The calls stream is then
 * read back and the calls counted (and their true/false values), so the
 * figures cannot rest on calls that were never stored. The service's memory is
 * read from /proc/<pid>/status: VmRSS sampled during each sync, VmHWM (the
 * peak since start) at the end.
 *
 * Targets: re-sync time < 0.1 × first sync time; peak RSS < 256 MiB at
 * 1,000,000 members (reported at every size, judged only at ≥ 1,000,000).
 * The service's CPU time per sync (from /proc/<pid>/stat) and its ratio are
 * reported too: on a shared machine wall time swings with other work.
 * Requests are encoded before the clock starts; a small warm-up sync and
 * re-sync of another audience run first, so neither measured sync pays for
 * cold code.
 *
 * Writes bench/results/audience-latest.json
 * (audience-large-latest.json with --large). Exits non-zero only when the benchmark
 * itself failed (including a wrong number of calls), not when a target is
 * missed. `--cpu-prof-dir DIR` / `--heap-prof-dir DIR` profile the service.
 */
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { credentials, Metadata } from "@grpc/grpc-js";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import {
  AudienceServiceClient,
  AudienceServiceService,
  CallBatch,
  SyncAudienceSnapshotRequest,
  type SyncHeader,
  type SyncSummary,
} from "@switchyard/contracts";
import type { BusNames } from "@switchyard/bus";
import { freePort } from "@switchyard/testkit";
import { machineFacts, openBenchBus, runBenchmark, writeResults, writeWorkspaceFile, type Cleanup } from "./lib/run-support.js";
import { ServiceChild } from "./lib/service-child.js";

const LARGE_MEMBERS = 1_000_000;
const TARGETS = { resyncRatio: 0.1, peakRssBytes: 256 * 1024 * 1024, peakRssAtMembers: LARGE_MEMBERS };
/** Each of the two halves of the change: this share of N leaves, as many new members join. */
const CHANGED_HALF = 0.005;
const ADMIN_TOKEN = "bench-audience-admin-token-0123";
const SOURCE_ID = "bench";
const AUDIENCE = "Bench Audience";
const TRAIT = "bench_audience";
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const MIB = 1024 * 1024;

interface Parameters {
  members: number;
  large: boolean;
  chunk: number;
  warmupMembers: number;
  rssIntervalMs: number;
  cpuProfDir: string | undefined;
  heapProfDir: string | undefined;
}

interface SyncFigures {
  members: number;
  seconds: number;
  membersPerSecond: number;
  total: number;
  callsEmitted: number;
  callsExpected: number;
  callsInStream: { total: number; joined: number; left: number };
  /** Highest VmRSS sampled while the sync ran. */
  peakSampledRssBytes: number;
  /** CPU time audience-sync used during the sync (wall time depends on how busy the machine is). */
  serviceCpuSeconds: number;
}

// ---------------------------------------------------------------- options

function parseParameters(argv: string[]): Parameters {
  const { values } = parseArgs({
    args: argv,
    options: {
      members: { type: "string" },
      large: { type: "boolean", default: false },
      chunk: { type: "string", default: "5000" },
      "warmup-members": { type: "string", default: "10000" },
      "rss-interval-ms": { type: "string", default: "20" },
      "cpu-prof-dir": { type: "string" },
      "heap-prof-dir": { type: "string" },
    },
  });
  if (values.large && values.members !== undefined) throw new Error("--large and --members: give one or the other");
  const members = values.large ? LARGE_MEMBERS : positiveInt("--members", values.members ?? "100000");
  if (members < 200) throw new Error("--members: at least 200, so that 0.5% is a whole member");
  return {
    members,
    large: values.large,
    chunk: positiveInt("--chunk", values.chunk),
    warmupMembers: positiveInt("--warmup-members", values["warmup-members"]),
    rssIntervalMs: positiveInt("--rss-interval-ms", values["rss-interval-ms"]),
    cpuProfDir: values["cpu-prof-dir"],
    heapProfDir: values["heap-prof-dir"],
  };
}

function positiveInt(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name}: must be a positive integer, got ${text}`);
  return value;
}

// ---------------------------------------------------------------- cleanup

// ---------------------------------------------------------------- setup

/** One source, no destinations: the calls only need to land on the calls stream. */
const WORKSPACE = { sources: [{ id: SOURCE_ID, writeKeys: ["wk_bench_audience_0123"] }] };

async function startAudienceSync(params: Parameters, natsUrl: string, namespace: string, workspaceFile: string, cleanup: Cleanup) {
  const nodeFlags = [
    ...(params.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${params.cpuProfDir}`] : []),
    ...(params.heapProfDir ? ["--heap-prof", `--heap-prof-dir=${params.heapProfDir}`] : []),
  ];
  const grpcPort = await freePort();
  const child = ServiceChild.start({
    service: "audience-sync",
    cwd: REPO_ROOT,
    grpcPort,
    env: {
      NATS_URL: natsUrl,
      SWITCHYARD_NAMESPACE: namespace,
      SWITCHYARD_WORKSPACE_FILE: workspaceFile,
      SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
      AUDIENCE_GRPC_PORT: String(grpcPort),
    },
    nodeFlags,
  });
  cleanup.add("stop audience-sync", () => child.stop());
  await child.waitUntilReady();
  return child;
}

// ---------------------------------------------------------------- members and requests

/** Member ids as a CRM might have them: "usr_00000042". */
function memberId(i: number): string {
  return `usr_${i.toString().padStart(8, "0")}`;
}

function members(from: number, to: number): string[] {
  return Array.from({ length: to - from }, (_, i) => memberId(from + i));
}

/**
 * The re-sync's members: every 200th of the first sync's left out, as many
 * new ids appended. Returns the ids and how many left and joined.
 */
function changedMembers(first: readonly string[]): { ids: string[]; left: number; joined: number } {
  const step = Math.round(1 / CHANGED_HALF);
  const kept = first.filter((_, i) => i % step !== step - 1);
  const left = first.length - kept.length;
  const ids = kept.concat(members(first.length, first.length + left));
  return { ids, left, joined: left };
}

/** The snapshot stream's messages, protobuf-encoded up front; the header rides on the first. */
function encodeSnapshot(header: SyncHeader, userIds: readonly string[], chunk: number): Buffer[] {
  const requests: Buffer[] = [];
  for (let start = 0; start < userIds.length; start += chunk) {
    const request = SyncAudienceSnapshotRequest.encode({
      header: start === 0 ? header : undefined,
      userIds: userIds.slice(start, start + chunk),
    }).finish();
    requests.push(Buffer.from(request.buffer, request.byteOffset, request.byteLength));
  }
  return requests;
}

function header(syncId: string, expectedCount: number, name = AUDIENCE): SyncHeader {
  return { sourceId: SOURCE_ID, name, syncId, expectedCount };
}

// ---------------------------------------------------------------- the sync

/** Streams pre-encoded messages, honouring the stream's back-pressure, and resolves with the service's summary. */
function sendSnapshot(client: AudienceServiceClient, requests: readonly Buffer[]): Promise<SyncSummary> {
  const metadata = new Metadata();
  metadata.set("authorization", `Bearer ${ADMIN_TOKEN}`);
  const method = AudienceServiceService.syncAudienceSnapshot;
  return new Promise((resolve, reject) => {
    const call = client.makeClientStreamRequest(
      method.path,
      (encoded: Buffer) => encoded,
      method.responseDeserialize,
      metadata,
      { deadline: Date.now() + 30 * 60_000 },
      (error, response) =>
        error || !response?.summary ? reject(error ?? new Error("no summary in the answer")) : resolve(response.summary),
    );
    let next = 0;
    const writeMore = () => {
      for (const request of requests.slice(next)) {
        next++;
        if (!call.write(request)) return void call.once("drain", writeMore);
      }
      call.end();
    };
    writeMore();
  });
}

/** Samples the child's VmRSS every `intervalMs` until stopped; stop() resolves with the highest sample. */
function sampleRss(child: ServiceChild, intervalMs: number): { stop(): Promise<number> } {
  let peak = 0;
  let sampling: Promise<void> = Promise.resolve();
  const sample = () => {
    sampling = child.memory().then((memory) => {
      if (memory) peak = Math.max(peak, memory.rss);
    });
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await sampling;
      sample();
      await sampling;
      return peak;
    },
  };
}

async function lastSequence(jsm: JetStreamManager, names: BusNames): Promise<number> {
  return (await jsm.streams.info(names.callsStream)).state.last_seq;
}

/**
 * Reads the calls stream after `afterSeq` up to its current end and counts the
 * identify calls of the benchmark audience by value: true (joined), false (left).
 */
async function countCalls(
  nc: NatsConnection,
  jsm: JetStreamManager,
  names: BusNames,
  afterSeq: number,
): Promise<SyncFigures["callsInStream"]> {
  const counts = { total: 0, joined: 0, left: 0 };
  const lastSeq = await lastSequence(jsm, names);
  if (lastSeq <= afterSeq) return counts;
  const consumer = await jetstream(nc).consumers.get(names.callsStream, {
    filter_subjects: names.callsSubject(SOURCE_ID),
    opt_start_seq: afterSeq + 1,
  });
  const messages = await consumer.consume({ max_messages: 64 });
  for await (const message of messages) {
    for (const call of CallBatch.decode(message.data).calls) {
      if (call.payload?.$case !== "identify") throw new Error(`unexpected ${call.payload?.$case ?? "empty"} call on the calls stream`);
      const value: unknown = call.payload.value.traits?.[TRAIT];
      counts.total++;
      if (value === true) counts.joined++;
      else if (value === false) counts.left++;
    }
    if (message.seq >= lastSeq) break;
  }
  await messages.close();
  return counts;
}

async function timedSync(
  params: Parameters,
  child: ServiceChild,
  client: AudienceServiceClient,
  requests: readonly Buffer[],
  expected: { members: number; calls: number; joined: number; left: number },
  bus: { nc: NatsConnection; jsm: JetStreamManager; names: BusNames },
): Promise<SyncFigures> {
  const firstSeq = await lastSequence(bus.jsm, bus.names);
  const cpuBefore = await child.cpuSeconds();
  const rss = sampleRss(child, params.rssIntervalMs);
  let summary: SyncSummary;
  let seconds: number;
  let peakSampled: number;
  try {
    const start = performance.now();
    summary = await child.guard(sendSnapshot(client, requests));
    seconds = (performance.now() - start) / 1000;
  } finally {
    peakSampled = await rss.stop();
  }
  const cpuAfter = await child.cpuSeconds();
  if (summary.alreadyApplied) throw new Error("the service took the sync for one already applied");
  if (summary.total !== expected.members) throw new Error(`the service holds ${summary.total} members, expected ${expected.members}`);
  if (summary.emitted !== expected.calls) throw new Error(`the service emitted ${summary.emitted} calls, expected ${expected.calls}`);
  const callsInStream = await countCalls(bus.nc, bus.jsm, bus.names, firstSeq);
  if (callsInStream.total !== expected.calls || callsInStream.joined !== expected.joined || callsInStream.left !== expected.left) {
    throw new Error(
      `the calls stream holds ${JSON.stringify(callsInStream)}, expected ${JSON.stringify({ total: expected.calls, joined: expected.joined, left: expected.left })}`,
    );
  }
  return {
    members: expected.members,
    seconds,
    membersPerSecond: expected.members / seconds,
    total: summary.total,
    callsEmitted: summary.emitted,
    callsExpected: expected.calls,
    callsInStream,
    peakSampledRssBytes: peakSampled,
    serviceCpuSeconds: cpuBefore === undefined || cpuAfter === undefined ? Number.NaN : cpuAfter - cpuBefore,
  };
}

// ---------------------------------------------------------------- report

function syncResult(figures: SyncFigures) {
  return {
    members: figures.members,
    seconds: Number(figures.seconds.toFixed(3)),
    membersPerSecond: Math.round(figures.membersPerSecond),
    totalAfter: figures.total,
    callsEmitted: figures.callsEmitted,
    callsExpected: figures.callsExpected,
    callsInStream: figures.callsInStream,
    peakSampledRssBytes: figures.peakSampledRssBytes,
    serviceCpuSeconds: Number(figures.serviceCpuSeconds.toFixed(2)),
  };
}

function printSummary(first: SyncFigures, resync: SyncFigures, ratio: number, cpuRatio: number, peakRss: number, rssJudged: boolean): void {
  const format = (n: number) => Math.round(n).toLocaleString("en-US");
  const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;
  const line = (label: string, f: SyncFigures) =>
    `${label} ${f.seconds.toFixed(2)} s, ${format(f.membersPerSecond)} members/s, ${format(f.callsEmitted)} calls (expected ${format(f.callsExpected)}), service CPU ${f.serviceCpuSeconds.toFixed(2)} s, peak RSS sampled ${mib(f.peakSampledRssBytes)}`;
  console.log("");
  console.log(line("first sync:", first));
  console.log(line("re-sync:   ", resync));
  console.log(
    `ratio re-sync / first:  ${ratio.toFixed(3)}  (target < ${TARGETS.resyncRatio}: ${ratio < TARGETS.resyncRatio ? "PASS" : "MISS"}; service CPU time ratio ${cpuRatio.toFixed(3)})`,
  );
  const rssVerdict = rssJudged
    ? peakRss < TARGETS.peakRssBytes
      ? "PASS"
      : "MISS"
    : `judged at ≥ ${format(TARGETS.peakRssAtMembers)} members only; ${peakRss < TARGETS.peakRssBytes ? "under" : "over"} it here`;
  console.log(`audience-sync peak RSS (VmHWM): ${mib(peakRss)}  (target < ${mib(TARGETS.peakRssBytes)}: ${rssVerdict})`);
}

// ---------------------------------------------------------------- main

async function main(cleanup: Cleanup): Promise<void> {
  const params = parseParameters(process.argv.slice(2));
  const date = new Date();
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, names, nc, jsm } = await openBenchBus(cleanup);

  const child = await startAudienceSync(params, nats.url, namespace, await writeWorkspaceFile(cleanup, WORKSPACE), cleanup);
  const client = new AudienceServiceClient(`127.0.0.1:${child.grpcPort}`, credentials.createInsecure());
  cleanup.add("close the gRPC client", async () => client.close());
  const bus = { nc, jsm, names };
  // What the service takes before any sync (Node, gRPC, NATS clients): the rest of its peak is the syncs'.
  const idleRss = (await child.memory())?.rss ?? Number.NaN;
  console.log(`audience-sync idle RSS: ${(idleRss / MIB).toFixed(1)} MiB`);

  const n = params.members;
  console.log(`encoding snapshots of ${n.toLocaleString("en-US")} members in chunks of ${params.chunk} …`);
  const firstIds = members(0, n);
  const changed = changedMembers(firstIds);
  const firstRequests = encodeSnapshot(header("first", n), firstIds, params.chunk);
  const resyncRequests = encodeSnapshot(header("resync", changed.ids.length), changed.ids, params.chunk);

  // Both kinds of sync once on another audience, so that neither measured one runs cold code.
  const warmup = params.warmupMembers;
  console.log(`warm-up: a sync and a re-sync of ${warmup.toLocaleString("en-US")} members of another audience …`);
  const warmupIds = members(0, warmup);
  const warmupChanged = changedMembers(warmupIds);
  for (const [syncId, ids, calls] of [
    ["warmup-first", warmupIds, warmup],
    ["warmup-resync", warmupChanged.ids, warmupChanged.left + warmupChanged.joined],
  ] as const) {
    const summary = await child.guard(sendSnapshot(client, encodeSnapshot(header(syncId, ids.length, "Bench Warmup"), ids, params.chunk)));
    if (summary.emitted !== calls) throw new Error(`warm-up ${syncId} emitted ${summary.emitted} calls, expected ${calls}`);
  }

  console.log(`first sync: ${n.toLocaleString("en-US")} members …`);
  const first = await timedSync(params, child, client, firstRequests, { members: n, calls: n, joined: n, left: 0 }, bus);
  console.log(`re-sync: ${changed.left} left, ${changed.joined} joined …`);
  const resync = await timedSync(
    params,
    child,
    client,
    resyncRequests,
    { members: changed.ids.length, calls: changed.left + changed.joined, joined: changed.joined, left: changed.left },
    bus,
  );
  const memory = await child.memory();
  if (!memory) throw new Error(`cannot read /proc/<pid>/status of audience-sync (Linux only):\n${child.recentOutput}`);
  await child.stop(); // now, so a --cpu-prof/--heap-prof profile is written before the results

  const ratio = resync.seconds / first.seconds;
  // On a shared machine wall time swings with other work; the service's own CPU time much less.
  const cpuRatio = resync.serviceCpuSeconds / first.serviceCpuSeconds;
  const rssJudged = n >= TARGETS.peakRssAtMembers;
  const rssPass = memory.peak < TARGETS.peakRssBytes;
  printSummary(first, resync, ratio, cpuRatio, memory.peak, rssJudged);
  const file = await writeResults(RESULTS_DIR, params.large ? "audience-large" : "audience", {
    benchmark: "audience",
    date: date.toISOString(),
    parameters: {
      members: n,
      large: params.large,
      chunkSize: params.chunk,
      chunks: firstRequests.length,
      memberIdExample: memberId(0),
      resyncLeft: changed.left,
      resyncJoined: changed.joined,
      warmupMembers: warmup,
      rssSampleIntervalMs: params.rssIntervalMs,
      storage: "file",
      natsServer: nats.external ? "NATS_URL" : "own nats-server",
      cpuProfiled: params.cpuProfDir !== undefined,
      heapProfiled: params.heapProfDir !== undefined,
    },
    firstSync: syncResult(first),
    resync: syncResult(resync),
    resyncToFirstRatio: Number(ratio.toFixed(4)),
    resyncToFirstServiceCpuRatio: Number(cpuRatio.toFixed(4)),
    idleRssBytes: idleRss,
    peakRssBytes: memory.peak,
    peakRssMiB: Number((memory.peak / MIB).toFixed(1)),
    targets: {
      resyncRatio: { below: TARGETS.resyncRatio, value: Number(ratio.toFixed(4)), pass: ratio < TARGETS.resyncRatio },
      peakRss: {
        belowBytes: TARGETS.peakRssBytes,
        atMembers: TARGETS.peakRssAtMembers,
        judged: rssJudged,
        value: memory.peak,
        pass: rssPass,
      },
    },
    pass: ratio < TARGETS.resyncRatio && (!rssJudged || rssPass),
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
}

runBenchmark(main);
