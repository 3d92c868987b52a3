import { credentials, Metadata } from "@grpc/grpc-js";
import { DeliveryServiceClient, GetDeliveryStatsRequest, type DestinationStats } from "@switchyard/contracts";
import { waitFor } from "@switchyard/testkit";
import { expect } from "vitest";
import { ADMIN_TOKEN, type Pipeline } from "./pipeline.js";
import type { Tally } from "./tally.js";

/**
 * Checks that GetDeliveryStats counts each call the receiver got exactly once, after a run in
 * which calls may have been sent twice. A batch handled again (after a kill, or a lost ack) sends
 * its calls again but reports them once (the report's id names the batch); a call both re-sent
 * by its batch and retried from the retry stream could count twice, as it arrived twice. Returns
 * the figure for the run's record.
 */
export async function expectExactDeliveryStats(
  pipeline: Pipeline,
  tally: Tally,
  counts: { extraRequests: number },
  destinationId = "hook",
): Promise<{ statsDelivered: number | undefined }> {
  const received = tally.distinct;
  const stats = await waitFor(
    "GetDeliveryStats to count every delivered call",
    async () => {
      const found = await deliveryStats(pipeline, destinationId);
      return found && found.delivered >= received ? found : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  ).catch(() => deliveryStats(pipeline, destinationId));
  process.stdout.write(
    `GetDeliveryStats delivered ${stats?.delivered}, ${received} calls at the receiver (${counts.extraRequests} requests more)\n`,
  );
  expect(stats?.deadLettered ?? 0).toBe(0);
  if (counts.extraRequests === 0) expect(stats?.delivered).toBe(received);
  else {
    expect(stats?.delivered).toBeGreaterThanOrEqual(received);
    expect(stats?.delivered).toBeLessThanOrEqual(received + counts.extraRequests);
  }
  return { statsDelivered: stats?.delivered };
}

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
