import { Call } from "@switchyard/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GrpcIngestClient, startIngestInProcess, type IngestHandle } from "@switchyard/testkit/fixtures/ingest";
import {
  countedAll,
  publishFiltered,
  startInsightsFixture,
  storedCall,
  track,
  WORKSPACE,
  type InsightsFixture,
} from "@switchyard/testkit/fixtures/insights";

/**
 * Schemas built from calls as ingest stores them (ingest runs here, in process), blocked calls
 * published on the filtered stream, and older calls published straight onto the bus.
 */

const WEB_KEY = WORKSPACE.sources[0]!.writeKeys[0]!;
const HOUR = 3_600_000;

let fixture: InsightsFixture;
let ingest: IngestHandle;
let grpc: GrpcIngestClient;

beforeAll(async () => {
  fixture = await startInsightsFixture({
    workspace: {
      ...WORKSPACE,
      sources: [{ ...WORKSPACE.sources[0], blocked: { types: ["alias"], trackEvents: ["Blocked Event"] } }, WORKSPACE.sources[1]],
    },
  });
  ({ ingest } = await startIngestInProcess({
    natsUrl: fixture.nats.url,
    namespace: fixture.names.namespace,
    workspaceFile: fixture.workspaceFile.path,
  }));
  grpc = new GrpcIngestClient(`127.0.0.1:${ingest.grpcPort}`);
});
afterAll(async () => {
  grpc?.close();
  await ingest?.stop();
  await fixture?.dispose();
});

const call = (payload: Call["payload"], extra: Partial<Call> = {}) => Call.fromPartial({ userId: "u1", payload, ...extra });

describe("GetSourceSchema", () => {
  it("lists each type and name a source sent, with counts, filtered calls, first and last seen, and keys with their JSON types", async () => {
    const before = Date.now();
    const first = await grpc.ingestBatch(
      {
        batchId: "schema-1",
        calls: [
          call(track("Signed Up", { plan: "pro", seats: 3 })),
          call(track("Signed Up", { plan: null, trial: true, tags: ["a"] })),
          call(track("Order Completed", { total: 10.5, items: [{ sku: "x" }], meta: {} })),
          call({ $case: "page", value: { name: "Home", category: "", properties: { url: "https://example.com/" } } }),
          call({ $case: "page", value: { name: "", category: "Docs", properties: { path: "/docs" } } }),
          call({ $case: "identify", value: { traits: { email: "u1@example.com", age: 42 } } }),
          call({ $case: "group", value: { groupId: "g1", traits: { name: "Acme" } } }),
          call({ $case: "alias", value: { previousId: "old-id" } }),
          // A historical import: its timestamp is old, but it was received now.
          call(track("Signed Up", { plan: "free" }), { timestamp: new Date("2020-01-01T00:00:00Z") }),
        ],
      },
      WEB_KEY,
    );
    expect(first.accepted).toBe(9);
    const after = Date.now();

    // Blocked at the source: on the filtered stream, as ingest publishes them.
    const blockedAt = new Date(after + 1_000);
    await publishFiltered(fixture, "web", "filtered-1", [
      storedCall("f-1", blockedAt, track("Signed Up", { plan: "team" })),
      storedCall("f-2", blockedAt, track("Blocked Event", { reason: "spam" })),
    ]);
    // Older calls, straight onto the bus: three days ago (in 7 days, not in 24 hours) and ten (in neither).
    const threeDaysAgo = new Date(before - 72 * HOUR);
    const tenDaysAgo = new Date(before - 240 * HOUR);
    await fixture.publisher.publishCalls("web", "old-3d", [storedCall("o-1", threeDaysAgo, track("Signed Up", { coupon: "X" }))]);
    await fixture.publisher.publishCalls("web", "old-10d", [storedCall("o-2", tenDaysAgo, track("Signed Up", {}))]);
    await countedAll(fixture);

    const schema = await fixture.client.getSourceSchema("web");
    expect(schema.sourceId).toBe("web");
    expect(schema.nameLimit).toBe(1000);
    expect(schema.updatedAt!.getTime()).toBeGreaterThanOrEqual(before);
    const entry = (type: string, name: string) => schema.entries.find((e) => e.type === type && e.name === name);

    const signedUp = entry("track", "Signed Up")!;
    expect(signedUp).toMatchObject({ overflow: false, countTotal: 6, count7d: 5, count24h: 4, filteredTotal: 1, blocked: false });
    expect(signedUp.firstSeen!.getTime()).toBe(tenDaysAgo.getTime());
    expect(signedUp.lastSeen!.getTime()).toBe(blockedAt.getTime());
    expect(Object.fromEntries(signedUp.keys.map((k) => [k.key, k.types]))).toEqual({
      plan: ["string", "null"],
      seats: ["number"],
      trial: ["boolean"],
      tags: ["array"],
      coupon: ["string"],
    });

    const order = entry("track", "Order Completed")!;
    expect(order).toMatchObject({ countTotal: 1, count24h: 1, filteredTotal: 0 });
    expect(order.keys).toEqual([
      { key: "total", types: ["number"] },
      { key: "items", types: ["array"] },
      { key: "meta", types: ["object"] },
    ]);
    expect(order.firstSeen!.getTime()).toBeGreaterThanOrEqual(before);
    expect(order.firstSeen!.getTime()).toBeLessThanOrEqual(after);

    expect(entry("track", "Blocked Event")).toMatchObject({
      countTotal: 1,
      filteredTotal: 1,
      blocked: true,
      keys: [{ key: "reason", types: ["string"] }],
    });
    expect(entry("page", "Home")).toMatchObject({ countTotal: 1, keys: [{ key: "url", types: ["string"] }] });
    expect(entry("page", "")).toMatchObject({ countTotal: 1, keys: [{ key: "path", types: ["string"] }] });
    expect(entry("identify", "")).toMatchObject({
      countTotal: 1,
      keys: [
        { key: "email", types: ["string"] },
        { key: "age", types: ["number"] },
      ],
    });
    expect(entry("group", "")).toMatchObject({ countTotal: 1, keys: [{ key: "name", types: ["string"] }] });
    expect(entry("alias", "")).toMatchObject({ countTotal: 1, keys: [], blocked: true });
    expect(schema.entries).toHaveLength(8);
    // Most recently seen first.
    const lastSeen = schema.entries.map((e) => e.lastSeen!.getTime());
    expect([...lastSeen].sort((a, b) => b - a)).toEqual(lastSeen);
    expect(schema.entries[0]!.lastSeen!.getTime()).toBe(blockedAt.getTime());

    // Another source's schema is its own; a source that sent nothing has an empty one.
    expect((await fixture.client.getSourceSchema("mobile")).entries).toEqual([]);
  });

  it("records at most 200 keys per entry, and long keys cut short", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 250; i++) properties[`key_${String(i).padStart(3, "0")}`] = i;
    properties["k".repeat(300)] = "long";
    const receivedAt = new Date();
    await fixture.publisher.publishCalls("mobile", "many-keys", [
      storedCall("mk-1", receivedAt, track("Wide", { ["k".repeat(300)]: "long" })),
      storedCall("mk-2", receivedAt, track("Wide", properties)),
    ]);
    await countedAll(fixture);
    const wide = (await fixture.client.getSourceSchema("mobile")).entries.find((e) => e.name === "Wide")!;
    expect(wide.keys).toHaveLength(200);
    expect(wide.keys[0]).toEqual({ key: `${"k".repeat(256)}…`, types: ["string"] });
    expect(wide.keys[1]!.key).toBe("key_000");
  });
});
