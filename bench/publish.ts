/**
 * Client CPU per JetStream publish: `npm run bench:publish [-- --publishes N --rounds N --in-flight N --bytes N]`.
 *
 * The same publishes (a message id and a type header each, as services publish, every one's
 * acknowledgement awaited, `--in-flight` at a time) two ways, taking turns for `--rounds` rounds,
 * on one connection opened as services open theirs:
 *  - reference: nats.js's own `js.publish`, a request per publish;
 *  - acked: the JetStream client every service gets (`withAckedPublish`, libs/infra/bus), whose
 *    acknowledgements come back on one reply subscription.
 * Reports this process's CPU µs per publish for each (`process.cpuUsage`: the publisher's side
 * only; nats-server does the same work for both) and acked / reference. Writes
 * bench/results/publish-latest.json.
 */
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { jetstream, StorageType, type JetStreamClient } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, withAckedPublish } from "@switchyard/bus";
import { machineFacts, openBenchBus, positiveInt, runBenchmark, runLanes, writeResults } from "./lib/run-support.js";

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const { values } = parseArgs({
  options: {
    publishes: { type: "string", default: "30000" },
    rounds: { type: "string", default: "3" },
    "in-flight": { type: "string", default: "64" },
    bytes: { type: "string", default: "300" },
  },
});
const params = {
  publishes: positiveInt("--publishes", values.publishes),
  rounds: positiveInt("--rounds", values.rounds),
  inFlight: positiveInt("--in-flight", values["in-flight"]),
  bytes: positiveInt("--bytes", values.bytes),
};

runBenchmark(async (cleanup) => {
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, jsm } = await openBenchBus(cleanup);
  const stream = `${namespace.toUpperCase()}_BENCH_PUBLISH`;
  const subject = `${namespace}.bench.publish`;
  await jsm.streams.add({ name: stream, subjects: [subject], storage: StorageType.File });
  // Connected as services connect (libs/infra/platform connectBus).
  const nc = await connect({ servers: nats.url, noAsyncTraces: true });
  cleanup.add("close the publishing connection", () => nc.close());
  const sides: { name: "reference" | "acked"; js: JetStreamClient }[] = [
    { name: "reference", js: jetstream(nc) },
    { name: "acked", js: withAckedPublish(jetstream(nc), nc) },
  ];
  const payload = new Uint8Array(params.bytes).fill(120);
  let id = 0;
  const timeRound = async (js: JetStreamClient) => {
    const before = process.cpuUsage();
    const started = performance.now();
    await runLanes(params.inFlight, params.publishes, async () => {
      await js.publish(subject, payload, { msgID: `p-${id++}`, headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch) });
    });
    const cpu = process.cpuUsage(before);
    return {
      cpuMicrosPerPublish: (cpu.user + cpu.system) / params.publishes,
      publishesPerSecond: params.publishes / ((performance.now() - started) / 1000),
    };
  };
  console.log(`${params.publishes} publishes of ${params.bytes} bytes a round, ${params.inFlight} in flight; warming up …`);
  for (const side of sides) await timeRound(side.js);
  const rounds: { side: string; cpuMicrosPerPublish: number; publishesPerSecond: number }[] = [];
  for (let round = 0; round < params.rounds; round++) {
    // Alternating which goes first, so a drift of the machine's speed favours neither.
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const result = await timeRound(side.js);
      rounds.push({ side: side.name, ...result });
      console.log(
        `  ${side.name.padEnd(9)} ${result.cpuMicrosPerPublish.toFixed(2)} µs CPU a publish, ${Math.round(result.publishesPerSecond).toLocaleString("en-US")} publishes/s`,
      );
    }
  }
  const mean = (side: string, key: "cpuMicrosPerPublish" | "publishesPerSecond") => {
    const of = rounds.filter((round) => round.side === side);
    return of.reduce((sum, round) => sum + round[key], 0) / of.length;
  };
  const reference = mean("reference", "cpuMicrosPerPublish");
  const acked = mean("acked", "cpuMicrosPerPublish");
  console.log(
    `client CPU per publish: acked ${acked.toFixed(2)} µs / reference ${reference.toFixed(2)} µs = ${(acked / reference).toFixed(3)}×`,
  );
  const file = await writeResults(join(REPO_ROOT, "bench", "results"), "publish", {
    benchmark: "publish",
    date: new Date().toISOString(),
    parameters: params,
    rounds: rounds.map((round) => ({
      ...round,
      cpuMicrosPerPublish: Number(round.cpuMicrosPerPublish.toFixed(2)),
      publishesPerSecond: Math.round(round.publishesPerSecond),
    })),
    cpuMicrosPerPublish: { reference: Number(reference.toFixed(2)), acked: Number(acked.toFixed(2)) },
    publishesPerSecond: {
      reference: Math.round(mean("reference", "publishesPerSecond")),
      acked: Math.round(mean("acked", "publishesPerSecond")),
    },
    ratio: Number((acked / reference).toFixed(3)),
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
});
