import { status } from "@grpc/grpc-js";
import { DeliverPolicy, jetstreamManager } from "@nats-io/jetstream";
import { NATS_MSG_ID_HEADER } from "@switchyard/bus";
import { configApi, insightsApi, type Call } from "@switchyard/contracts";
import { FILTER_PATH_RULE, kvKeys } from "@switchyard/workspace";
import { waitFor, type WebhookReceiver } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import {
  busCall,
  configService,
  deliveryPerTest,
  grpcFailure,
  trackPayload,
  type DeliveryFixture,
  type DestinationSettings,
} from "@switchyard/testkit/fixtures/delivery";

/*
 * Destination filters (ConnectRequest.filter, a workspace file's connections[].filter) with the
 * real delivery service, nats-server and loopback receivers, and the usage reports delivery
 * publishes (DeliveryOutcomes on <ns>.usage.delivery.<destinationId>).
 */

const per = deliveryPerTest();
let current: DeliveryFixture | undefined;
const api = configService(() => current!.admin);

async function start(workspace: unknown, env: Record<string, string> = {}): Promise<DeliveryFixture> {
  current = await per.start({ workspace, env });
  return current;
}

/** A workspace: source "web" connected to each destination, with the filter given for it (none: undefined). */
function workspaceOf(destinations: Record<string, { url: DestinationSettings; filter?: unknown }>): unknown {
  return {
    sources: [{ id: "web", writeKeys: ["wk_filters_test_0123"] }],
    destinations: Object.entries(destinations).map(([id, { url }]) => ({
      id,
      settings: typeof url === "string" ? { webhooks: [{ url }] } : url,
    })),
    connections: Object.entries(destinations).map(([destinationId, { filter }]) => ({
      sourceId: "web",
      destinationId,
      ...(filter === undefined ? {} : { filter }),
    })),
  };
}

const field = (path: string, test: Record<string, unknown>) => ({ field: { path, ...test } });

/** The messageIds a receiver got on a path, sorted. */
function idsAt(receiver: WebhookReceiver, path: string): string[] {
  return receiver.requests
    .filter((request) => request.path === path)
    .map((request) => request.json.messageId as string)
    .sort();
}

interface Report {
  id: string;
  outcomes: insightsApi.DeliveryOutcomes;
}

/** Every usage report delivery stored for a destination, in order, with its Nats-Msg-Id. */
async function reportsFor(fixture: DeliveryFixture, destinationId: string): Promise<Report[]> {
  const consumer = await fixture.js.consumers.get(fixture.names.usageStream, {
    filter_subjects: fixture.names.deliveryUsageSubject(destinationId),
    deliver_policy: DeliverPolicy.All,
  });
  const pending = (await consumer.info(true)).num_pending;
  const reports: Report[] = [];
  if (pending === 0) return reports;
  for await (const message of await consumer.fetch({ max_messages: pending, expires: 5_000 })) {
    reports.push({ id: message.headers?.get(NATS_MSG_ID_HEADER) ?? "", outcomes: insightsApi.DeliveryOutcomes.decode(message.data) });
    if (reports.length === pending) break;
  }
  return reports;
}

/** The counts of reports added up. */
function totals(reports: Report[]) {
  const sum = { delivered: 0, filtered: 0, failed: 0, deadLettered: 0 };
  for (const { outcomes } of reports) {
    sum.delivered += outcomes.delivered;
    sum.filtered += outcomes.filtered;
    sum.failed += outcomes.failed;
    sum.deadLettered += outcomes.deadLettered;
  }
  return sum;
}

const identify = (traits: Record<string, unknown>): Call["payload"] => ({ $case: "identify", value: { traits } });
const track = (event: string, properties: Record<string, unknown>): Call["payload"] => ({ $case: "track", value: { event, properties } });

/** Six calls, each filter below matching a known few of them. */
const CALLS: Call[] = [
  busCall("c1", track("Order Completed", { revenue: 10, tags: ["vip", "eu"] }), {
    userId: "u-1",
    context: { app: { name: "shop", version: "1.2" } },
  }),
  busCall("c2", track("Product Viewed", { revenue: 0 }), { userId: "u-2" }),
  busCall("c3", identify({ plan: "pro" }), { userId: "", anonymousId: "a-3" }),
  busCall("c4", identify({ plan: "free" }), { userId: "u-4" }),
  busCall("c5", { $case: "page", value: { name: "Checkout", category: "", properties: { revenue: -5 } } }, { userId: "u-5" }),
  busCall("c6", track("Order Completed", { revenue: null, tags: "vip-list", coupon: null }), { userId: "u-6" }),
];

