import { credentials, Metadata } from "@grpc/grpc-js";
import { DeliveryServiceClient, GetDeliveryStatsRequest, type DestinationStats } from "@switchyard/contracts";
import { waitFor } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, type Pipeline } from "./support/pipeline.js";
import { profile } from "./support/profile.js";
import { runServiceKillScenario } from "./support/service-kill.js";

describe("delivery SIGKILLed at random moments during a run", () => {
  // A killed replica's unacknowledged batches come back after the consumer's 30 s ack wait, so each kill costs that much.
  it(
    "every accepted call reaches the receiver at least once, and GetDeliveryStats counts each delivered call",
    () =>
      runServiceKillScenario("delivery", "test/reliability/kill-delivery.test.ts", {
        afterRun: async ({ pipeline, tally, counts }) => {
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
          expect(stats?.deadLettered ?? 0).toBe(0);
          if (counts.extraRequests === 0) expect(stats?.delivered).toBe(received);
          else {
            expect(stats?.delivered).toBeGreaterThanOrEqual(received);
            expect(stats?.delivered).toBeLessThanOrEqual(received + counts.extraRequests);
          }
          return { statsDelivered: stats?.delivered };
        },
      }),
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
