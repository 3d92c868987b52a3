import { readFile } from "node:fs/promises";
import { Kvm, type KV } from "@nats-io/kv";
import type { Call } from "@switchyard/contracts";
import { ServiceProcess, waitFor } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  countedAll,
  InsightsClient,
  publishFiltered,
  publishUsage,
  startTestBus,
  storedCall,
  track,
  type TestBus,
} from "@switchyard/testkit/fixtures/insights";

/**
 * Totals stay exact when messages are read twice: after insights is killed (SIGKILL, as a
 * child process) while it counts and started again, and with two replicas reading the same
 * streams at once.
 */

const SOURCES = ["web", "mobile"] as const;
const EVENTS = 12;

let bus: TestBus;
const processes: ServiceProcess[] = [];

beforeEach(async () => {
  bus = await startTestBus();
});
afterEach(async () => {
  await Promise.all(processes.splice(0).map((child) => child.dispose()));
  await bus.dispose();
});

interface Expected {
  /** "<source> <event>" → [total, filtered] */
  schema: Map<string, [number, number]>;
  /** "<source>" → accepted, filtered, rejected, delivered at "hook" */
  usage: Map<string, { accepted: number; filtered: number; rejected: number; delivered: number }>;
}

/** Publishes a backlog: `batches` batches of `perBatch` calls per source, blocked calls, and usage reports; returns the totals. */
async function publishBacklog(batches: number, perBatch: number, offset = 0): Promise<Expected> {
  const expected: Expected = { schema: new Map(), usage: new Map() };
  const at = new Date();
  const usage = (source: string) => {
    let entry = expected.usage.get(source);
    if (!entry) expected.usage.set(source, (entry = { accepted: 0, filtered: 0, rejected: 0, delivered: 0 }));
    return entry;
  };
  const count = (source: string, event: string, filtered: boolean) => {
    const key = `${source} ${event}`;
    const [total, blocked] = expected.schema.get(key) ?? [0, 0];
    expected.schema.set(key, [total + 1, blocked + (filtered ? 1 : 0)]);
    usage(source).accepted++;
    if (filtered) usage(source).filtered++;
  };
  const publishes: (() => Promise<unknown>)[] = [];
  for (let b = offset; b < offset + batches; b++) {
    for (const source of SOURCES) {
      const calls: Call[] = [];
      for (let i = 0; i < perBatch; i++) {
        const event = `Event ${(b * perBatch + i) % EVENTS}`;
        calls.push(storedCall(`${source}-${b}-${i}`, at, track(event, { i, source })));
        count(source, event, false);
      }
      publishes.push(() => bus.publisher.publishCalls(source, `batch-${b}`, calls));
    }
    if (b % 10 === 0) {
      const blocked = [storedCall(`blocked-${b}`, at, track("Blocked")), storedCall(`blocked-${b}-2`, at, track("Blocked"))];
      blocked.forEach(() => count("web", "Blocked", true));
      publishes.push(() => publishFiltered(bus, "web", `blocked-${b}`, blocked));
      usage("web").rejected += 3;
      publishes.push(() => publishUsage(bus, { id: `rejected-${b}`, rejected: { sourceId: "web", receivedAt: at, count: 3 } }));
    }
    usage("mobile").delivered += 2;
    const outcomes = { sourceId: "mobile", destinationId: "hook", at, delivered: 2, filtered: 0, failed: 1, deadLettered: 0 };
    publishes.push(() => publishUsage(bus, { id: `outcomes-${b}`, outcomes }));
  }
  for (let i = 0; i < publishes.length; i += 32) await Promise.all(publishes.slice(i, i + 32).map((publish) => publish()));
  return expected;
}

/** What insights answers, in the shape of Expected. */
async function answered(client: InsightsClient): Promise<Expected> {
  const result: Expected = { schema: new Map(), usage: new Map() };
  for (const source of SOURCES) {
    for (const entry of (await client.getSourceSchema(source)).entries)
      result.schema.set(`${source} ${entry.name}`, [entry.countTotal, entry.filteredTotal]);
  }
  for (const day of (await client.getUsage({})).days) {
    const delivered = day.destinations.find((d) => d.destinationId === "hook")?.delivered ?? 0;
    result.usage.set(day.sourceId, { accepted: day.accepted, filtered: day.filtered, rejected: day.rejected, delivered });
  }
  return result;
}

/** The counts of two backlogs together. */
function combined(first: Expected, second: Expected): Expected {
  const total: Expected = { schema: new Map(first.schema), usage: new Map(first.usage) };
  for (const [key, [count, blocked]] of second.schema) {
    const [before, blockedBefore] = total.schema.get(key) ?? [0, 0];
    total.schema.set(key, [before + count, blockedBefore + blocked]);
  }
  for (const [source, more] of second.usage) {
    const early = total.usage.get(source) ?? { accepted: 0, filtered: 0, rejected: 0, delivered: 0 };
    total.usage.set(source, {
      accepted: early.accepted + more.accepted,
      filtered: early.filtered + more.filtered,
      rejected: early.rejected + more.rejected,
      delivered: early.delivered + more.delivered,
    });
  }
  return total;
}

