import { status } from "@grpc/grpc-js";
import { MetricsSnapshot } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_TOKEN,
  countedAll,
  publishFiltered,
  publishUsage,
  startInsightsFixture,
  storedCall,
  track,
  type InsightsFixture,
} from "@switchyard/testkit/fixtures/insights";

/** Usage per source and UTC day, from the calls, filtered and usage streams; its metrics; the API's checks and auth. */

const DAY = 86_400_000;
const dayText = (millis: number) => new Date(millis).toISOString().slice(0, 10);

let fixture: InsightsFixture;
const todayStart = Math.floor(Date.now() / DAY) * DAY;
const today = dayText(todayStart);
const yesterday = dayText(todayStart - DAY);
const longAgo = dayText(todayStart - 40 * DAY);

beforeAll(async () => {
  fixture = await startInsightsFixture();
  const calls = (prefix: string, count: number, at: number) =>
    Array.from({ length: count }, (_, i) => storedCall(`${prefix}-${i}`, new Date(at), track("Viewed", { i })));
  // Yesterday (late in the day), today (early: the first minutes of the UTC day), and 40 days ago.
  await fixture.publisher.publishCalls("web", "yesterday", calls("y", 7, todayStart - 1));
  await fixture.publisher.publishCalls("web", "today", calls("t", 5, todayStart + 1));
  await fixture.publisher.publishCalls("mobile", "today", calls("m", 2, todayStart + 2));
  await fixture.publisher.publishCalls("web", "long-ago", calls("l", 1, todayStart - 40 * DAY));
  await publishFiltered(fixture, "web", "blocked-today", calls("f", 3, todayStart + 3));
  await publishUsage(fixture, { id: "rejected-1", rejected: { sourceId: "web", receivedAt: new Date(todayStart - 5), count: 4 } });
  await publishUsage(fixture, { id: "rejected-2", rejected: { sourceId: "web", receivedAt: new Date(todayStart + 5), count: 1 } });
  const outcomes = {
    sourceId: "web",
    destinationId: "hook",
    at: new Date(todayStart + 10),
    delivered: 5,
    filtered: 2,
    failed: 3,
    deadLettered: 1,
  };
  await publishUsage(fixture, { id: "outcomes-1", outcomes });
  // Delivery handled the batch again (a redelivery): the same message id, so the bus stores it once.
  await publishUsage(fixture, { id: "outcomes-1", outcomes });
  await publishUsage(fixture, {
    id: "outcomes-2",
    outcomes: { ...outcomes, destinationId: "other", delivered: 2, filtered: 0, failed: 0, deadLettered: 0 },
  });
  await countedAll(fixture);
});
afterAll(async () => {
  await fixture?.dispose();
});

