import { AckPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { createLogger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConcurrentConsumer } from "../src/concurrent-consumer.js";

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

describe("concurrent consumer", () => {
  it("handles each message once when handlers outlast the ack wait: none waits unacknowledged for a free slot", async () => {
    const stream = uniqueNamespace().toUpperCase();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: stream, subjects: [`${stream}.work`] });
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
      { concurrency: 1, heartbeatMs: 300, failureDelayMs: 100 },
      createLogger({ service: "test", level: "silent" }),
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
});
