import { freePort, waitFor } from "@switchyard/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";
import { Analytics, QueueFullError, type AnalyticsOptions, type CallOutcome, type DeliveredEvent } from "../src/index.js";
import { AnswerHoldingProxy } from "./answer-holding-proxy.js";
import { batchesWith, expectStoredOnce, recordEvents, send } from "./support.js";

let fixture: IngestFixture;
const clients: Analytics[] = [];

beforeAll(async () => {
  fixture = await startIngestFixture();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close(1_000)));
});

afterAll(async () => {
  await fixture.dispose();
});

function client(options: AnalyticsOptions = {}, writeKey = WRITE_KEY): Analytics {
  const analytics = new Analytics(writeKey, { endpoint: `127.0.0.1:${fixture.ingest.grpcPort}`, ...options });
  clients.push(analytics);
  return analytics;
}

describe("delivery into JetStream", () => {
  it("with flushAt 1, sends each call at once", async () => {
    const analytics = client({ flushAt: 1, flushAfter: 600_000 });
    const first = send(analytics, 1);
    expect(analytics.stats()).toMatchObject({ queued: 0, batchesInFlight: 1 });
    await waitFor("the first call in JetStream", async () => (await batchesWith(fixture, [first])).length === 1);
    const second = send(analytics, 2);
    await waitFor("the second call in JetStream", async () => (await batchesWith(fixture, [second])).length === 1);
    const batches = await batchesWith(fixture, [first, second]);
    expect(batches.map((stored) => stored.batch.calls.length)).toEqual([1, 1]);
  });

  it("with the defaults, holds 19 calls and sends all 20 with the 20th", async () => {
    const analytics = client();
    const ids = Array.from({ length: 19 }, (_, index) => send(analytics, index));
    // Nothing was sent: the calls wait in the queue, no request is out.
    expect(analytics.stats()).toEqual({ queued: 19, batchesInFlight: 0, unsettled: 19 });
    expect(await batchesWith(fixture, ids)).toEqual([]);
    ids.push(send(analytics, 19));
    expect(analytics.stats()).toEqual({ queued: 0, batchesInFlight: 1, unsettled: 20 });
    await waitFor("the batch in JetStream", async () => (await batchesWith(fixture, ids)).length === 1);
    const [stored] = await batchesWith(fixture, ids);
    expect(stored!.batch.calls.map((call) => call.messageId)).toEqual(ids);
  });

  it("sends a partial batch flushAfter ms after the last flush (here: the client's creation)", async () => {
    // flushAfter counts from the last flush, and a new client counts from its creation.
    const start = performance.now();
    const analytics = client({ flushAt: 100, flushAfter: 300 });
    const delivered = new Promise<DeliveredEvent>((resolve) => analytics.once("delivered", resolve));
    const ids = Array.from({ length: 5 }, (_, index) => send(analytics, index));
    expect(analytics.stats().queued).toBe(5);
    const event = await delivered;
    // Timers may fire a millisecond early by performance.now(); never hundreds.
    expect(performance.now() - start).toBeGreaterThanOrEqual(290);
    expect(event.messageIds).toEqual(ids);
    await expectStoredOnce(fixture, ids);
  });

  it("reports each message's outcome to its callback", async () => {
    const analytics = client({ flushAt: 3 });
    const outcomes: CallOutcome[] = [];
    const ids = [0, 1, 2].map((index) => send(analytics, index, (outcome) => outcomes.push(outcome)));
    await analytics.flush();
    expect(outcomes).toEqual(ids.map((messageId) => ({ messageId, delivered: true })));
  });
});