describe("GetUsage", () => {
  it("counts accepted (blocked included), filtered and rejected calls per source and UTC day, and each destination's outcomes", async () => {
    const { days } = await fixture.client.getUsage({});
    expect(days).toEqual([
      { sourceId: "web", day: yesterday, accepted: 7, filtered: 0, rejected: 4, destinations: [] },
      { sourceId: "mobile", day: today, accepted: 2, filtered: 0, rejected: 0, destinations: [] },
      {
        sourceId: "web",
        day: today,
        accepted: 8,
        filtered: 3,
        rejected: 1,
        destinations: [
          { destinationId: "hook", delivered: 5, filtered: 2, failed: 3, deadLettered: 1 },
          { destinationId: "other", delivered: 2, filtered: 0, failed: 0, deadLettered: 0 },
        ],
      },
    ]);
  });

  it("narrows to a source and a range of days; days older than the last 30 need from_day", async () => {
    expect((await fixture.client.getUsage({ sourceId: "mobile" })).days.map((d) => `${d.sourceId} ${d.day}`)).toEqual([`mobile ${today}`]);
    expect(
      (await fixture.client.getUsage({ sourceId: "web", fromDay: longAgo, toDay: yesterday })).days.map((d) => `${d.day} ${d.accepted}`),
    ).toEqual([`${longAgo} 1`, `${yesterday} 7`]);
    expect((await fixture.client.getUsage({ fromDay: today })).days.map((d) => d.sourceId)).toEqual(["mobile", "web"]);
    expect((await fixture.client.getUsage({ toDay: yesterday })).days.map((d) => d.day)).toEqual([yesterday]);
  });

  it("exports the counts as Prometheus counters on the ops port", async () => {
    const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${fixture.insights.opsPort}/metrics`);
    const calls = (source: string, outcome: string) => metrics.value("switchyard_usage_calls_total", { source, outcome });
    expect(calls("web", "accepted")).toBe(16);
    expect(calls("web", "filtered")).toBe(3);
    expect(calls("web", "rejected")).toBe(5);
    expect(calls("mobile", "accepted")).toBe(2);
    const destination = (outcome: string) =>
      metrics.value("switchyard_usage_destination_calls_total", { source: "web", destination: "hook", outcome });
    expect([destination("delivered"), destination("filtered"), destination("failed"), destination("dead_lettered")]).toEqual([5, 2, 3, 1]);
    expect(metrics.value("switchyard_insights_messages_total", { stream: "usage" })).toBe(4);
    expect(metrics.value("switchyard_insights_calls_read_total")).toBe(18);
    expect(metrics.value("switchyard_insights_lag_messages")).toBe(0);
  });
});

describe("InsightsService checks", () => {
  const code = async (promise: Promise<unknown>) => {
    const error = (await promise.then(
      () => undefined,
      (e: unknown) => e,
    )) as { code: number; details: string } | undefined;
    return error && { code: error.code, details: error.details };
  };

  it("requires the admin token", async () => {
    expect(await code(fixture.client.getSourceSchema("web", null))).toMatchObject({ code: status.UNAUTHENTICATED });
    expect(await code(fixture.client.getUsage({}, "not-the-admin-token"))).toMatchObject({
      code: status.UNAUTHENTICATED,
      details: "wrong admin token",
    });
    expect(await code(fixture.client.getUsage({}, ADMIN_TOKEN))).toBeUndefined();
  });

  it("names the field and the rule of a bad request", async () => {
    expect(await code(fixture.client.getSourceSchema(""))).toEqual({ code: status.INVALID_ARGUMENT, details: "source_id: required" });
    expect(await code(fixture.client.getSourceSchema("a.b"))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("source_id"),
    });
    expect(await code(fixture.client.getSourceSchema("nowhere"))).toEqual({
      code: status.NOT_FOUND,
      details: 'source_id: no source "nowhere"',
    });
    expect(await code(fixture.client.getUsage({ fromDay: "2026-02-30" }))).toEqual({
      code: status.INVALID_ARGUMENT,
      details: 'from_day: must be a day as YYYY-MM-DD, got "2026-02-30"',
    });
    expect(await code(fixture.client.getUsage({ toDay: "yesterday" }))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("to_day"),
    });
    expect(await code(fixture.client.getUsage({ fromDay: today, toDay: yesterday }))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("from_day: must not be after to_day"),
    });
    expect(await code(fixture.client.getUsage({ sourceId: "*" }))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("source_id"),
    });
  });

  it("keeps its counts across a restart and adds new ones to them, from KV rather than by reading the streams again", async () => {
    const before = await fixture.client.getUsage({});
    await fixture.restart();
    // Even with the calls gone from the stream, the counts stay.
    await fixture.jsm.streams.purge(fixture.names.callsStream);
    expect(await fixture.client.getUsage({})).toEqual(before);
    await fixture.publisher.publishCalls("mobile", "after-restart", [storedCall("a-1", new Date(todayStart + 20), track("Viewed"))]);
    await countedAll(fixture);
    const mobile = (await fixture.client.getUsage({ sourceId: "mobile", fromDay: today })).days;
    expect(mobile.map((d) => d.accepted)).toEqual([3]);
    const schema = await fixture.client.getSourceSchema("mobile");
    expect(schema.entries.map((e) => e.countTotal)).toEqual([3]);
  });
});
