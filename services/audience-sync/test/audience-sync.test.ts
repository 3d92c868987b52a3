import { status } from "@grpc/grpc-js";
import { WebhookReceiver, waitFor } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isGrpcError, startAudienceFixture, type AudienceFixture } from "@switchyard/testkit/fixtures/audience-sync";

let receiver: WebhookReceiver;
let fixture: AudienceFixture;

beforeEach(async () => {
  receiver = await WebhookReceiver.start();
  fixture = await startAudienceFixture({
    sources: [{ id: "crm", writeKeys: ["wk_audience_test_001"] }],
    destinations: [{ id: "hook", settings: { webhooks: [{ url: receiver.url() }] } }],
    connections: [{ sourceId: "crm", destinationId: "hook" }],
  });
});
afterEach(async () => {
  await fixture.dispose();
  await receiver.close();
});

const members = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `user-${from + i}`);
const header = (syncId: string, name = "High Value Users") => ({ sourceId: "crm", name, syncId });

/** The identify bodies received so far, as userId → list of trait values. */
function received(trait: string): Map<string, unknown[]> {
  const byUser = new Map<string, unknown[]>();
  for (const request of receiver.requests) {
    if (request.json?.type !== "identify") continue;
    const values = byUser.get(request.json.userId) ?? [];
    values.push(request.json.traits[trait]);
    byUser.set(request.json.userId, values);
  }
  return byUser;
}

async function expectDeliveries(total: number): Promise<void> {
  await waitFor(`${total} deliveries`, () => receiver.requests.length >= total, { timeoutMs: 30_000 });
  await fixture.deliveredAll();
  expect(receiver.requests.length).toBe(total);
}

async function grpcError(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isGrpcError(error)) throw new Error(`expected a gRPC error, got ${String(error)}`);
  return { code: error.code, details: error.details };
}

