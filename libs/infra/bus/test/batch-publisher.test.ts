import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Call } from "@switchyard/contracts";
import { connectBus, createLogger, ServiceError, type BusConnection } from "@switchyard/platform";
import { NatsServer, readCallBatches, uniqueNamespace, waitFor, makeCall } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  BUS_MESSAGE_TYPE_NAMES,
  BatchPublisher,
  DEFAULT_CALLS_STREAM_OPTIONS,
  PUBLISHED_BATCH_CALLS,
  busNames,
  ensureCallsStream,
  type BusNames,
} from "../src/index.js";

let nats: NatsServer;
let bus: BusConnection;
let names: BusNames;

beforeEach(async () => {
  nats = await NatsServer.start();
  bus = await connectBus({ servers: [nats.url], name: "bus-test", logger: createLogger({ service: "test", level: "silent" }) });
  names = busNames(uniqueNamespace());
  await ensureCallsStream(await jetstreamManager(bus.nc), names, DEFAULT_CALLS_STREAM_OPTIONS);
});
afterEach(async () => {
  // Closed, not drained: one test takes the server away.
  await bus.nc.close();
  await nats.dispose();
});

function identify(n: number): Call {
  const at = new Date("2026-01-01T00:00:00Z");
  return makeCall({
    messageId: `m-${n}`,
    userId: `user-${n}`,
    timestamp: at,
    receivedAt: at,
    payload: { $case: "identify", value: { traits: { n } } },
  });
}

describe("BatchPublisher", () => {
  it("publishes calls in batches under deterministic ids, so running the same work again stores nothing new", async () => {
    const publisher = new BatchPublisher({ bus, js: jetstream(bus.nc), names });
    const count = 2 * PUBLISHED_BATCH_CALLS + 7;
    const calls = () => Array.from({ length: count }, (_, n) => identify(n));

    expect(await publisher.publishCalls("crm", "audience:abc", calls())).toBe(count);
    expect(await publisher.publishCalls("crm", "audience:abc", calls())).toBe(count);

    const stored = await readCallBatches(bus.nc, names);
    expect(stored.map((s) => s.msgId)).toEqual(["crm:audience:abc:0", "crm:audience:abc:1", "crm:audience:abc:2"]);
    expect(stored.map((s) => s.batch.calls.length)).toEqual([PUBLISHED_BATCH_CALLS, PUBLISHED_BATCH_CALLS, 7]);
    expect(stored.every((s) => s.type === BUS_MESSAGE_TYPE_NAMES.callBatch && s.subject === names.callsSubject("crm"))).toBe(true);
    expect(stored.flatMap((s) => s.batch.calls.map((call) => call.messageId))).toEqual(calls().map((call) => call.messageId));
  });

  it("names a part of a batch in its message id, and reports each publish", async () => {
    const reports: boolean[] = [];
    const publisher = new BatchPublisher({
      bus,
      js: jetstream(bus.nc),
      names,
      timeoutMs: 5_000,
      metrics: { published: (_seconds, confirmed) => reports.push(confirmed) },
    });
    const payload = new Uint8Array(0);
    await publisher.publish({ batchId: "b-1", sourceId: "web", payload });
    const again = await publisher.publish({ batchId: "b-1", sourceId: "web", payload });
    await publisher.publish({ batchId: "b-2", sourceId: "web", payload, part: { first: 0, last: 9 } });
    await publisher.idle();

    expect(again.duplicate).toBe(true);
    expect((await readCallBatches(bus.nc, names)).map((s) => s.msgId)).toEqual(["web:b-1", "web:b-2#calls=0-9"]);
    expect(reports).toEqual([true, true, true]);
  });

  it("refuses at once with UNAVAILABLE while the bus is down", async () => {
    const publisher = new BatchPublisher({ bus, js: jetstream(bus.nc), names });
    await nats.stop({ kill: true });
    await waitFor("the link to go down", () => !bus.isConnected());
    const error = await publisher.publishCalls("crm", "delete:x", [identify(1)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("UNAVAILABLE");
  });
});