const sorted = (expected: Expected) => ({ schema: [...expected.schema].sort(), usage: [...expected.usage].sort() });

/** The calls stream's checkpoint, and the highest calls sequence any record holds. */
async function progress(kv: KV, usageKv: KV): Promise<{ checkpoint: number; recorded: number }> {
  const entry = await kv.get("checkpoint.calls");
  const checkpoint = entry?.operation === "PUT" ? entry.json<{ sequence: number }>().sequence : 0;
  let recorded = 0;
  for (const bucket of [kv, usageKv]) {
    for await (const key of await bucket.keys()) {
      if (key.startsWith("checkpoint.") || key.startsWith("names.")) continue;
      const record = await bucket.get(key);
      if (record?.operation === "PUT") recorded = Math.max(recorded, record.json<{ applied: { calls: number } }>().applied.calls);
    }
  }
  return { checkpoint, recorded };
}

describe("exact counts", () => {
  it("counts every call once when insights is killed with SIGKILL while it counts, again and again", async () => {
    let expected = await publishBacklog(150, 100);
    let published = 150;
    let lastSequence = (await bus.jsm.streams.info(bus.names.callsStream)).state.last_seq;
    const env = {
      ...bus.env,
      LOG_LEVEL: "info",
      // Small writes, often: a kill lands in the middle of one.
      INSIGHTS_MAX_PENDING: "2000",
      INSIGHTS_FLUSH_INTERVAL_MS: "50",
    };
    const start = async () => {
      const child = ServiceProcess.start("insights", { ...env, INSIGHTS_GRPC_PORT: "0" });
      processes.push(child);
      await child.waitForOutput(/insights ready/, 30_000);
      return child;
    };

    const kvm = new Kvm(bus.js);
    const [schemaKv, usageKv] = await Promise.all([kvm.open(bus.names.schemaBucket), kvm.open(bus.names.usageBucket)]);
    // Killed after records were written past the checkpoint (so the restart reads counted messages again), while calls are left.
    let replays = 0;
    let kills = 0;
    let child = await start();
    // Runs at the lower priority INSIGHTS_NICE sets (19 by default).
    const stat = await readFile(`/proc/${child.pid}/stat`, "utf8").catch(() => undefined);
    if (stat) expect(Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16])).toBe(19);
    while (kills < 8 && replays < 2) {
      const before = await progress(schemaKv, usageKv);
      if (before.checkpoint >= lastSequence) {
        if (replays > 0 || published >= 400) break;
        // Everything was counted before a kill landed between a flush's records and its checkpoint
        // (they are milliseconds apart): more calls, for the kills to try again.
        expected = combined(expected, await publishBacklog(50, 100, published));
        published += 50;
        lastSequence = (await bus.jsm.streams.info(bus.names.callsStream)).state.last_seq;
        continue;
      }
      await waitFor(
        "records written past the checkpoint",
        async () => {
          const now = await progress(schemaKv, usageKv);
          return (now.recorded > now.checkpoint && now.checkpoint > before.checkpoint) || now.checkpoint >= lastSequence;
        },
        { timeoutMs: 60_000, intervalMs: 5 },
      );
      child.signal("SIGKILL");
      expect((await child.exited()).signal).toBe("SIGKILL");
      kills++;
      const after = await progress(schemaKv, usageKv);
      if (after.recorded > after.checkpoint && after.checkpoint < lastSequence) replays++;
      child = await start();
      expect(child.output).toMatch(new RegExp(`"resumedAfter":\\{"calls":${after.checkpoint},`));
    }
    // At least one restart read messages again that records already held.
    expect(replays).toBeGreaterThan(0);

    await countedAll(bus, 120_000);
    const readyLine = child.logLines().find((line) => line.msg === "insights ready")!;
    const client = new InsightsClient(`127.0.0.1:${readyLine.grpcPort as number}`);
    try {
      expect(sorted(await answered(client))).toEqual(sorted(expected));
    } finally {
      client.close();
    }
  }, 240_000);

  it("counts every call once with two replicas reading the same streams, one of them started late", async () => {
    const first = await bus.startInsights({ INSIGHTS_MAX_PENDING: "3000" });
    const expectedEarly = await publishBacklog(40, 50);
    const second = await bus.startInsights({ INSIGHTS_MAX_PENDING: "1000", INSIGHTS_FLUSH_INTERVAL_MS: "30" });
    const expectedLate = await publishBacklog(40, 50, 40);
    await countedAll(bus);
    // Both replicas have read everything: the first one's last flush may still be on its way.
    await first.stop();
    const total = combined(expectedEarly, expectedLate);
    const client = new InsightsClient(`127.0.0.1:${second.grpcPort}`);
    try {
      expect(sorted(await answered(client))).toEqual(sorted(total));
    } finally {
      client.close();
    }
  }, 120_000);
});
