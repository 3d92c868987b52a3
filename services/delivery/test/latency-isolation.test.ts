import { waitFor, type ResponsePlan } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, webSourceTo } from "@switchyard/testkit/fixtures/delivery";
import { CALLS_CONSUMER } from "@switchyard/bus";

/** Two batch slots: both would be taken by the first two batches if a batch kept its slot until answered. */
const BATCH_CONCURRENCY = 2;
/** The never-answering receiver's slots: exactly filled by the first two batches' calls. */
const DESTINATION_CONCURRENCY = 4;
const CALLS_PER_BATCH = 2;
/** Many more batches than batch slots. */
const BATCHES = 12;
/**
 * Far longer than the test: no request to the never-answering receiver times
 * out while it runs, so what the healthy destination gets meanwhile does not
 * depend on timing.
 */
const REQUEST_TIMEOUT_MS = 600_000;
/** Far over DELIVERY_MAX_RESPONSE_BYTES (64 KB by default). */
const HUGE_BODY = Buffer.alloc(4 * 1024 * 1024, "x");

const held: ((plan: ResponsePlan) => void)[] = [];
// Answer what is still held and close the receivers first, so that stopping the service does not wait for them.
const scope = deliveryPerTest({
  beforeClose: () => {
    for (const answer of held.splice(0)) answer({ status: 200 });
  },
  receiversFirst: true,
});

describe("latency isolation: batches waiting only on hostile destinations", () => {
  it("do not hold the batch slots: the healthy destination gets every call while a receiver holds its requests", async () => {
    let hostile = true;
    const [healthy, hang, huge, reset] = await Promise.all([
      scope.receiver(),
      // Never answers while hostile: each request waits for the test to let it go.
      scope.receiver(() => (hostile ? new Promise<ResponsePlan>((answer) => held.push(answer)) : { status: 200 })),
      scope.receiver(() => ({ status: 200, body: HUGE_BODY })),
      scope.receiver(() => (hostile ? { destroy: true } : { status: 200 })),
    ]);
    const destinations = { healthy, hang, huge, reset };

    const f = await scope.start({
      workspace: webSourceTo(
        "wk_latency_isolation_1",
        Object.fromEntries(Object.entries(destinations).map(([id, receiver]) => [id, receiver.url()])),
      ),
      env: {
        DELIVERY_BATCH_CONCURRENCY: String(BATCH_CONCURRENCY),
        DELIVERY_DESTINATION_CONCURRENCY: String(DESTINATION_CONCURRENCY),
        DELIVERY_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      },
    });

    const messageIds = Array.from({ length: BATCHES * CALLS_PER_BATCH }, (_, index) => `m-${index}`);
    for (let batch = 0; batch < BATCHES; batch++) {
      const ids = messageIds.slice(batch * CALLS_PER_BATCH, (batch + 1) * CALLS_PER_BATCH);
      await f.publishCalls(
        "web",
        ids.map((id) => busCall(id, trackPayload())),
      );
    }

    // 1. Every call reaches the healthy receiver while the first two batches' requests to the never-answering
    //    one are still open: those batches wait for the answers without their batch slots.
    await waitFor("every call at the healthy receiver", () => healthy.requests.length === messageIds.length, { timeoutMs: 30_000 });
    expect(new Set(healthy.requests.map((request) => request.json.messageId))).toEqual(new Set(messageIds));
    // It still holds its first requests (one set of slots) and got no other: none timed out or was retried.
    expect(hang.requests).toHaveLength(DESTINATION_CONCURRENCY);
    expect(held).toHaveLength(DESTINATION_CONCURRENCY);
    // The huge answers count as delivered (the body is cut at the limit), so every call got its request.
    await waitFor("every call at the huge-answering receiver", () => huge.requests.length >= messageIds.length, { timeoutMs: 30_000 });
    // Nothing is acked before it is delivered or on the retry stream: the held batches are not acked yet.
    const calls = await f.js.consumers.get(f.names.callsStream, CALLS_CONSUMER);
    expect((await calls.info()).num_ack_pending).toBeGreaterThan(0);

    // 2. The receivers recover: every call reaches each of them (at least once), and the calls stream is all acked.
    hostile = false;
    for (const answer of held.splice(0)) answer({ status: 200 });
    for (const [name, receiver] of Object.entries(destinations)) {
      await waitFor(`every call at ${name}`, () => messageIds.every((id) => receiver.byMessageId(id).some(() => true)), {
        timeoutMs: 30_000,
        intervalMs: 100,
      });
    }
    await f.settled();
    expect((await f.admin.listDeadLetters({})).entries).toEqual([]);
  });

  // 300 ms is slow on its own (SLOW_ANSWER_MS); 200 ms only next to a destination that answers in a few;
  // 50 ms is not slow at all, but its calls queue far longer than the healthy destination's (DestinationGate.behind).
  for (const answerMs of [300, 200, 50]) {
    it(`do not wait behind a receiver slower than its calls come (${answerMs} ms an answer): its backlog goes to the retry path, every call arrives`, async () => {
      // With 2 slots, about 7, 10 or 40 calls a second, far fewer than are sent.
      const [healthy, slow] = await Promise.all([
        scope.receiver(),
        scope.receiver(() => new Promise<ResponsePlan>((answer) => setTimeout(() => answer({ status: 200 }), answerMs))),
      ]);
      const f = await scope.start({
        workspace: webSourceTo(`wk_latency_isolation_${answerMs}`, { healthy: healthy.url(), slow: slow.url() }),
        env: {
          DELIVERY_BATCH_CONCURRENCY: String(BATCH_CONCURRENCY),
          DELIVERY_DESTINATION_CONCURRENCY: "2",
          // Little room for batches waiting outside their slots: once it is full, the calls queued
          // for the slow receiver go to the retry path rather than let its pace hold the slots.
          DELIVERY_AWAITING_BATCHES: "4",
        },
      });

      // First calls answered, so that delivery knows both receivers' pace (the slow one is slow, not
      // stuck): enough that a slow first answer of the healthy one (a new connection) is forgotten.
      const warmUp = Array.from({ length: 20 }, (_, index) => `w-${index}`);
      for (const id of warmUp) await f.publishCalls("web", [busCall(id, trackPayload())]);
      await f.settled();

      // Then a call a batch, as the HTTP API stores single calls.
      const messageIds = Array.from({ length: 60 }, (_, index) => `s-${index}`);
      for (const id of messageIds) await f.publishCalls("web", [busCall(id, trackPayload())]);

      // 1. The healthy receiver gets every call long before the slow one could have answered them all: the batches
      //    did not keep their slots while their calls queued for the slow receiver, whose pace would bound them.
      await waitFor("every call at the healthy receiver", () => healthy.requests.length >= warmUp.length + messageIds.length, {
        timeoutMs: 30_000,
      });
      expect(slow.requests.length).toBeLessThan(warmUp.length + 40);
      expect(new Set(healthy.requests.map((request) => request.json.messageId))).toEqual(new Set([...warmUp, ...messageIds]));

      // 2. The calls it could not take in time went to the retry path, and reach it there: nothing is lost or dead-lettered.
      await waitFor("every call at the slow receiver", () => messageIds.every((id) => slow.byMessageId(id).length > 0), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      await f.settled();
      expect((await f.admin.listDeadLetters({})).entries).toEqual([]);
    }, 90_000);
  }
});
