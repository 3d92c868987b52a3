import { credentials, Metadata } from "@grpc/grpc-js";
import { DeliveryServiceClient, GetDeliveryStatsRequest, type DestinationStats } from "@switchyard/contracts";
import { waitFor } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { killDuringRun } from "./support/kills.js";
import { Load } from "./support/load.js";
import { ADMIN_TOKEN, type Pipeline } from "./support/pipeline.js";
import { profile, scenarioSeed, SeededRandom } from "./support/profile.js";
import { recordScenario } from "./support/results.js";
import { countEndToEnd } from "./support/run-summary.js";
import { withTalliedPipeline } from "./support/service-kill.js";

const FILE = "test/reliability/kill-delivery.test.ts";

describe("delivery SIGKILLed at random moments during a run", () => {
  // A killed replica's unacknowledged batches come back after the consumer's 30 s ack wait, so each kill costs that much.
  it(
    "every accepted call reaches the receiver at least once, and GetDeliveryStats counts each delivered call",
    async () => {
      const seed = scenarioSeed();
      const rng = new SeededRandom(seed);
      process.stdout.write(`kill-delivery: seed ${seed} (RELIABILITY_SEED=${seed} repeats the kill schedule)\n`);
      await withTalliedPipeline(async ({ tally, pipeline }) => {
        const startedAt = Date.now();
        const load = new Load({
          grpcTarget: pipeline.ingestTarget,
          httpUrl: pipeline.httpUrl,
          total: profile.killCalls,
          batchSize: 50,
          callsPerSecond: profile.callsPerSecond,
          prefix: "kill-delivery",
          httpEvery: 10,
        });
        let finished = false;
        let failed = false;
        // Settled here so a failed load stops the kills (below) instead of leaving a rejection unhandled.
        const running = load.run().then(
          () => ((finished = true), undefined),
          (error: unknown) => ((failed = true), error),
        );
        const kills = await killDuringRun(pipeline, "delivery", {
          rng,
          kills: profile.deliveryKills,
          total: profile.killCalls,
          progress: () => tally.distinct,
          finished: () => failed || (finished && tally.distinct >= load.acceptedCount),
          timeoutMs: profile.timeoutMs,
        });
        const loadError = await running;
        if (loadError !== undefined) throw loadError;
        const counts = await countEndToEnd(pipeline, tally, load.accepted, profile.timeoutMs / 2);
        // A batch handled again after a kill sends its calls again but reports them once (the report's
        // id names the batch): the stats count each call the receiver answered 2xx, once. A call both
        // re-sent by its batch and retried from the retry stream could count twice, as it arrived.
        const received = tally.distinct;
        const stats = await waitFor(
          "GetDeliveryStats to count every delivered call",
          async () => {
            const found = await deliveryStats(pipeline, "hook");
            return found && found.delivered >= received ? found : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 250 },
        ).catch(() => deliveryStats(pipeline, "hook"));
        process.stdout.write(
          `kill-delivery: GetDeliveryStats delivered ${stats?.delivered}, ${received} calls at the receiver (${counts.extraRequests} requests more)\n`,
        );
        const figures = {
          scenario: "kill-delivery",
          file: FILE,
          seed,
          ...counts,
          seconds: (Date.now() - startedAt) / 1000,
          details: {
            kills,
            refusals: load.refusals,
            deadLetters: await pipeline.deadLetters(),
            starts: pipeline.starts.get("delivery"),
            statsDelivered: stats?.delivered,
          },
        };
        await recordScenario(figures, pipeline.nc);
        expect(kills).toHaveLength(profile.deliveryKills);
        expect(counts.accepted).toBe(profile.killCalls);
        expect(counts.missingSample, "accepted calls that never arrived").toEqual([]);
        expect(counts.lost).toBe(0);
        expect(figures.details.deadLetters).toBe(0);
        expect(stats?.deadLettered ?? 0).toBe(0);
        if (counts.extraRequests === 0) expect(stats?.delivered).toBe(received);
        else {
          expect(stats?.delivered).toBeGreaterThanOrEqual(received);
          expect(stats?.delivered).toBeLessThanOrEqual(received + counts.extraRequests);
        }
      });
    },
    profile.timeoutMs,
  );
});

async function deliveryStats(pipeline: Pipeline, destinationId: string): Promise<DestinationStats | undefined> {
  const client = new DeliveryServiceClient(pipeline.deliveryTarget, credentials.createInsecure());
  const metadata = new Metadata();
  metadata.set("authorization", `Bearer ${ADMIN_TOKEN}`);
  try {
    return await new Promise((resolve, reject) =>
      client.getDeliveryStats(GetDeliveryStatsRequest.fromPartial({ destinationId }), metadata, (error, response) =>
        error ? reject(error) : resolve(response.destinations.find((d) => d.destinationId === destinationId)),
      ),
    );
  } finally {
    client.close();
  }
}
