import { jetstream, jetstreamManager, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { busNames, ensureIntakeStreams, type BusNames } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryStats, ensureStatsConsumer, STATS_CONSUMER, type StatsConsumer } from "../src/api/delivery-stats.js";
import { OutcomeReports, OutcomeTally } from "../src/pipeline/outcome-reports.js";

const logger = createLogger({ service: "test", level: "silent" });

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;

beforeAll(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

/** A namespace with the usage stream, the stats consumer (short ack wait: redeliveries come soon) and the stats bucket. */
async function setUp(): Promise<{ names: BusNames; kv: KV; consumer: () => Promise<StatsConsumer> }> {
  const names = busNames(uniqueNamespace());
  const jsm = await jetstreamManager(nc);
  await ensureIntakeStreams(jsm, names, { duplicateWindowMs: 120_000, maxAgeMs: 3_600_000, replicas: 1 });
  await ensureStatsConsumer(jsm, names, { ackWaitMs: 1_000 });
  const kv = await new Kvm(js).create(names.deliveryStatsBucket, { history: 1 });
  return { names, kv, consumer: () => js.consumers.get(names.usageStream, STATS_CONSUMER) };
}

/** The consumer, with every ack of the first `dropped` messages lost: as when a replica dies after writing a record. */
function losingAcks(consumer: StatsConsumer, dropped: number): StatsConsumer {
  let seen = 0;
  return {
    info: (cached) => consumer.info(cached),
    consume: async (options) => {
      const messages = await consumer.consume(options);
      return {
        close: () => messages.close(),
        async *[Symbol.asyncIterator]() {
          for await (const message of messages) {
            if (seen++ >= dropped) yield message;
            else
              yield new Proxy(message, {
                get: (target, key) => (key === "ack" ? () => undefined : Reflect.get(target, key, target)),
              }) as JsMsg;
          }
        },
      };
    },
  };
}

async function publishReports(names: BusNames, perDestination: Record<string, number>): Promise<void> {
  const reports = new OutcomeReports(js, names);
  const publishes: Promise<void>[] = [];
  for (const [destinationId, count] of Object.entries(perDestination)) {
    for (let index = 0; index < count; index++) {
      const tally = new OutcomeTally("web", destinationId);
      tally.delivered = 2;
      tally.failed = 1;
      if (index % 10 === 0) tally.deadLettered = 1;
      publishes.push(tally.empty ? Promise.resolve() : reports.publish(tally, `calls-${index}`));
    }
  }
  await Promise.all(publishes);
}

function expected(count: number) {
  return { delivered: 2 * count, failedAttempts: count, deadLettered: Math.ceil(count / 10) };
}

/** The records, in a fixed order so they compare as text. */
async function totals(stats: DeliveryStats): Promise<Record<string, unknown>> {
  return Object.fromEntries([...(await stats.counts())].sort(([a], [b]) => a.localeCompare(b)));
}

describe("DeliveryStats", () => {
  it("counts a report redelivered after its record was written once", async () => {
    const { names, kv, consumer } = await setUp();
    await publishReports(names, { a: 30, b: 20 });
    const stats = new DeliveryStats(kv, logger);
    await stats.start(losingAcks(await consumer(), 25));
    const want = { a: expected(30), b: expected(20) };
    await waitFor("every report folded", async () => JSON.stringify(await totals(stats)) === JSON.stringify(want), { timeoutMs: 10_000 });
    // The 25 reports whose acks were lost stay pending until they come back after the 1 s ack wait, and are skipped.
    const jsm = await jetstreamManager(nc);
    await waitFor(
      "the lost acks' reports redelivered and acked",
      async () => {
        const info = await jsm.consumers.info(names.usageStream, STATS_CONSUMER);
        return info.num_ack_pending === 0 && info.num_pending === 0;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    expect(await totals(stats)).toEqual(want);
    // A second publish of the same reports (a message handled again) is dropped by the stream's dedup:
    // nothing new is stored, so nothing more can be folded.
    const stored = (await jsm.streams.info(names.usageStream)).state.last_seq;
    await publishReports(names, { a: 30 });
    expect((await jsm.streams.info(names.usageStream)).state.last_seq).toBe(stored);
    const info = await jsm.consumers.info(names.usageStream, STATS_CONSUMER);
    expect([info.num_pending, info.num_ack_pending]).toEqual([0, 0]);
    expect(await totals(stats)).toEqual(want);
    await stats.close();
  });

  it("gives exact totals with several replicas folding at once, one of them losing acks", async () => {
    const { names, kv, consumer } = await setUp();
    const folders = [new DeliveryStats(kv, logger), new DeliveryStats(kv, logger), new DeliveryStats(kv, logger)];
    await folders[0]!.start(await consumer());
    await folders[1]!.start(await consumer());
    await folders[2]!.start(losingAcks(await consumer(), 200));
    const counts = { a: 700, b: 400, c: 150 };
    await Promise.all([publishReports(names, counts), publishReports(names, { a: 700 })]);
    const want = { a: expected(700), b: expected(400), c: expected(150) };
    const jsm = await jetstreamManager(nc);
    await waitFor(
      "every report folded and acked",
      async () => {
        const info = await jsm.consumers.info(names.usageStream, STATS_CONSUMER);
        return info.num_ack_pending === 0 && info.num_pending === 0 && JSON.stringify(await totals(folders[0]!)) === JSON.stringify(want);
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(await totals(folders[1]!)).toEqual(want);
    await Promise.all(folders.map((folder) => folder.close()));
  });

  it("adds to a record written before reports were folded", async () => {
    const { names, kv, consumer } = await setUp();
    await kv.put("destination.old", JSON.stringify({ delivered: 7, failedAttempts: 3, deadLettered: 1 }));
    const stats = new DeliveryStats(kv, logger);
    await stats.start(await consumer());
    await publishReports(names, { old: 10 });
    await waitFor("the reports folded", async () => (await stats.counts("old")).get("old")?.delivered === 27, { timeoutMs: 10_000 });
    expect(await stats.counts("old")).toEqual(new Map([["old", { delivered: 27, failedAttempts: 13, deadLettered: 2 }]]));
    await stats.close();
  });
});
