import { protoCallToJson } from "@switchyard/calls";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";
import { Analytics } from "../src/index.js";
import { LIBRARY } from "../src/version.js";
import { batchesWith, recordEvents, sampleCall, send } from "./support.js";

// Its own ingest and nats-server: reading 10,000 calls back should not slow the other tests down.
let fixture: IngestFixture;

beforeAll(async () => {
  fixture = await startIngestFixture();
});

afterAll(async () => {
  await fixture.dispose();
});

it("delivers 10,000 calls of every type exactly once, with their fields intact", async () => {
  const analytics = new Analytics(WRITE_KEY, { endpoint: `127.0.0.1:${fixture.ingest.grpcPort}` });
  const events = recordEvents(analytics);
  const sent = new Map<string, number>();
  for (let index = 0; index < 10_000; index++) sent.set(send(analytics, index), index);
  await analytics.flush();

  expect(events.failed).toEqual([]);
  expect(events.delivered.flatMap((event) => event.messageIds).sort()).toEqual([...sent.keys()].sort());
  const batches = await batchesWith(fixture, sent.keys());
  expect(new Set(batches.map((stored) => stored.msgId)).size).toBe(batches.length);
  const seen = new Set<string>();
  for (const stored of batches) {
    expect(stored.batch.calls.length).toBeLessThanOrEqual(20);
    for (const call of stored.batch.calls) {
      expect(seen.has(call.messageId)).toBe(false);
      seen.add(call.messageId);
      const { type, message } = sampleCall(sent.get(call.messageId)!);
      const expected: Record<string, unknown> = {
        ...message,
        type,
        messageId: call.messageId,
        context: { ...message.context, library: LIBRARY },
        timestamp: (message.timestamp as Date | undefined)?.toISOString() ?? call.receivedAt!.toISOString(),
      };
      expect(protoCallToJson(call)).toEqual(expected);
    }
  }
  expect(seen.size).toBe(10_000);
  await analytics.close();
});