describe("audience sync, end to end to a real receiver", () => {
  it("emits every member first, then only the changes, then nothing, across restarts", async () => {
    const first = await fixture.client.audienceSnapshot(header("sync-1"), members(0, 1000), { chunk: 250 });
    expect(first.summary).toEqual({ trait: "high_value_users", total: 1000, emitted: 1000, alreadyApplied: false });
    await expectDeliveries(1000);
    const afterFirst = received("high_value_users");
    expect(afterFirst.size).toBe(1000);
    expect([...afterFirst.values()].every((values) => values.length === 1 && values[0] === true)).toBe(true);
    const sample = receiver.requests[0]!.json;
    expect(Object.keys(sample.traits)).toEqual(["high_value_users"]);
    expect(sample).toMatchObject({ version: 1, type: "identify" });

    // State lives in JetStream: a fresh process must diff against it.
    await fixture.restartAudienceSync();
    const second = members(10, 1000).concat(members(5000, 5005));
    const secondResult = await fixture.client.audienceSnapshot(header("sync-2"), second);
    expect(secondResult.summary).toMatchObject({ total: 995, emitted: 15 });
    await expectDeliveries(1015);
    const changes = receiver.requests.slice(1000).map((r) => [r.json.userId, r.json.traits.high_value_users]);
    expect(
      changes
        .filter(([, v]) => v === false)
        .map(([u]) => u)
        .sort(),
    ).toEqual(members(0, 10).sort());
    expect(
      changes
        .filter(([, v]) => v === true)
        .map(([u]) => u)
        .sort(),
    ).toEqual(members(5000, 5005).sort());

    await fixture.restartAudienceSync();
    const third = await fixture.client.audienceSnapshot(header("sync-3"), [...second].reverse());
    expect(third.summary).toMatchObject({ total: 995, emitted: 0 });
    await expectDeliveries(1015);
  });

  it("diffs against the state another instance committed, never a stale copy of its own", async () => {
    // Each instance keeps the state it committed last in memory; B's commit must make A's copy unusable.
    const instanceB = await fixture.startSecondAudienceSync();
    const viaA1 = await fixture.client.audienceSnapshot(header("sync-a1"), members(0, 100));
    expect(viaA1.summary).toMatchObject({ total: 100, emitted: 100 });
    const viaB = await instanceB.audienceSnapshot(header("sync-b"), members(50, 150));
    expect(viaB.summary).toMatchObject({ total: 100, emitted: 100 }); // 50 left, 50 joined
    // Against B's state (50-149): 50-99 leave, 150-199 join. Against A's stale 0-99 it would be 200 changes.
    const viaA2 = await fixture.client.audienceSnapshot(header("sync-a2"), members(100, 200));
    expect(viaA2.summary).toMatchObject({ total: 100, emitted: 100 });
    const viaA3 = await fixture.client.audienceSnapshot(header("sync-a3"), members(100, 201));
    expect(viaA3.summary).toMatchObject({ total: 101, emitted: 1 });
    await expectDeliveries(301);
    const finalValues = received("high_value_users");
    // Sorted: delivery may hand two calls to one user from different syncs over in either order.
    expect(finalValues.get("user-0")?.slice().sort()).toEqual([false, true]);
    expect(finalValues.get("user-75")?.slice().sort()).toEqual([false, true]);
    expect(finalValues.get("user-120")).toEqual([true]);
    expect(finalValues.get("user-200")).toEqual([true]);
  });

  it("a sync cut off mid-stream changes nothing, and repeating it whole emits each change once", async () => {
    await fixture.client.audienceSnapshot(header("base"), members(0, 100));
    await expectDeliveries(100);

    const next = members(50, 150); // 50 leave, 50 join
    const cut = await grpcError(fixture.client.audienceSnapshot(header("next"), next, { chunk: 10, cutAfter: 5 }));
    expect(status[cut.code]).toBe("CANCELLED");
    await fixture.deliveredAll();
    expect(receiver.requests.length).toBe(100);

    const whole = await fixture.client.audienceSnapshot(header("next"), next, { chunk: 10 });
    expect(whole.summary).toMatchObject({ total: 100, emitted: 100, alreadyApplied: false });
    await expectDeliveries(200);
    const byUser = received("high_value_users");
    for (const user of members(0, 50)) expect(byUser.get(user)).toEqual([true, false]);
    for (const user of members(100, 150)) expect(byUser.get(user)).toEqual([true]);
    for (const user of members(50, 100)) expect(byUser.get(user)).toEqual([true]);

    // The same sync id again: recognised, nothing emitted.
    const again = await fixture.client.audienceSnapshot(header("next"), next);
    expect(again.summary).toMatchObject({ emitted: 0, alreadyApplied: true });
    await expectDeliveries(200);
  });

  it("applies increments, emitting only effective changes", async () => {
    await fixture.client.audienceSnapshot(header("base"), members(0, 10));
    await expectDeliveries(10);
    const result = await fixture.client.audienceIncrement({
      header: { ...header("inc-1"), expectedCount: 0 },
      addedUserIds: ["user-3", "user-20", "user-21"],
      removedUserIds: ["user-0", "user-99"],
    });
    // user-3 was already in, user-99 never was.
    expect(result.summary).toMatchObject({ total: 11, emitted: 3 });
    await expectDeliveries(13);
    const last = receiver.requests.slice(10).map((r) => [r.json.userId, r.json.traits.high_value_users]);
    expect(last.sort()).toEqual([
      ["user-0", false],
      ["user-20", true],
      ["user-21", true],
    ]);
  });

  it("syncs computed traits: values, changes and removals", async () => {
    const first = await fixture.client.traitSnapshot({ sourceId: "crm", name: "Lifetime Value", syncId: "t1" }, [
      { userId: "a", value: 10 },
      { userId: "b", value: 20 },
      { userId: "c", value: "gold" },
    ]);
    expect(first.summary).toMatchObject({ trait: "lifetime_value", emitted: 3 });
    await expectDeliveries(3);
    const second = await fixture.client.traitSnapshot({ sourceId: "crm", name: "Lifetime Value", syncId: "t2" }, [
      { userId: "a", value: 10 },
      { userId: "b", value: 25 },
      { userId: "d", value: { tier: 2 } },
    ]);
    expect(second.summary).toMatchObject({ total: 3, emitted: 3 });
    await expectDeliveries(6);
    const changes = receiver.requests.slice(3).map((r) => [r.json.userId, r.json.traits.lifetime_value]);
    expect(changes.sort()).toEqual([
      ["b", 25],
      ["c", null],
      ["d", { tier: 2 }],
    ]);
    const increment = await fixture.client.traitIncrement({
      header: { sourceId: "crm", name: "Lifetime Value", syncId: "t3", expectedCount: 0 },
      setValues: [{ userId: "a", value: 11 }],
      removedUserIds: ["d"],
    });
    expect(increment.summary).toMatchObject({ total: 2, emitted: 2 });
  });
});

