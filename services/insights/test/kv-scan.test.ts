import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readLatestValues } from "../src/kv-scan.js";
import { startTestBus, type TestBus } from "@switchyard/testkit/fixtures/insights";

let bus: TestBus;
beforeAll(async () => {
  bus = await startTestBus();
});
afterAll(async () => {
  await bus?.dispose();
});

it("reads the current value of every key under a filter, and only those, while other writers keep rewriting them", async () => {
  const kv = await new Kvm(bus.js).create("scan_test", { history: 1 });
  for (let i = 0; i < 40; i++) await kv.put(`schema.web.track.k${i}`, JSON.stringify({ i, round: 0 }));
  for (let i = 0; i < 5; i++) await kv.put(`schema.webby.track.k${i}`, JSON.stringify({ i }));
  await kv.put("names.web", JSON.stringify({ digests: [] }));
  await kv.put("schema.web.track.gone", "{}");
  await kv.delete("schema.web.track.gone");
  expect(await readLatestValues(bus.js, "scan_test", "schema.nobody.>")).toEqual([]);

  let writing = true;
  const writer = (async () => {
    for (let round = 1; writing; round++) {
      await Promise.all(Array.from({ length: 40 }, (_, i) => kv.put(`schema.web.track.k${i}`, JSON.stringify({ i, round }))));
    }
  })();
  try {
    for (let read = 0; read < 20; read++) {
      const values = await readLatestValues<{ i: number }>(bus.js, "scan_test", "schema.web.>");
      expect(values.map((entry) => entry.value.i).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(new Set(values.map((entry) => entry.key)).size).toBe(40);
    }
  } finally {
    writing = false;
    await writer;
  }
});
