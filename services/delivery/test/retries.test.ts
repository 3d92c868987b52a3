import { status } from "@grpc/grpc-js";
import { ListDeadLettersRequest, type DeadLetterEntry, type DeliveryAttempt } from "@switchyard/contracts";
import { waitFor } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { RetryQueue } from "../src/retries/retry-queue.js";
import { busCall, deliveryPerTest, trackPayload, webSourceTo, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

const scope = deliveryPerTest();

function start(urls: string[], env: Record<string, string> = {}): Promise<DeliveryFixture> {
  return scope.start({
    workspace: webSourceTo("wk_retries_test_001", { hook: { webhooks: urls.map((url) => ({ url })) } }),
    env,
  });
}

/** The call's failed attempts and dead letters in the attempt log, newest first. */
/** The call's failed attempts and dead letters in the attempt log, once there are `count` of them. */
async function attempts(f: DeliveryFixture, messageId: string, count: number): Promise<DeliveryAttempt[]> {
  return f.admin.loggedAttempts({ destinationId: "hook", messageId, outcomes: ["retryable", "permanent", "dead_lettered"] }, count);
}

async function deadLetters(f: DeliveryFixture): Promise<DeadLetterEntry[]> {
  return (await f.admin.listDeadLetters({ destinationId: "hook" })).entries;
}

describe("fan-out and first success", () => {
  it("sends the first attempt to all three URLs in order (500, 200, 500) and retries nothing", async () => {
    const [a, b, c] = await scope.receiversAnswering(500, 200, 500);
    const f = await start([a!.url("/a"), b!.url("/b"), c!.url("/c")]);
    await f.publishCalls("web", [busCall("m-1", trackPayload())]);
    await waitFor("the third URL's request", () => c!.requests.length === 1);
    await f.settled();

    expect([a!.requests.length, b!.requests.length, c!.requests.length]).toEqual([1, 1, 1]);
    expect(a!.requests[0]!.receivedAt).toBeLessThanOrEqual(b!.requests[0]!.receivedAt);
    expect(b!.requests[0]!.receivedAt).toBeLessThanOrEqual(c!.requests[0]!.receivedAt);
    expect(await deadLetters(f)).toEqual([]);
    // The two failures are logged; the call counts as delivered.
    const logged = await attempts(f, "m-1", 2);
    expect(logged.map((x) => [x.url, x.status, x.outcome])).toEqual([
      [c!.url("/c"), 500, "retryable"],
      [a!.url("/a"), 500, "retryable"],
    ]);
    // The stats are folded from delivery's reports, about a second behind.
    await waitFor("the stats to count the delivery", async () => (await f.admin.getDeliveryStats()).destinations[0]?.delivered === 1);
  });
});

describe("retries", () => {
  it("retries 5xx with growing delays and delivers once the receiver recovers", async () => {
    const [receiver] = await scope.receiversAnswering(500);
    receiver!.respond((_request, index) => ({ status: index < 5 ? 503 : 200 }));
    const f = await start([receiver!.url()]);
    await f.publishCalls("web", [busCall("m-recover", trackPayload())]);
    await waitFor("the sixth attempt", () => receiver!.requests.length === 6, { timeoutMs: 30_000 });
    await f.settled();

    const times = receiver!.requests.map((r) => r.receivedAt);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    // Equal jitter on a doubling base (100 ms): each gap is at least half the next step.
    for (const [i, gap] of gaps.entries()) expect(gap).toBeGreaterThanOrEqual(Math.min(800, 100 * 2 ** i) / 2 - 20);
    expect(receiver!.requests.every((r) => r.json.messageId === "m-recover")).toBe(true);
    expect(receiver!.requests.length).toBe(6);
    expect((await attempts(f, "m-recover", 5)).map((x) => x.attempt)).toEqual([5, 4, 3, 2, 1]);
  });

  it("dead-letters at the window's end, lists it, and replays it successfully", async () => {
    const [receiver] = await scope.receiversAnswering(500);
    const f = await start([receiver!.url()], { DELIVERY_RETRY_WINDOW_MS: "1500" });
    const acceptedAt = Date.now();
    await f.publishCalls("web", [busCall("m-dead", trackPayload(), { receivedAt: new Date(acceptedAt) })]);

    const entries = await waitFor("a dead letter", async () => {
      const list = await deadLetters(f);
      return list.length > 0 ? list : undefined;
    });
    const last = receiver!.requests.at(-1)!.receivedAt;
    // Nothing was attempted after the window ended.
    expect(last).toBeLessThanOrEqual(acceptedAt + 1500 + 250);
    expect(receiver!.requests.length).toBeGreaterThanOrEqual(3);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.deadLetter).toMatchObject({
      reason: "window_exhausted",
      attempts: receiver!.requests.length,
      task: { destinationId: "hook", sourceId: "web", call: { messageId: "m-dead" } },
      lastAttempt: { status: 500, outcome: "retryable" },
    });
    const logged = await attempts(f, "m-dead", receiver!.requests.length + 1);
    expect(logged[0]?.outcome).toBe("dead_lettered");

    receiver!.respond(() => ({ status: 200 }));
    const before = receiver!.requests.length;
    const replay = await f.admin.replayDeadLetters({ sequences: [entries[0]!.sequence] });
    expect(replay.replayed).toBe(1);
    await waitFor("the replayed delivery", () => receiver!.requests.length === before + 1);
    await f.settled();
    expect(receiver!.requests.at(-1)!.json.messageId).toBe("m-dead");
    expect(await deadLetters(f)).toEqual([]);
  });

  it("retries a replayed dead letter that fails again right away (its retry is not taken for the first run's)", async () => {
    // First run: 500, then 404 (permanent): a retry named after attempt 1, then a dead letter.
    const [receiver] = await scope.receiversAnswering(500);
    const answers = [500, 404, 503, 200];
    receiver!.respond((_request, index) => ({ status: answers[index] ?? 200 }));
    const f = await start([receiver!.url()]);
    await f.publishCalls("web", [busCall("m-replayed", trackPayload())]);
    const [entry] = await waitFor("a dead letter", async () => {
      const list = await deadLetters(f);
      return list.length > 0 ? list : undefined;
    });
    expect(entry!.deadLetter?.reason).toBe("permanent_failure");

    // Replayed well within the duplicate window: the 503 schedules a retry at attempt 1 again, in a new window.
    expect((await f.admin.replayDeadLetters({ sequences: [entry!.sequence] })).replayed).toBe(1);
    await waitFor("the retry after the replay", () => receiver!.requests.length === 4, { timeoutMs: 15_000 });
    await f.settled();
    expect(receiver!.requests.map((request) => request.json.messageId)).toEqual(Array(4).fill("m-replayed"));
    expect(await deadLetters(f)).toEqual([]);
  });

  it("dead-letters deferred calls at once when their window is over though their time has not come", async () => {
    // Deferred again near the end of the window, calls can be due after it; they must not come back every millisecond until then.
    const [receiver] = await scope.receiversAnswering(200);
    const f = await start([receiver!.url()], { DELIVERY_RETRY_WINDOW_MS: "2000" });
    const now = Date.now();
    await new RetryQueue(f.js, f.names).defer(
      {
        calls: [busCall("m-late", trackPayload())],
        sourceId: "web",
        destinationId: "hook",
        windowStart: new Date(now - 3_000),
        notBefore: new Date(now + 120_000),
      },
      "test-late",
    );
    const [entry] = await waitFor("the dead letter", async () => {
      const list = await deadLetters(f);
      return list.length > 0 ? list : undefined;
    });
    expect(entry!.deadLetter).toMatchObject({ reason: "window_exhausted", task: { call: { messageId: "m-late" } } });
    expect(receiver!.requests).toHaveLength(0);
  });

  it("defers a failing destination's calls together, dead-letters each at the window's end, and replays them all", async () => {
    const [receiver] = await scope.receiversAnswering(500);
    // The first failure trips the breaker, so the second batch is deferred without a request.
    const f = await start([receiver!.url()], {
      DELIVERY_RETRY_WINDOW_MS: "2000",
      DELIVERY_FAILURE_THRESHOLD: "1",
      DELIVERY_FAILING_COOLDOWN_MS: "400",
    });
    await f.publishCalls("web", [busCall("m-trip", trackPayload())]);
    await waitFor("the tripping request", () => receiver!.requests.length === 1);
    const deferredIds = Array.from({ length: 20 }, (_, i) => `m-deferred-${i}`);
    await f.publishCalls(
      "web",
      deferredIds.map((id) => busCall(id, trackPayload())),
    );

    const all = ["m-trip", ...deferredIds];
    const entries = await waitFor("a dead letter for every call", async () => {
      const list = await deadLetters(f);
      return list.length === all.length ? list : undefined;
    });
    await f.settled();
    expect(new Set(entries.map((entry) => entry.deadLetter?.task?.call?.messageId))).toEqual(new Set(all));
    expect(entries.every((entry) => entry.deadLetter?.reason === "window_exhausted")).toBe(true);
    // Probes went out one at a time, once per cool-down: most deferred calls never got a request.
    expect(receiver!.requests.length).toBeLessThan(all.length / 2);
    const neverTried = entries.filter((entry) => entry.deadLetter?.attempts === 0);
    expect(neverTried.length).toBeGreaterThan(0);
    // No request, so no failure to report: the dead letter says so rather than inventing one.
    expect(neverTried.every((entry) => entry.deadLetter?.lastAttempt === undefined)).toBe(true);

    receiver!.respond(() => ({ status: 200 }));
    const before = receiver!.requests.length;
    expect((await f.admin.replayDeadLetters({ destinationId: "hook" })).replayed).toBe(all.length);
    await waitFor("every replayed delivery", () => receiver!.requests.length === before + all.length);
    await f.settled();
    expect(new Set(receiver!.requests.slice(before).map((request) => request.json.messageId))).toEqual(new Set(all));
    expect(await deadLetters(f)).toEqual([]);
  });

  it("refuses the admin API without the right token", async () => {
    const [receiver] = await scope.receiversAnswering(200);
    const f = await start([receiver!.url()]);
    for (const token of [null, "wrong-token-0000000000"]) {
      const error = await f.admin
        .call(f.admin.delivery, "listDeadLetters", ListDeadLettersRequest, {}, token)
        .catch((e: { code: number }) => e);
      expect((error as { code: number }).code).toBe(status.UNAUTHENTICATED);
    }
  });
});
