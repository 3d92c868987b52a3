import { NatsCluster } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { expectExactDeliveryStats } from "./support/delivery-stats.js";
import { loadWithFault } from "./support/load-with-fault.js";
import { Pipeline, workspaceFor } from "./support/pipeline.js";
import { profile, scenarioSeed, SeededRandom } from "./support/profile.js";
import { recordScenario } from "./support/results.js";
import { FAST_RETRY_ENV } from "./support/service-kill.js";
import { Tally } from "./support/tally.js";

const FILE = "test/reliability/nats-cluster.test.ts";

describe("a three-node NATS cluster losing a node mid-run", () => {
  it(
    "goes on with streams of three replicas, nothing accepted is lost, and the delivery stats stay exact",
    async () => {
      const seed = scenarioSeed();
      const rng = new SeededRandom(seed);
      process.stdout.write(`nats-cluster: seed ${seed}\n`);
      const cluster = await NatsCluster.start({ size: 3 });
      const tally = await Tally.start();
      let pipeline: Pipeline | undefined;
      try {
        pipeline = await Pipeline.start({
          natsUrl: cluster.urls,
          replicas: 3,
          workspace: workspaceFor({ hook: tally.url() }),
          services: ["ingest", "delivery"],
          env: { delivery: FAST_RETRY_ENV },
        });
        const calls = await pipeline.jsm.streams.info(pipeline.names.callsStream);
        expect(calls.config.num_replicas).toBe(3);
        expect((await pipeline.jsm.streams.info(pipeline.names.retryStream)).config.num_replicas).toBe(3);
        expect((await pipeline.jsm.streams.info(`KV_${pipeline.names.configBucket}`)).config.num_replicas).toBe(3);

        const victim = rng.int(0, cluster.nodes.length - 1);
        const [atFraction] = rng.fractions(1, 0.2, 0.6);
        const run = await loadWithFault(pipeline, tally, {
          prefix: "nats-cluster",
          atFraction: atFraction!,
          fault: async () => {
            const leader = (await pipeline!.jsm.streams.info(pipeline!.names.callsStream)).cluster?.leader;
            // Killed, and left down for the rest of the run: two of three nodes keep the quorum.
            await cluster.nodes[victim]!.stop({ kill: true });
            return { killedNode: `n${victim + 1}`, callsStreamLeaderBefore: leader, killedTheLeader: leader === `n${victim + 1}` };
          },
        });
        const leaderAfter = (await pipeline.jsm.streams.info(pipeline.names.callsStream)).cluster?.leader;
        const stats = await expectExactDeliveryStats(pipeline, tally, run.counts);
        await recordScenario(
          {
            scenario: "nats-cluster-node-lost",
            file: FILE,
            seed,
            ...run.counts,
            seconds: run.seconds,
            details: {
              ...run.fault,
              callsStreamLeaderAfter: leaderAfter,
              acceptedAtKill: run.acceptedAtFault,
              refusals: run.refusals,
              ...stats,
            },
          },
          pipeline.nc,
        );
        expect(Object.keys(run.refusals).filter((kind) => kind !== "grpc:UNAVAILABLE" && kind !== "http:503")).toEqual([]);
        expect(run.counts.accepted).toBe(profile.outageCalls);
        expect(run.counts.missingSample).toEqual([]);
        expect(run.counts.lost).toBe(0);
        expect(await pipeline.deadLetters()).toBe(0);
      } finally {
        await pipeline?.dispose();
        await tally.close();
        await cluster.dispose();
      }
    },
    profile.timeoutMs,
  );
});