/** A filter for each kind of test and combination, and the calls it lets through. */
const CASES: Record<string, { filter?: unknown; expected: string[] }> = {
  unfiltered: { expected: ["c1", "c2", "c3", "c4", "c5", "c6"] },
  equals: { filter: field("event", { equals: "Order Completed" }), expected: ["c1", "c6"] },
  "not-equals": { filter: field("userId", { notEquals: "u-2" }), expected: ["c1", "c3", "c4", "c5", "c6"] },
  "equals-null": { filter: field("properties.coupon", { equals: null }), expected: ["c6"] },
  exists: { filter: field("context.app.version", { exists: true }), expected: ["c1"] },
  "not-exists": { filter: field("context.app.version", { exists: false }), expected: ["c2", "c3", "c4", "c5", "c6"] },
  in: { filter: field("traits.plan", { in: ["pro", "team"] }), expected: ["c3"] },
  "not-in": { filter: field("traits.plan", { notIn: ["free"] }), expected: ["c1", "c2", "c3", "c5", "c6"] },
  "greater-than": { filter: field("properties.revenue", { greaterThan: 0 }), expected: ["c1"] },
  "greater-or-equal": { filter: field("properties.revenue", { greater_or_equal: 0 }), expected: ["c1", "c2"] },
  "less-than": { filter: field("properties.revenue", { lessThan: 0 }), expected: ["c5"] },
  "less-or-equal": { filter: field("properties.revenue", { lessOrEqual: 0 }), expected: ["c2", "c5"] },
  contains: { filter: field("properties.tags", { contains: "vip" }), expected: ["c1", "c6"] },
  "contains-name": { filter: field("name", { contains: "Check" }), expected: ["c5"] },
  "any-not": {
    filter: { any: { filters: [field("type", { equals: "page" }), { not: field("type", { in: ["track"] }) }] } },
    expected: ["c3", "c4", "c5"],
  },
  all: {
    filter: {
      all: {
        filters: [
          field("type", { equals: "track" }),
          field("properties.revenue", { greaterThan: 0 }),
          field("context.app.version", { exists: true }),
        ],
      },
    },
    expected: ["c1"],
  },
  "absent-equals": { filter: field("properties.missing", { equals: 1 }), expected: [] },
  "absent-not-equals": { filter: field("traits.missing", { notEquals: 1 }), expected: ["c1", "c2", "c3", "c4", "c5", "c6"] },
};

