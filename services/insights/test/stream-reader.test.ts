import { createLogger } from "@switchyard/platform";
import { afterAll, beforeAll, expect, it } from "vitest";
import { StreamReader } from "../src/stream-reader.js";
import { startTestBus, type TestBus } from "@switchyard/testkit/fixtures/insights";

let bus: TestBus;
beforeAll(async () => {
  bus = await startTestBus();
  await bus.jsm.streams.add({ name: "READER_TEST", subjects: ["reader.>"] });
});
afterAll(async () => {
  await bus?.dispose();
});

const logger = createLogger({ service: "test", level: "silent" });

async function publish(from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) await bus.js.publish(`reader.${n % 3}`, new TextEncoder().encode(String(n)));
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const pauseMs of [0, 200]) {
  it(`reads every message once and in order, from after the given sequence, as it is stored (pause ${pauseMs} ms)`, async () => {
    const stream = await bus.jsm.streams.info("READER_TEST");
    const first = stream.state.last_seq;
    await publish(1, 30);
    const seen: number[] = [];
    const positions: number[] = [];
    const reader = await StreamReader.start({
      js: bus.js,
      stream: "READER_TEST",
      afterSequence: first + 10,
      handle: (message) => {
        seen.push(Number(new TextDecoder().decode(message.data)));
        // Now and then the handler waits, as counting does while it flushes.
        if (seen.length % 7 === 0) return new Promise((resolve) => setTimeout(resolve, 5));
      },
      position: (sequence) => positions.push(sequence),
      pauseMs,
      logger,
    });
    try {
      await until("the stored messages", () => positions.length === 20);
      // Stored while the reader waits between rounds (or follows the tail).
      await publish(31, 45);
      await until("the later messages", () => positions.length === 35);
      expect(seen).toEqual(Array.from({ length: 35 }, (_, index) => 11 + index));
      expect(positions).toEqual(Array.from({ length: 35 }, (_, index) => first + 11 + index));
    } finally {
      await reader.stop();
    }
    // Each round's consumer is deleted when the round ends: none is left once reading stopped.
    expect((await bus.jsm.streams.info("READER_TEST")).state.consumer_count).toBe(0);
  });
}

it("stops when told to while a round's consumer is being made, and leaves no consumer", async () => {
  const stream = await bus.jsm.streams.info("READER_TEST");
  await publish(1, 3);
  let opened = 0;
  let stopped: Promise<void> | undefined;
  // The real client, but the reader is stopped while it makes its second round's consumer: that
  // round is opened and never read.
  const js = {
    consumers: {
      get: async (...args: Parameters<typeof bus.js.consumers.get>) => {
        const consumer = await bus.js.consumers.get(...args);
        if (++opened === 2) stopped = reader.stop();
        return consumer;
      },
    },
  } as unknown as typeof bus.js;
  const reader = await StreamReader.start({
    js,
    stream: "READER_TEST",
    afterSequence: stream.state.last_seq,
    handle: () => undefined,
    position: () => undefined,
    pauseMs: 10,
    logger,
  });
  await until("the second round", () => stopped !== undefined);
  let done = false;
  void stopped!.then(() => (done = true));
  await until("the reader to stop", () => done);
  expect((await bus.jsm.streams.info("READER_TEST")).state.consumer_count).toBe(0);
});
