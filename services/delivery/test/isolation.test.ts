import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { BUS_MESSAGE_TYPE_HEADER, BUS_MESSAGE_TYPE_NAMES } from "@switchyard/bus";
import { DeferredCalls } from "@switchyard/contracts";
import { waitFor } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, webSourceTo } from "@switchyard/testkit/fixtures/delivery";

const CALLS = 300;
/**
 * Fewer batches than DELIVERY_BATCH_CONCURRENCY (16): a batch is acked only
 * once its calls are settled for every destination, so batches beyond that
 * number would wait for a free batch slot, which the slow destination holds
 * until its breaker trips (a known limit of acking per batch).
 */
const BATCHES = 6;
const DESTINATION_CONCURRENCY = 4;
const FAILURE_THRESHOLD = 3;
/** Longer than the contract's 5 s request timeout (docs/contract.md §7.4): every request to it times out. */
const SLOW_HOLD_MS = 6_000;
/**
 * The most requests the slow destination can get before its breaker trips:
 * a full set of concurrent requests, plus one per slot freed by the failures
 * before the one that trips it.
 */
const MAX_SLOW_REQUESTS_BEFORE_TRIP = DESTINATION_CONCURRENCY + FAILURE_THRESHOLD - 1;

const scope = deliveryPerTest();

describe("a slow destination next to a healthy one", () => {
  it("does not hold up the healthy one, gets a bounded number of requests, and gets every call once it recovers", async () => {
    const [slow, healthy] = await Promise.all([scope.receiver(() => ({ status: 200, delayMs: SLOW_HOLD_MS })), scope.receiver()]);
    const f = await scope.start({
      workspace: webSourceTo("wk_isolation_test1", { slow: slow.url(), healthy: healthy.url() }),
      env: {
        DELIVERY_DESTINATION_CONCURRENCY: String(DESTINATION_CONCURRENCY),
        DELIVERY_FAILURE_THRESHOLD: String(FAILURE_THRESHOLD),
        DELIVERY_FAILING_COOLDOWN_MS: "300",
      },
    });
    const jsm = await jetstreamManager(f.nc);

    const messageIds = Array.from({ length: CALLS }, (_, index) => `m-${index}`);
    const perBatch = CALLS / BATCHES;
    for (let batch = 0; batch < BATCHES; batch++) {
      const ids = messageIds.slice(batch * perBatch, (batch + 1) * perBatch);
      await f.publishCalls(
        "web",
        ids.map((id) => busCall(id, trackPayload())),
      );
    }

    // 1. Every call reaches the healthy receiver while the slow one has had only a handful of requests.
    await waitFor("all calls at the healthy receiver", () => healthy.requests.length === CALLS, { timeoutMs: 20_000 });
    expect(slow.requests.length).toBeLessThanOrEqual(MAX_SLOW_REQUESTS_BEFORE_TRIP);
    expect(new Set(healthy.requests.map((request) => request.json.messageId))).toEqual(new Set(messageIds));

    // 2. The slow destination's breaker trips: its waiting calls go to the retry stream instead of being sent,
    //    a batch's calls together in one message.
    await waitFor(
      "the slow destination's calls on the retry path",
      async () => (await retryStreamContents(jsm, f.names.retryStream)).calls >= CALLS - MAX_SLOW_REQUESTS_BEFORE_TRIP,
      { timeoutMs: 20_000 },
    );
    expect((await retryStreamContents(jsm, f.names.retryStream)).messages).toBeLessThan(CALLS / 10);
    expect(slow.requests.length).toBeLessThanOrEqual(MAX_SLOW_REQUESTS_BEFORE_TRIP + 1); // + the first probe, perhaps

    // 3. It recovers: every call reaches it through the retries, and none is lost or dead-lettered.
    const firstAnsweredAtOnce = slow.requests.length;
    slow.respond(() => ({ status: 200 }));
    await waitFor(
      "every call answered by the recovered receiver",
      () => new Set(slow.requests.slice(firstAnsweredAtOnce).map((request) => request.json.messageId)).size === CALLS,
      { timeoutMs: 40_000, intervalMs: 100 },
    );
    await f.settled();
    expect(healthy.requests).toHaveLength(CALLS);
    expect((await f.admin.listDeadLetters({ destinationId: "slow" })).entries).toEqual([]);
    // The stats are folded from delivery's reports, about a second behind.
    const delivered = async () => (await f.admin.getDeliveryStats({ destinationId: "slow" })).destinations[0]?.delivered;
    await waitFor("the stats to count every delivery", async () => (await delivered()) === CALLS).catch(() => undefined);
    expect(await delivered()).toBe(CALLS);
  });
});

/** Messages on the retry stream, and the calls they hold (a DeferredCalls message holds several). */
async function retryStreamContents(jsm: JetStreamManager, stream: string): Promise<{ messages: number; calls: number }> {
  const { state } = await jsm.streams.info(stream);
  let messages = 0;
  let calls = 0;
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    // Gone meanwhile (acked): not on the retry path any more.
    const stored = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
    if (!stored) continue;
    messages++;
    const deferred = stored.header.get(BUS_MESSAGE_TYPE_HEADER) === BUS_MESSAGE_TYPE_NAMES.deferredCalls;
    calls += deferred ? DeferredCalls.decode(stored.data).calls.length : 1;
  }
  return { messages, calls };
}
