import type { DeadLetterEntry, DeliveryAttempt } from "@switchyard/contracts";
import { freePort, waitFor, type Responder, type ResponsePlan } from "@switchyard/testkit";
import { loadMasker } from "@switchyard/workspace";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, webSourceTo, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

/** The request timeout of docs/contract.md §7.4, which the fixture keeps. */
const REQUEST_TIMEOUT_MS = 5_000;
/** A retry that is due may be sent this early (timer granularity, see retries.ts). */
const EARLY_TOLERANCE_MS = 5;

const scope = deliveryPerTest();

/** Answers the first request with `first`, every later one with 200. */
function firstThenOk(first: ResponsePlan): Responder {
  return (_request, index) => (index === 0 ? first : { status: 200 });
}

/** Delivery with one source, "web", connected to one destination, "hook", with a single URL. */
function startDeliveringTo(url: string): Promise<DeliveryFixture> {
  return scope.start({ workspace: webSourceTo("wk_failures_test_01", { hook: url }) });
}

/** The call's failed attempts and dead letters in the attempt log, newest first. */
/** The call's failed attempts and dead letters in the attempt log, once there are `count` of them. */
async function loggedAttempts(f: DeliveryFixture, messageId: string, count: number): Promise<DeliveryAttempt[]> {
  return f.admin.loggedAttempts({ destinationId: "hook", messageId, outcomes: ["retryable", "permanent", "dead_lettered"] }, count);
}

async function deadLetters(f: DeliveryFixture): Promise<DeadLetterEntry[]> {
  return (await f.admin.listDeadLetters({ destinationId: "hook" })).entries;
}

async function firstDeadLetters(f: DeliveryFixture): Promise<DeadLetterEntry[]> {
  return waitFor("a dead letter", async () => {
    const entries = await deadLetters(f);
    return entries.length > 0 ? entries : undefined;
  });
}

