/**
 * What one calls-stream leader takes: `npm run bench:stream-leader [-- --seconds N --rounds N --in-flight N --batch N]`.
 *
 * On a three-node nats-server cluster on loopback, batches of `--batch` calls (protobuf, as ingest
 * publishes them, each with its message id and type header, every acknowledgement awaited,
 * `--in-flight` at a time, from one connection per node) go to two file streams that differ only
 * in their replicas: R1 (the reference: one server writes) and R3 (the leader also waits for a
 * follower to store each batch). They take turns for `--rounds` rounds of `--seconds` each.
 * Reports batches/s and calls/s per stream and R3 / R1. Every batch goes through the one
 * stream's leader whatever the number of ingest replicas, so this is the ceiling of the calls
 * path on this machine (see docs/operations.md, Scaling replicas). Writes
 * bench/results/stream-leader-latest.json.
 */
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { jetstream, jetstreamManager, StorageType, type JetStreamClient } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, withAckedPublish } from "@switchyard/bus";
import { NatsCluster } from "@switchyard/testkit";
import { machineFacts, positiveInt, runBenchmark, runLanesFor, writeResults } from "./lib/run-support.js";
import { encodedBatchRequests, seededRandom } from "./lib/sample-calls.js";

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
    "in-flight": { type: "string", default: "64" },
    batch: { type: "string", default: "100" },
  },
});
const params = {
  seconds: positiveInt("--seconds", values.seconds),
  rounds: positiveInt("--rounds", values.rounds),
  inFlight: positiveInt("--in-flight", values["in-flight"]),
  batch: positiveInt("--batch", values.batch),
};

runBenchmark(async (cleanup) => {
  const loadAverageAtStart = os.loadavg();
  const cluster = await NatsCluster.start({ size: 3, name: "bench-stream-leader" });
  cleanup.add("stop the cluster", () => cluster.dispose());
  const admin = await connect({ servers: cluster.servers });
  cleanup.add("close the admin connection", () => admin.close());
  const jsm = await jetstreamManager(admin);
  const streams = [
    { name: "R1", replicas: 1, subject: "bench.leader.r1" },
    { name: "R3", replicas: 3, subject: "bench.leader.r3" },
  ];
  for (const stream of streams) {
    await jsm.streams.add({
      name: `BENCH_LEADER_${stream.name}`,
      subjects: [stream.subject],
      storage: StorageType.File,
      num_replicas: stream.replicas,
      duplicate_window: 10 * 60 * 1_000_000_000,
    });
  }
  // One connection per node, as ingest replicas spread over the cluster.
  const publishers: { nc: NatsConnection; js: JetStreamClient }[] = [];
  for (const server of cluster.servers) {
    const nc = await connect({ servers: server, noAsyncTraces: true });
    cleanup.add(`close the connection to ${server}`, () => nc.close());
    publishers.push({ nc, js: withAckedPublish(jetstream(nc), nc) });
  }
  const { requests } = encodedBatchRequests(seededRandom(36), 256, params.batch);
  const headers = busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch);
  let id = 0;
  const timeRound = async (subject: string, ms: number) => {
    const started = performance.now();
    const batches = await runLanesFor(params.inFlight, ms, async (lane) => {
      const n = id++;
      await publishers[lane % publishers.length]!.js.publish(subject, requests[n % requests.length]!, { msgID: `b-${n}`, headers });
    });
    return batches / ((performance.now() - started) / 1000);
  };

  const bytes = requests.reduce((sum, request) => sum + request.length, 0) / requests.length;
  console.log(`batches of ${params.batch} calls (${Math.round(bytes)} bytes), ${params.inFlight} in flight; warming up …`);
  for (const stream of streams) await timeRound(stream.subject, 1_000);
  const rounds: { stream: string; batchesPerSecond: number }[] = [];
  for (let round = 0; round < params.rounds; round++) {
    // Alternating which goes first, so a drift of the machine's speed favours neither.
    for (const stream of round % 2 === 0 ? streams : [...streams].reverse()) {
      const batchesPerSecond = await timeRound(stream.subject, params.seconds * 1000);
      rounds.push({ stream: stream.name, batchesPerSecond });
      console.log(
        `  ${stream.name} ${Math.round(batchesPerSecond).toLocaleString("en-US")} batches/s, ${Math.round(batchesPerSecond * params.batch).toLocaleString("en-US")} calls/s`,
      );
    }
  }
  const mean = (name: string) => {
    const of = rounds.filter((round) => round.stream === name);
    return of.reduce((sum, round) => sum + round.batchesPerSecond, 0) / of.length;
  };
  const r1 = mean("R1");
  const r3 = mean("R3");
  console.log(
    `one stream leader: R3 ${Math.round(r3)} batches/s (${Math.round(r3 * params.batch)} calls/s) / R1 ${Math.round(r1)} batches/s = ${(r3 / r1).toFixed(3)}×`,
  );
  const file = await writeResults(join(REPO_ROOT, "bench", "results"), "stream-leader", {
    benchmark: "stream-leader",
    date: new Date().toISOString(),
    parameters: { ...params, meanBatchBytes: Math.round(bytes) },
    rounds: rounds.map((round) => ({ ...round, batchesPerSecond: Math.round(round.batchesPerSecond) })),
    batchesPerSecond: { r1: Math.round(r1), r3: Math.round(r3) },
    callsPerSecond: { r1: Math.round(r1 * params.batch), r3: Math.round(r3 * params.batch) },
    ratio: Number((r3 / r1).toFixed(3)),
    machine: await machineFacts(REPO_ROOT, admin, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
});
