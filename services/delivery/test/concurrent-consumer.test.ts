import { AckPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { createLogger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConcurrentConsumer } from "../src/pipeline/concurrent-consumer.js";
import { HandlingFailures } from "../src/pipeline/handling-failures.js";

let nats: NatsServer;
let nc: NatsConnection;
beforeEach(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url });
});
afterEach(async () => {
  await nc.close();
  await nats.dispose();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const logger = createLogger({ service: "test", level: "silent" });
const FAILURE_OPTIONS = { failureDelayMs: 100, maxFailureDelayMs: 400, maxFailures: 4 };
/** Failures handled as delivery handles them, setting aside with `setAside`. */
const failures = (setAside: (message: JsMsg, error: unknown) => Promise<void> = () => Promise.reject(new Error("not expected"))) =>
  new HandlingFailures(FAILURE_OPTIONS, setAside, logger);

async function workStream(): Promise<{ stream: string; jsm: Awaited<ReturnType<typeof jetstreamManager>> }> {
  const stream = uniqueNamespace().toUpperCase();
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [`${stream}.work`] });
  return { stream, jsm };
}

describe("concurrent consumer", () => {
  it("handles each message once when handlers outlast the ack wait: none waits unacknowledged for a free slot", async () => {
    const { stream, jsm } = await workStream();
    // A short ack wait stands for the real one (30 s) against handlers that take longer.
    await jsm.consumers.add(stream, { durable_name: "worker", ack_policy: AckPolicy.Explicit, ack_wait: nanos(1_000) });
    const js = jetstream(nc);
    for (let i = 0; i < 4; i++) await js.publish(`${stream}.work`, new Uint8Array([i]));

    const handled: { seq: number; redelivered: boolean }[] = [];
    const consumer = ConcurrentConsumer.start(
      await js.consumers.get(stream, "worker"),
      async (message: JsMsg) => {
        handled.push({ seq: message.seq, redelivered: message.redelivered });
        await sleep(1_500); // longer than the ack wait; the heartbeat keeps this one alive
        message.ack();
      },
      { concurrency: 1, heartbeatMs: 300, failures: failures() },
      logger,
    );
    try {
      await waitFor("four messages handled", () => handled.length >= 4, { timeoutMs: 20_000 });
      await waitFor("the consumer to have nothing pending", async () => {
        const info = await jsm.consumers.info(stream, "worker");
        return info.num_pending === 0 && info.num_ack_pending === 0;
      });
    } finally {
      await consumer.stop();
    }
    expect(handled).toEqual([1, 2, 3, 4].map((seq) => ({ seq, redelivered: false })));
  });

  it("sets a message aside after maxFailures failed handlings, with growing delays, and keeps handling the others", async () => {
    const { stream, jsm } = await workStream();
    await jsm.consumers.add(stream, { durable_name: "worker", ack_policy: AckPolicy.Explicit, ack_wait: nanos(30_000) });
    const js = jetstream(nc);
    for (const text of ["ok-1", "poison", "ok-2"]) await js.publish(`${stream}.work`, new TextEncoder().encode(text));

    const tries: number[] = [];
    const handled: string[] = [];
    const setAside: string[] = [];
    const consumer = ConcurrentConsumer.start(
      await js.consumers.get(stream, "worker"),
      async (message: JsMsg) => {
        if (message.string() === "poison") {
          tries.push(Date.now());
          throw new Error("always fails");
        }
        handled.push(message.string());
        message.ack();
      },
      {
        concurrency: 2,
        heartbeatMs: 1_000,
        failures: failures(async (message, error) => {
          setAside.push(`${message.string()}: ${(error as Error).message}`);
          message.ack();
        }),
      },
      logger,
    );
    try {
      await waitFor("the poison message to be set aside", () => setAside.length === 1, { timeoutMs: 20_000 });
      await waitFor("the consumer to have nothing pending", async () => {
        const info = await jsm.consumers.info(stream, "worker");
        return info.num_pending === 0 && info.num_ack_pending === 0;
      });
    } finally {
      await consumer.stop();
    }
    expect(handled.sort()).toEqual(["ok-1", "ok-2"]);
    expect(setAside).toEqual(["poison: always fails"]);
    expect(tries).toHaveLength(FAILURE_OPTIONS.maxFailures);
    // Redelivered no sooner than the doubled delays asked: 100, 200, 400 ms.
    const gaps = tries.slice(1).map((at, index) => at - tries[index]!);
    [100, 200, 400].forEach((delay, index) => expect(gaps[index]).toBeGreaterThanOrEqual(delay - 20));
  });

  it("keeps a message whose setting aside fails, and sets it aside once the bus takes it", async () => {
    const { stream, jsm } = await workStream();
    await jsm.consumers.add(stream, { durable_name: "worker", ack_policy: AckPolicy.Explicit, ack_wait: nanos(30_000) });
    const js = jetstream(nc);
    await js.publish(`${stream}.work`, new TextEncoder().encode("poison"));

    let setAsideCalls = 0;
    let storedAt = 0;
    const consumer = ConcurrentConsumer.start(
      await js.consumers.get(stream, "worker"),
      () => Promise.reject(new Error("always fails")),
      {
        concurrency: 1,
        heartbeatMs: 1_000,
        failures: failures(async (message) => {
          setAsideCalls++;
          if (setAsideCalls < 3) throw new Error("poison stream unavailable");
          storedAt = setAsideCalls;
          message.ack();
        }),
      },
      logger,
    );
    try {
      await waitFor("the message to be set aside on the third try", () => storedAt === 3, { timeoutMs: 20_000 });
      await waitFor("the consumer to have nothing pending", async () => (await jsm.consumers.info(stream, "worker")).num_ack_pending === 0);
    } finally {
      await consumer.stop();
    }
  });
});
