import { jetstreamManager } from "@nats-io/jetstream";
import { waitFor } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload } from "@switchyard/testkit/fixtures/delivery";
import { RETRY_CONSUMER } from "@switchyard/bus";

/**
 * Calls sent to the half-failing destination; every other one is parked for an hour. With the
 * retry consumer's former bound of 100,000 pending scaled down to 1,000, this test timed out:
 * 1,000 parked tasks held every slot, 2,000 tasks were never delivered, nor was the fresh retry.
 */
const CALLS = 6_000;
const PARKED = CALLS / 2;
const BATCH = 200;

const scope = deliveryPerTest();

describe("parked retries", () => {
  it("do not keep a newer retry that is due from being made, with thousands of tasks parked", async () => {
    // Fails every other call with 503 and a Retry-After of an hour: those tasks wait (nak with delay) far past the test.
    const halfFailing = await scope.receiver(
      (_request, index) => (index % 2 === 1 ? { status: 503, headers: { "retry-after": "3600" } } : { status: 200 }),
      { record: false },
    );
    // Fails its first request only: its retry is due after the base delay (100 ms).
    const recovering = await scope.receiver((_request, index) => ({ status: index === 0 ? 503 : 200 }));
    const f = await scope.start({
      workspace: {
        sources: [
          { id: "busy", writeKeys: ["wk_parked_test_busy1"] },
          { id: "web", writeKeys: ["wk_parked_test_web01"] },
        ],
        destinations: [
          { id: "half-failing", settings: { webhooks: [{ url: halfFailing.url() }] } },
          { id: "recovering", settings: { webhooks: [{ url: recovering.url() }] } },
        ],
        connections: [
          { sourceId: "busy", destinationId: "half-failing" },
          { sourceId: "web", destinationId: "recovering" },
        ],
      },
      // A failing destination's calls are deferred together rather than tried one by one; keep them tried.
      env: { DELIVERY_RETRY_WINDOW_MS: "3600000", DELIVERY_FAILURE_THRESHOLD: "1000000" },
    });
    const jsm = await jetstreamManager(f.nc);
    for (let start = 0; start < CALLS; start += BATCH) {
      await f.publishCalls(
        "busy",
        Array.from({ length: BATCH }, (_, i) => busCall(`busy-${start + i}`, trackPayload())),
      );
    }
    await waitFor(
      `${PARKED} tasks parked`,
      async () => {
        const consumer = await jsm.consumers.info(f.names.retryStream, RETRY_CONSUMER);
        return halfFailing.handled === CALLS && consumer.num_pending === 0 && consumer.num_ack_pending >= PARKED;
      },
      { timeoutMs: 120_000 },
    );

    await f.publishCalls("web", [busCall("fresh", trackPayload())]);
    await waitFor("the fresh call's retry to be delivered", () => recovering.requests.length === 2, { timeoutMs: 30_000 });
    const consumer = await jsm.consumers.info(f.names.retryStream, RETRY_CONSUMER);
    // Delivered while every parked task still waits: none of them came due.
    expect(consumer.num_ack_pending).toBeGreaterThanOrEqual(PARKED);
    expect(recovering.requests.map((request) => request.json.messageId)).toEqual(["fresh", "fresh"]);
  });
});