describe("retryable failures", () => {
  it("times out a receiver that takes 6 s, logs the timeout, and retries", async () => {
    const receiver = await scope.receiver(firstThenOk({ status: 200, delayMs: 6_000 }));
    const f = await startDeliveringTo(receiver.url());
    await f.publishCalls("web", [busCall("m-timeout", trackPayload())]);

    await waitFor("the retry after the timeout", () => receiver.requests.length === 2, { timeoutMs: 15_000 });
    await f.settled();

    expect(receiver.byMessageId("m-timeout")).toHaveLength(2);
    const [first, retry] = receiver.requests;
    // The retry only came once the first attempt had given up, and it gave up at the contract's 5 s (§7.4).
    expect(retry!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS);
    const logged = await loggedAttempts(f, "m-timeout", 1);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      attempt: 1,
      status: 0,
      outcome: "retryable",
      error: `timeout: no response within ${REQUEST_TIMEOUT_MS} ms`,
      url: receiver.url(),
    });
    expect(await deadLetters(f)).toEqual([]);
  });

  it("retries after a refused connection, and delivers once a receiver listens on that port", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/hook`;
    const f = await startDeliveringTo(url);
    await f.publishCalls("web", [busCall("m-refused", trackPayload())]);

    await waitFor("a refused attempt in the delivery log", async () =>
      (await loggedAttempts(f, "m-refused", 1)).some((attempt) => attempt.error === "connection refused"),
    );
    const lateReceiver = await scope.receiver(() => ({ status: 200 }), { port });
    await waitFor("the retried call", () => lateReceiver.requests.length > 0, { timeoutMs: 15_000 });
    await f.settled();

    expect(lateReceiver.byMessageId("m-refused")).toHaveLength(1);
    const logged = await loggedAttempts(f, "m-refused", 1);
    expect(logged.length).toBeGreaterThan(0);
    for (const attempt of logged) expect(attempt).toMatchObject({ url, status: 0, outcome: "retryable", error: "connection refused" });
    expect(logged.map((attempt) => attempt.attempt)).toEqual(logged.map((_, index) => logged.length - index));
    expect(await deadLetters(f)).toEqual([]);
  });

  it("honours Retry-After on a 429: the retry comes no earlier than 1 s later", async () => {
    const receiver = await scope.receiver(firstThenOk({ status: 429, headers: { "retry-after": "1" } }));
    const f = await startDeliveringTo(receiver.url());
    await f.publishCalls("web", [busCall("m-429", trackPayload())]);

    await waitFor("the retry after the 429", () => receiver.requests.length === 2);
    await f.settled();

    const [first, retry] = receiver.requests;
    // Without Retry-After the fixture's first retry would come after 50-100 ms.
    expect(retry!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1_000 - EARLY_TOLERANCE_MS);
    expect(receiver.byMessageId("m-429")).toHaveLength(2);
    expect(await loggedAttempts(f, "m-429", 1)).toMatchObject([{ attempt: 1, status: 429, outcome: "retryable" }]);
    expect(await deadLetters(f)).toEqual([]);
  });

  it("retries a 408", async () => {
    const receiver = await scope.receiver(firstThenOk({ status: 408 }));
    const f = await startDeliveringTo(receiver.url());
    await f.publishCalls("web", [busCall("m-408", trackPayload())]);

    await waitFor("the retry after the 408", () => receiver.requests.length === 2);
    await f.settled();

    expect(receiver.byMessageId("m-408")).toHaveLength(2);
    expect(await loggedAttempts(f, "m-408", 1)).toMatchObject([{ attempt: 1, status: 408, outcome: "retryable" }]);
    expect(await deadLetters(f)).toEqual([]);
  });
});

describe("permanent failures", () => {
  it("does not retry a 404: one request, dead-lettered as a permanent failure", async () => {
    const receiver = await scope.receiver(() => ({ status: 404 }));
    const f = await startDeliveringTo(receiver.url());
    await f.publishCalls("web", [busCall("m-404", trackPayload())]);

    const entries = await firstDeadLetters(f);
    await f.settled();

    expect(receiver.requests).toHaveLength(1);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.deadLetter).toMatchObject({
      reason: "permanent_failure",
      attempts: 1,
      task: { destinationId: "hook", sourceId: "web", call: { messageId: "m-404" } },
      lastAttempt: { status: 404, outcome: "permanent", attempt: 1 },
    });
    expect(await deadLetters(f)).toHaveLength(1);
  });

  it("does not follow a 302 to its Location, and does not retry it", async () => {
    const redirectTarget = await scope.receiver(() => ({ status: 200 }));
    const redirecting = await scope.receiver(() => ({ status: 302, headers: { location: redirectTarget.url("/moved") } }));
    const f = await startDeliveringTo(redirecting.url());
    await f.publishCalls("web", [busCall("m-302", trackPayload())]);

    const entries = await firstDeadLetters(f);
    await f.settled();

    expect(redirecting.requests).toHaveLength(1);
    expect(redirectTarget.requests).toHaveLength(0);
    expect(redirectTarget.connections).toBe(0);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.deadLetter).toMatchObject({
      reason: "permanent_failure",
      attempts: 1,
      lastAttempt: { status: 302, outcome: "permanent", url: redirecting.url() },
    });
  });

  it("masks URL query values (tokens) in the delivery log and dead letters, and still sends them", async () => {
    const receiver = await scope.receiver(() => ({ status: 400 }));
    const f = await startDeliveringTo(receiver.url("/hook?token=s3cr3t-query-token&plain"));
    await f.publishCalls("web", [busCall("m-token", trackPayload())]);

    const entries = await firstDeadLetters(f);
    expect(receiver.requests[0]!.path).toBe("/hook?token=s3cr3t-query-token&plain");
    // The delivery service's own key, from the configuration bucket.
    const masker = await loadMasker(f.configKv);
    const masked = `${receiver.url("/hook")}?token=${masker.maskValue("s3cr3t-query-token")}&plain`;
    expect(entries[0]!.deadLetter!.lastAttempt!.url).toBe(masked);
    const logged = await loggedAttempts(f, "m-token", 2);
    expect(logged.map((attempt) => attempt.url)).toEqual([masked, masked]);
    expect(JSON.stringify({ entries, logged })).not.toContain("s3cr3t-query-token");
  });
});
