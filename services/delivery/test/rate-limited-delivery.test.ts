import { waitFor, type WebhookReceiver } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

/*
 * One delivery process, one rate-limited destination: every request counts
 * (retries, and each URL of a destination with several), and waiting for the
 * limit, however long, neither drops nor dead-letters a call. Rates are
 * counted at the receiver, by its clock, per whole second.
 */
const scope = deliveryPerTest();

/** The most requests any whole second of the receiver's clock saw (the first and last, partial, left out). */
function busiestWholeSecond(receiver: WebhookReceiver): number {
  const seconds = receiver.requests.map((request) => Math.floor(request.receivedAt / 1000));
  const counts = new Map<number, number>();
  for (const second of seconds) counts.set(second, (counts.get(second) ?? 0) + 1);
  const first = Math.min(...seconds);
  const last = Math.max(...seconds);
  return Math.max(0, ...[...counts].filter(([second]) => second > first && second < last).map(([, count]) => count));
}

function workspace(limit: number, urls: string[]) {
  return {
    sources: [{ id: "web", writeKeys: ["wk_rate_limited_0001"] }],
    destinations: [{ id: "limited", maxRequestsPerSecond: limit, settings: { webhooks: urls.map((url) => ({ url })) } }],
    connections: [{ sourceId: "web", destinationId: "limited" }],
  };
}

async function publish(fixture: DeliveryFixture, count: number, perBatch = 10): Promise<string[]> {
  const ids: string[] = [];
  for (let first = 0; first < count; first += perBatch) {
    const calls = Array.from({ length: Math.min(perBatch, count - first) }, (_, i) => busCall(`r-${first + i}`, trackPayload()));
    ids.push(...calls.map((call) => call.messageId));
    await fixture.publishCalls("web", calls);
  }
  return ids;
}

async function deadLetters(fixture: DeliveryFixture): Promise<number> {
  return (await fixture.admin.listDeadLetters({ destinationId: "limited" })).entries.length;
}

describe("a rate-limited destination", () => {
  it("counts retries against the limit, and delivers every call whose first request failed", async () => {
    const limit = 20;
    const failedOnce = new Set<string>();
    const receiver = await scope.receiver((request) => {
      const id = String(request.json?.messageId);
      if (failedOnce.has(id)) return { status: 200 };
      failedOnce.add(id);
      return { status: 503 };
    });
    const fixture = await scope.start({ workspace: workspace(limit, [receiver.url("/hook")]) });
    const ids = await publish(fixture, 50);

    await waitFor("every call delivered after its retry", () => receiver.requests.length >= 2 * ids.length, { timeoutMs: 60_000 });
    await fixture.settled();
    expect(receiver.requests).toHaveLength(2 * ids.length);
    expect(busiestWholeSecond(receiver)).toBeLessThanOrEqual(limit * 1.1);
    expect(await deadLetters(fixture)).toBe(0);
  }, 90_000);

  it("counts every URL: two URLs at 20 requests a second make 10 calls a second", async () => {
    const limit = 20;
    const receiver = await scope.receiver();
    const fixture = await scope.start({ workspace: workspace(limit, [receiver.url("/a"), receiver.url("/b")]) });
    const ids = await publish(fixture, 50);

    await waitFor("every call at both URLs", () => receiver.requests.length >= 2 * ids.length, { timeoutMs: 60_000 });
    await fixture.settled();
    const paths = receiver.requests.map((request) => `${request.path} ${String(request.json?.messageId)}`);
    expect(new Set(paths).size).toBe(2 * ids.length);
    expect(busiestWholeSecond(receiver)).toBeLessThanOrEqual(limit * 1.1);
    // 100 requests at 20 a second take 5 seconds, whatever the URLs.
    const times = receiver.requests.map((request) => request.receivedAt);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(4_000);
  }, 90_000);

  it("makes calls that wait longer than the retry window wait, not dead-letter: their window starts at their turn", async () => {
    const limit = 10;
    const receiver = await scope.receiver();
    // 40 calls at 10 a second take 4 s; the retry window is 1.5 s.
    const fixture = await scope.start({
      workspace: workspace(limit, [receiver.url("/hook")]),
      env: { DELIVERY_RETRY_WINDOW_MS: "1500" },
    });
    const ids = await publish(fixture, 40);

    await waitFor("every call delivered", () => receiver.requests.length >= ids.length, { timeoutMs: 60_000 });
    await fixture.settled();
    expect(new Set(receiver.requests.map((request) => String(request.json?.messageId)))).toEqual(new Set(ids));
    const times = receiver.requests.map((request) => request.receivedAt);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThan(1_500);
    expect(await deadLetters(fixture)).toBe(0);
  }, 90_000);
});