describe("a destination filter", () => {
  it("sends matching calls to both of a source's destinations, and the others only to the unfiltered one", async () => {
    const receiver = await per.receiver();
    const fixture = await start(
      workspaceOf({
        everything: { url: receiver.url("/everything") },
        "paying-tracks": { url: receiver.url("/paying"), filter: CASES.all!.filter },
      }),
    );
    await fixture.publishCalls("web", CALLS);
    await fixture.settled();
    await waitFor("the unfiltered destination's calls", () => idsAt(receiver, "/everything").length === CALLS.length);
    expect(idsAt(receiver, "/paying")).toEqual(["c1"]);
    expect(idsAt(receiver, "/everything")).toEqual(["c1", "c2", "c3", "c4", "c5", "c6"]);

    // One report per batch and destination: what was delivered, and what the filter kept back.
    const paying = await waitFor("the filtered destination's report", async () => {
      const reports = await reportsFor(fixture, "paying-tracks");
      return reports.length > 0 && reports;
    });
    expect(paying).toEqual([
      {
        id: "outcomes:paying-tracks:calls-1",
        outcomes: {
          sourceId: "web",
          destinationId: "paying-tracks",
          at: expect.any(Date),
          delivered: 1,
          filtered: 5,
          failed: 0,
          deadLettered: 0,
        },
      },
    ]);
    expect((await reportsFor(fixture, "everything")).map((report) => report.outcomes)).toEqual([
      { sourceId: "web", destinationId: "everything", at: expect.any(Date), delivered: 6, filtered: 0, failed: 0, deadLettered: 0 },
    ]);
    expect(Math.abs(paying[0]!.outcomes.at!.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it("applies each test, all, any and not, and absent paths, as stated", async () => {
    const receiver = await per.receiver();
    const destinations = Object.fromEntries(Object.entries(CASES).map(([id, { filter }]) => [id, { url: receiver.url(`/${id}`), filter }]));
    const fixture = await start(workspaceOf(destinations));
    await fixture.publishCalls("web", CALLS);
    await fixture.settled();
    const expectedRequests = Object.values(CASES).reduce((sum, { expected }) => sum + expected.length, 0);
    await waitFor("every matching call", () => receiver.requests.length >= expectedRequests);
    for (const [id, { expected }] of Object.entries(CASES)) expect(idsAt(receiver, `/${id}`), id).toEqual(expected);
    expect(receiver.requests).toHaveLength(expectedRequests);
    for (const [id, { expected }] of Object.entries(CASES)) {
      const reports = await waitFor(`${id}'s report`, async () => {
        const found = await reportsFor(fixture, id);
        return found.length > 0 && found;
      });
      expect(totals(reports), id).toEqual({
        delivered: expected.length,
        filtered: CALLS.length - expected.length,
        failed: 0,
        deadLettered: 0,
      });
    }
  });

  it("never dead-letters a filtered call, even with a receiver refusing every request", async () => {
    const receiver = await per.receiver(() => ({ status: 400 }));
    const fixture = await start(workspaceOf({ refusing: { url: receiver.url("/refusing"), filter: field("type", { equals: "track" }) } }));
    await fixture.publishCalls("web", CALLS);
    await fixture.settled();
    const tracks = ["c1", "c2", "c6"];
    await waitFor(
      "the tracks' dead letters",
      async () => (await fixture.admin.listDeadLetters({ destinationId: "refusing" })).entries.length >= 3,
    );
    const dead = (await fixture.admin.listDeadLetters({ destinationId: "refusing" })).entries.map(
      (entry) => entry.deadLetter!.task!.call!.messageId,
    );
    expect(dead.sort()).toEqual(tracks);
    expect(idsAt(receiver, "/refusing")).toEqual(tracks);
    const reports = await waitFor("the report", async () => {
      const found = await reportsFor(fixture, "refusing");
      return found.length > 0 && found;
    });
    expect(totals(reports)).toEqual({ delivered: 0, filtered: 3, failed: 3, deadLettered: 3 });
  });

  it("is applied at the first attempt only: a call owed a retry is retried after the filter changes to exclude it", async () => {
    let failing = true;
    const receiver = await per.receiver((request) => ({ status: failing && request.json.messageId === "t1" ? 503 : 200 }));
    const fixture = await start(workspaceOf({ flaky: { url: receiver.url("/flaky"), filter: field("type", { equals: "track" }) } }));
    await fixture.publishCalls("web", [busCall("t1", trackPayload()), busCall("i1", identify({ plan: "pro" }))]);
    await waitFor("the first attempt", () => receiver.requests.length >= 1);
    // From now on only identify calls match; the track call already failed once and is owed its retries.
    await api.connect({ sourceId: "web", destinationId: "flaky", filter: filterMessage(field("type", { equals: "identify" })) });
    await waitFor("delivery to apply the new filter", async () => {
      await fixture.publishCalls("web", [busCall(`probe-${Date.now()}`, identify({}))]);
      return waitFor("the probe", () => receiver.requests.some((request) => request.json.messageId.startsWith("probe-")), {
        timeoutMs: 1_000,
      });
    });
    failing = false;
    await fixture.settled();
    await waitFor("t1 delivered", () => receiver.requests.filter((request) => request.json.messageId === "t1").length >= 2);
    expect(receiver.requests.some((request) => request.json.messageId === "i1")).toBe(false);
    const reports = await waitFor("every report", async () => {
      const found = await reportsFor(fixture, "flaky");
      return found.some((report) => report.id.includes(":retry-") && report.outcomes.delivered === 1) && found;
    });
    expect(reports[0]).toMatchObject({ id: "outcomes:flaky:calls-1", outcomes: { delivered: 0, filtered: 1, failed: 1, deadLettered: 0 } });
    const retried = reports.filter((report) => report.id.includes(":retry-"));
    expect(totals(retried)).toMatchObject({ delivered: 1, filtered: 0, deadLettered: 0 });
  });
});

describe("delivery's usage reports", () => {
  it("are stored once when a batch is handled again after a failure (same ids), though its calls were sent twice", async () => {
    const steady = await per.receiver();
    let failing = true;
    const flaky = await per.receiver(() => ({ status: failing ? 503 : 200 }));
    const fixture = await start(workspaceOf({ steady: { url: steady.url("/steady") }, flaky: { url: flaky.url("/flaky") } }), {
      DELIVERY_HANDLING_RETRY_DELAY_MS: "100",
      DELIVERY_MAX_HANDLING_FAILURES: "100",
    });
    const jsm = await jetstreamManager(fixture.nc);
    const retry = await jsm.streams.info(fixture.names.retryStream);
    // The flaky destination's retries cannot be stored for now: handling the batch fails after the steady
    // destination's calls were delivered and reported, and the batch comes back.
    await jsm.streams.update(fixture.names.retryStream, { ...retry.config, subjects: [fixture.names.retrySubject("steady")] });
    const calls = Array.from({ length: 5 }, (_, index) => busCall(`m${index}`, trackPayload()));
    await fixture.publishCalls("web", calls);
    await waitFor("the steady destination's report", async () => (await reportsFor(fixture, "steady")).length > 0);
    await waitFor("the batch to be handled again", () => steady.requests.length >= 2 * calls.length, { timeoutMs: 20_000 });

    // The flaky destination answers before its retries can be stored again: the batch is then acked
    // however the two orders interleave.
    failing = false;
    await jsm.streams.update(fixture.names.retryStream, retry.config);
    await fixture.settled();
    await waitFor("the flaky destination's report", async () => (await reportsFor(fixture, "flaky")).length > 0, { timeoutMs: 20_000 });

    const steadyReports = await reportsFor(fixture, "steady");
    expect(steadyReports).toEqual([
      {
        id: "outcomes:steady:calls-1",
        outcomes: { sourceId: "web", destinationId: "steady", at: expect.any(Date), delivered: 5, filtered: 0, failed: 0, deadLettered: 0 },
      },
    ]);
    // Its calls were delivered by the handling that succeeded (or, had its breaker opened, by retries).
    const flakyReports = await reportsFor(fixture, "flaky");
    expect(totals(flakyReports)).toMatchObject({ delivered: 5, filtered: 0, deadLettered: 0 });
    expect(new Set(flakyReports.map((report) => report.id)).size).toBe(flakyReports.length);
    // Every call did reach both (the steady one more than once: at least once, as always).
    expect(new Set(idsAt(steady, "/steady"))).toEqual(new Set(calls.map((call) => call.messageId)));
    expect(idsAt(steady, "/steady").length).toBeGreaterThanOrEqual(2 * calls.length);
    expect(new Set(flaky.requests.filter((request) => request.json !== undefined).map((request) => request.json.messageId))).toEqual(
      new Set(calls.map((call) => call.messageId)),
    );
  });

  it("count failed requests and retries: one report for the batch, one per retry message", async () => {
    const answered = new Map<string, number>();
    const receiver = await per.receiver((request) => {
      const seen = answered.get(request.json.messageId) ?? 0;
      answered.set(request.json.messageId, seen + 1);
      return { status: seen === 0 ? 503 : 200 };
    });
    const fixture = await start(workspaceOf({ hook: { url: receiver.url("/hook") } }));
    await fixture.publishCalls("web", [busCall("r1", trackPayload()), busCall("r2", trackPayload())]);
    await fixture.settled();
    const reports = await waitFor("every report", async () => {
      const found = await reportsFor(fixture, "hook");
      return totals(found).delivered === 2 && found;
    });
    expect(totals(reports)).toEqual({ delivered: 2, filtered: 0, failed: 2, deadLettered: 0 });
    expect(reports[0]).toMatchObject({ id: "outcomes:hook:calls-1", outcomes: { delivered: 0, failed: 2 } });
    expect(reports.slice(1).map((report) => report.id)).toEqual([
      expect.stringMatching(/^outcomes:hook:retry-\d+$/),
      expect.stringMatching(/^outcomes:hook:retry-\d+$/),
    ]);
  });
});

describe("ConfigService: Connect with a filter", () => {
  const payingTracks = {
    all: { filters: [field("type", { equals: "track" }), field("properties.revenue", { greaterThan: 0 })] },
  };

  it("stores the filter, lists it, replaces it on a new Connect and removes it on one without", async () => {
    const receiver = await per.receiver();
    const fixture = await start(workspaceOf({ hook: { url: receiver.url("/hook") } }));
    const connected = await api.connect({ sourceId: "web", destinationId: "hook", filter: filterMessage(payingTracks) });
    expect(connected.connection).toEqual({ sourceId: "web", destinationId: "hook", filter: filterMessage(payingTracks) });
    expect((await fixture.configKv.get(kvKeys.connection("web", "hook")))?.json()).toEqual({
      sourceId: "web",
      destinationId: "hook",
      filter: payingTracks,
    });
    expect((await api.listConnections({ sourceId: "web" })).connections).toEqual([connected.connection]);

    const identifies = field("type", { equals: "identify" });
    await api.connect({ sourceId: "web", destinationId: "hook", filter: filterMessage(identifies) });
    expect((await api.listConnections({})).connections[0]!.filter).toEqual(filterMessage(identifies));
    // Delivery follows the change: only identify calls now.
    await waitFor("the new filter to apply", async () => {
      await fixture.publishCalls("web", [busCall(`probe-${receiver.requests.length}-${Date.now()}`, identify({}))]);
      await fixture.settled();
      return receiver.requests.length > 0;
    });
    await fixture.publishCalls("web", [busCall("t-filtered", trackPayload()), busCall("i-sent", identify({}))]);
    await fixture.settled();
    await waitFor("the identify call", () => receiver.requests.some((request) => request.json.messageId === "i-sent"));
    expect(receiver.requests.some((request) => request.json.messageId === "t-filtered")).toBe(false);

    await api.connect({ sourceId: "web", destinationId: "hook" });
    expect((await api.listConnections({})).connections).toEqual([{ sourceId: "web", destinationId: "hook", filter: undefined }]);
    expect((await fixture.configKv.get(kvKeys.connection("web", "hook")))?.json()).toEqual({ sourceId: "web", destinationId: "hook" });
  });

  it("refuses a bad filter with INVALID_ARGUMENT naming the field and rule, and keeps what was stored", async () => {
    const receiver = await per.receiver();
    const fixture = await start(workspaceOf({ hook: { url: receiver.url("/hook"), filter: payingTracks } }));
    const stored = (await fixture.configKv.get(kvKeys.connection("web", "hook")))?.string();
    const refused = async (filter: configApi.CallFilter) => grpcFailure(api.connect({ sourceId: "web", destinationId: "hook", filter }));

    const badPath = await refused(
      filterMessage({
        all: { filters: [field("type", { equals: "track" }), field("event", { exists: true }), field("revenue", { greaterThan: 0 })] },
      }),
    );
    expect(badPath).toEqual({
      code: status.INVALID_ARGUMENT,
      details: `filter.all.filters.2.field.path: ${FILTER_PATH_RULE}`,
    });
    expect((await refused({ filter: undefined })).details).toBe('filter: give exactly one of "all", "any", "not", "field"');
    expect((await refused({ filter: { $case: "field", value: { path: "type", test: undefined } } })).details).toMatch(
      /^filter\.field: give exactly one test: "equals", /,
    );
    expect((await refused(filterMessage(field("type", { equals: { a: 1 } })))).details).toBe(
      "filter.field.equals: must be a string, a finite number, true, false or null (objects and lists cannot be compared)",
    );
    expect((await refused(filterMessage(field("properties.n", { greaterThan: Number.NaN })))).details).toBe(
      "filter.field.greaterThan: must be a finite number",
    );
    let deep: unknown = field("type", { exists: true });
    for (let level = 0; level < 8; level++) deep = { not: deep };
    expect((await refused(filterMessage(deep))).details).toBe(`filter${".not".repeat(8)}: nests deeper than 8 levels`);
    const many = { any: { filters: Array.from({ length: 101 }, () => field("type", { exists: true })) } };
    expect((await refused(filterMessage(many))).details).toBe("filter: holds 101 conditions; at most 100");
    expect((await fixture.configKv.get(kvKeys.connection("web", "hook")))?.string()).toBe(stored);

    const applied = await grpcFailure(
      api.applyWorkspace({
        workspaceJson: JSON.stringify(workspaceOf({ hook: { url: receiver.url("/hook"), filter: field("event", { contains: "" }) } })),
      }),
    );
    expect(applied).toEqual({
      code: status.INVALID_ARGUMENT,
      details: "workspace_json.connections.0.filter.field.contains: must be a non-empty string",
    });
    expect((await fixture.configKv.get(kvKeys.connection("web", "hook")))?.string()).toBe(stored);
  });
});

/** A filter in the workspace file's JSON form as the CallFilter message a client sends. */
function filterMessage(json: unknown): configApi.CallFilter {
  return configApi.CallFilter.fromJSON(json);
}
