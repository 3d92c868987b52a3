import { jetstream } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { busNames } from "@switchyard/bus";
import { NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIRST_ATTEMPT_HORIZON_MS, RateLimits } from "../src/pipeline/rate-limits.js";

/*
 * Two RateLimits on two connections stand for two delivery replicas: they
 * share one destination's schedule in the KV bucket, and whatever they claim,
 * at the same time, never overlaps.
 */
let nats: NatsServer;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  nats = await NatsServer.start();
});
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await nats.dispose();
});

async function replicas(count: number): Promise<{ limits: RateLimits[]; kv: KV }> {
  const bucket = busNames(uniqueNamespace()).rateLimitBucket;
  const limits: RateLimits[] = [];
  let kv: KV | undefined;
  for (let i = 0; i < count; i++) {
    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    kv = await new Kvm(jetstream(nc)).create(bucket, { history: 1 });
    limits.push(new RateLimits(kv));
  }
  return { limits, kv: kv! };
}

/** Sorted [start, end) of each claim; throws when two overlap. */
function expectDisjoint(claims: { at: number; slots: number }[], slotMs: number): void {
  const sorted = claims.map(({ at, slots }) => [at, at + slots * slotMs] as const).sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < sorted.length; i++) expect(sorted[i]![0]).toBeGreaterThanOrEqual(sorted[i - 1]![1] - 1e-6);
}

describe("RateLimits across replicas", () => {
  it("hands out slots that never overlap, and refuses first attempts beyond a second ahead", async () => {
    const { limits } = await replicas(2);
    const limit = 100;
    const started = Date.now();
    // Each replica has 150 calls at once, some of them with two URLs: more than a second's worth together.
    const asks = limits.flatMap((rateLimits, replica) =>
      Array.from({ length: 150 }, (_, i) => {
        const slots = (i + replica) % 5 === 0 ? 2 : 1;
        return rateLimits.firstAttempt("hook", limit, slots).then((at) => ({ at, slots }));
      }),
    );
    const results = await Promise.all(asks);
    const granted = results.filter((r): r is { at: number; slots: number } => r.at !== undefined);
    expectDisjoint(granted, 1000 / limit);
    const slotsGranted = granted.reduce((sum, r) => sum + r.slots, 0);
    // About a second's worth (plus what the time the claims took let through), the rest refused.
    expect(slotsGranted).toBeGreaterThanOrEqual(limit);
    expect(slotsGranted).toBeLessThanOrEqual((limit * (Date.now() - started + FIRST_ATTEMPT_HORIZON_MS + 200)) / 1000);
    expect(results.length - granted.length).toBeGreaterThan(0);
    // A claim starts within the horizon; it may run on for up to 200 ms of slots (a chunk).
    expect(Math.max(...granted.map((r) => r.at))).toBeLessThanOrEqual(Date.now() + FIRST_ATTEMPT_HORIZON_MS + 200);
  });

  it("gives waiting-room places after the taken slots, and turns the slots at those places", async () => {
    const { limits } = await replicas(2);
    const limit = 50;
    const [a, b] = limits as [RateLimits, RateLimits];
    // a fills the next second; b's calls then wait in the waiting room.
    const firsts = await Promise.all(Array.from({ length: 60 }, () => a.firstAttempt("hook", limit, 1)));
    const lastSlot = Math.max(...firsts.filter((at) => at !== undefined));
    expect(await b.firstAttempt("hook", limit, 1)).toBeUndefined();
    const places = await b.places("hook", limit, [50, 50]);
    expect(places[0]).toBeGreaterThanOrEqual(lastSlot + 20);
    expect(places[1]! - places[0]!).toBe(1_000);
    // The waiting room holds new first attempts back, even once the taken slots are near.
    expect(await a.firstAttempt("hook", limit, 1)).toBeUndefined();
    // The first group's turn: its slots start where the taken ones end.
    const turn = await a.turn("hook", limit, 50);
    expect(turn).toMatchObject({ granted: true, pace: { at: places[0], intervalMs: 20 } });
    const second = await b.turn("hook", limit, 50);
    expect(second).toMatchObject({ granted: true, pace: { at: places[0]! + 1_000 } });
    // Both turns taken: a third is booked for now, and told when to come back.
    const third = await a.turn("hook", limit, 50);
    expect(third).toEqual({ granted: false, freeAt: places[0]! + 2_000 });
  });

  it("sends first attempts to the waiting room, rather than claiming again and again, when claims come back after their slots", async () => {
    const { kv } = await replicas(1);
    // The bus answers every write 300 ms late: a claim's slots (50 ms of them) have passed when it returns.
    const slowKv = new Proxy(kv, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if ((property !== "update" && property !== "create") || typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          await new Promise((resolve) => setTimeout(resolve, 300));
          return result;
        };
      },
    });
    const rateLimits = new RateLimits(slowKv);
    const slots = await Promise.all(Array.from({ length: 5 }, () => rateLimits.firstAttempt("hook", 100, 1)));
    expect(slots).toEqual([undefined, undefined, undefined, undefined, undefined]);
    // A single claim was made for them: the schedule moved by their five slots only.
    const entry = await kv.get("hook");
    expect(entry?.revision).toBeGreaterThan(0);
    const schedule = entry!.json<{ next: number }>();
    expect(schedule.next - Date.now()).toBeLessThan(0);
  });

  it("starts over from a record that is not a schedule", async () => {
    const { limits, kv } = await replicas(1);
    await kv.put("hook", "not json");
    expect(await limits[0]!.firstAttempt("hook", 10, 1)).toBeGreaterThan(0);
  });
});
