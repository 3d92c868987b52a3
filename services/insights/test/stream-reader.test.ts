import { createLogger } from "@switchyard/platform";
import { afterAll, beforeAll, expect, it } from "vitest";
import { StreamReader } from "../src/stream-reader.js";
import { startTestBus, type TestBus } from "./insights-fixture.js";

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