describe("ListAudiences", () => {
  it("lists each audience and trait with its last applied sync, across restarts", async () => {
    expect((await fixture.client.listAudiences()).audiences).toEqual([]);
    await fixture.client.audienceSnapshot(header("s1"), members(0, 5));
    await fixture.client.audienceIncrement({ header: { ...header("s2"), expectedCount: 0 }, addedUserIds: ["user-9"], removedUserIds: [] });
    // A repeated sync id changes nothing, so the last sync stays s2.
    await fixture.client.audienceSnapshot(header("s1"), members(0, 5));
    const before = Date.now();
    await fixture.client.traitSnapshot({ sourceId: "crm", name: "Lifetime Value", syncId: "t1" }, [{ userId: "a", value: 10 }]);
    await fixture.restartAudienceSync();

    const { audiences } = await fixture.client.listAudiences();
    expect(audiences).toMatchObject([
      {
        sourceId: "crm",
        kind: "audience",
        name: "High Value Users",
        trait: "high_value_users",
        total: 6,
        lastSync: { syncId: "s2", mode: "increment", emitted: 1 },
      },
      {
        sourceId: "crm",
        kind: "trait",
        name: "Lifetime Value",
        trait: "lifetime_value",
        total: 1,
        lastSync: { syncId: "t1", mode: "snapshot", emitted: 1 },
      },
    ]);
    expect(audiences[1]!.lastSync!.appliedAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect((await fixture.client.listAudiences("crm")).audiences).toHaveLength(2);
    expect((await fixture.client.listAudiences("other")).audiences).toEqual([]);
    const refused = await grpcError(fixture.client.listAudiences("crm.>"));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toMatch(/^source_id: /);
  });
});

describe("bad input leaves the state as it was", () => {
  it("refuses an unknown source, an empty or unusable name, and a missing token", async () => {
    const unknown = await grpcError(fixture.client.audienceSnapshot({ sourceId: "nope", name: "A", syncId: "s" }, ["u"]));
    expect([status[unknown.code], unknown.details]).toEqual(["NOT_FOUND", 'header.source_id: unknown source "nope"']);
    const empty = await grpcError(fixture.client.audienceSnapshot({ sourceId: "crm", name: " ", syncId: "s" }, ["u"]));
    expect([status[empty.code], empty.details]).toEqual(["INVALID_ARGUMENT", "header.name: must not be empty"]);
    const unusable = await grpcError(fixture.client.audienceSnapshot({ sourceId: "crm", name: "!!!", syncId: "s" }, ["u"]));
    expect(unusable.details).toMatch(/header\.name: .* has no letters or digits/);
    const noToken = await grpcError(fixture.client.audienceSnapshot(header("s"), ["u"], { token: "wrong-token-000000000" }));
    expect(status[noToken.code]).toBe("UNAUTHENTICATED");
    await fixture.deliveredAll();
    expect(receiver.requests).toHaveLength(0);
  });

  it("refuses a snapshot with a duplicate user, or with fewer members than announced, applying nothing", async () => {
    await fixture.client.audienceSnapshot(header("base"), members(0, 20));
    await expectDeliveries(20);

    const duplicate = await grpcError(fixture.client.audienceSnapshot(header("dup"), [...members(5, 30), "user-7"]));
    expect([status[duplicate.code], duplicate.details]).toEqual([
      "INVALID_ARGUMENT",
      'user_ids: duplicate user id "user-7": each user may appear once; nothing was applied',
    ]);
    const short = await grpcError(fixture.client.audienceSnapshot({ ...header("short"), expectedCount: 50 }, members(0, 40)));
    expect(short.details).toMatch(/expected_count: the stream carried 40 entries, not 50/);
    await fixture.deliveredAll();
    expect(receiver.requests).toHaveLength(20);

    // The state is still the base: the same members again change nothing.
    const same = await fixture.client.audienceSnapshot(header("same"), members(0, 20));
    expect(same.summary).toMatchObject({ emitted: 0, total: 20 });
  });
});