describe("failures", () => {
  it("delivers everything once when ingest is stopped while calls are queued and started again", async () => {
    const debugLines: string[] = [];
    const logger = { debug: (line: string) => debugLines.push(line), warn: () => {}, error: () => {} };
    const analytics = client({ flushAt: 10, retry: { initialDelayMs: 50, maxDelayMs: 200 }, logger, debug: true });
    const events = recordEvents(analytics);
    await fixture.stopIngest();
    try {
      for (let index = 0; index < 95; index++) send(analytics, index);
      await waitFor("a failed attempt to be retried", () => debugLines.includes("retrying batch"));
    } finally {
      await fixture.restartIngest();
    }
    await analytics.flush();
    const ids = events.delivered.flatMap((event) => event.messageIds);
    expect(events.failed).toEqual([]);
    expect(ids).toHaveLength(95);
    await expectStoredOnce(fixture, ids);
  });

  it("stores a batch once when ingest stored it but the connection died before the answer", async () => {
    const proxy = await AnswerHoldingProxy.start(fixture.ingest.grpcPort);
    try {
      const debug: { message: string; fields?: Record<string, unknown> }[] = [];
      const logger = {
        debug: (message: string, fields?: Record<string, unknown>) => debug.push({ message, fields }),
        warn: () => {},
        error: () => {},
      };
      const analytics = client({
        endpoint: `127.0.0.1:${proxy.port}`,
        flushAt: 5,
        retry: { initialDelayMs: 20, maxDelayMs: 100 },
        logger,
        debug: true,
      });
      const events = recordEvents(analytics);
      // A first batch opens the connection through the proxy.
      for (let index = 0; index < 5; index++) send(analytics, index);
      await analytics.flush();

      proxy.holdAnswers();
      const ids = Array.from({ length: 5 }, (_, index) => send(analytics, 100 + index));
      await waitFor("ingest to store the batch", async () => (await batchesWith(fixture, ids)).length === 1);
      expect(events.delivered).toHaveLength(1); // the answer to the second batch is held back
      proxy.cutConnections();

      await analytics.flush();
      expect(events.failed).toEqual([]);
      expect(events.delivered.map((event) => event.messageIds)[1]).toEqual(ids);
      const answers = debug.filter((line) => line.message === "batch delivered");
      expect(answers[1]?.fields).toMatchObject({ batchId: events.delivered[1]!.batchId, duplicate: true });
      expect(
        debug.filter((line) => line.message === "sending batch" && line.fields?.batchId === events.delivered[1]!.batchId),
      ).toHaveLength(2);
      await expectStoredOnce(fixture, ids);
      expect(await batchesWith(fixture, ids)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it("close() with the server down resolves within its timeout and names every message not delivered", async () => {
    const analytics = client({
      endpoint: `127.0.0.1:${await freePort()}`,
      flushAt: 10,
      maxInFlight: 2,
      retry: { initialDelayMs: 20, maxDelayMs: 100 },
    });
    const outcomes: CallOutcome[] = [];
    const ids = Array.from({ length: 45 }, (_, index) => send(analytics, index, (outcome) => outcomes.push(outcome)));
    const start = performance.now();
    const result = await analytics.close(500);
    const elapsed = performance.now() - start;
    expect(elapsed).toBeGreaterThanOrEqual(490);
    expect(elapsed).toBeLessThan(3_000);
    expect(result.delivered).toEqual([]);
    expect(result.notDelivered.map((entry) => entry.messageId).sort()).toEqual([...ids].sort());
    for (const entry of result.notDelivered) expect(entry.reason.kind).toBe("close_timeout");
    expect(outcomes.map((outcome) => outcome.messageId).sort()).toEqual([...ids].sort());
    expect(() => send(analytics, 0)).toThrow(/closed/);
  });

  it("reports retries_exhausted once the total retry time is spent", async () => {
    const analytics = client({
      endpoint: `127.0.0.1:${await freePort()}`,
      flushAt: 3,
      retry: { initialDelayMs: 10, maxDelayMs: 20, maxElapsedMs: 150 },
    });
    const events = recordEvents(analytics);
    const ids = [0, 1, 2].map((index) => send(analytics, index));
    await analytics.flush();
    expect(events.failed).toHaveLength(1);
    expect(events.failed[0]).toMatchObject({ messageIds: ids, reason: { kind: "retries_exhausted", code: "UNAVAILABLE" } });
  });

  it("does not retry a refused batch (unknown write key) and reports it", async () => {
    const analytics = client({ flushAt: 2 }, "wk_unknown_0123456789");
    const events = recordEvents(analytics);
    const ids = [0, 1].map((index) => send(analytics, index));
    await analytics.flush();
    expect(events.failed).toEqual([
      { batchId: expect.any(String), messageIds: ids, reason: expect.objectContaining({ kind: "refused", code: "UNAUTHENTICATED" }) },
    ]);
    expect(await batchesWith(fixture, ids)).toEqual([]);
  });

  it("holds at most maxQueueSize calls under a dead server, refusing and reporting the rest", async () => {
    const analytics = client({
      endpoint: `127.0.0.1:${await freePort()}`,
      flushAt: 10,
      maxQueueSize: 50,
      retry: { initialDelayMs: 20, maxDelayMs: 100 },
    });
    const events = recordEvents(analytics);
    const accepted: string[] = [];
    const refused: string[] = [];
    for (let index = 0; index < 80; index++) {
      try {
        accepted.push(send(analytics, index));
      } catch (error) {
        expect(error).toBeInstanceOf(QueueFullError);
        refused.push((error as QueueFullError).messageId);
      }
      expect(analytics.stats().unsettled).toBeLessThanOrEqual(50);
    }
    expect(accepted).toHaveLength(50);
    expect(refused).toHaveLength(30);
    const reported = events.failed.filter((event) => event.reason.kind === "queue_full").flatMap((event) => event.messageIds);
    expect(reported).toEqual(refused);
    const result = await analytics.close(200);
    expect(result.notDelivered.map((entry) => entry.messageId).sort()).toEqual([...accepted].sort());
  });
});
