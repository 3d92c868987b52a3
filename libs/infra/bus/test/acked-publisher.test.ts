import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamPublishOptions } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { NatsServer } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withAckedPublish } from "../src/index.js";

/**
 * withAckedPublish against nats.js's own publish, on a real nats-server: the same stored message,
 * acknowledgement and errors for every option it takes over, and nats.js itself for the others.
 */

let nats: NatsServer;
let nc: NatsConnection;
let plain: JetStreamClient;
let acked: JetStreamClient;

beforeAll(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url, noAsyncTraces: true });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "PLAIN", subjects: ["plain.>"] });
  await jsm.streams.add({ name: "ACKED", subjects: ["acked.>"] });
  plain = jetstream(nc);
  acked = withAckedPublish(jetstream(nc), nc);
});
afterAll(async () => {
  await nc.close();
  await nats.dispose();
});

/** What a publish did: its acknowledgement (less the stream's name) or its error's class, name, message and code. */
async function outcome(js: JetStreamClient, subject: string, options?: Partial<JetStreamPublishOptions>) {
  try {
    const { stream: _stream, ...ack } = await js.publish(subject, new TextEncoder().encode(`body of ${subject}`), options);
    return { ack };
  } catch (error) {
    const { constructor, name, message } = error as Error;
    return { error: { type: constructor.name, name, message, code: (error as { code?: unknown }).code } };
  }
}

/** The same publish through both clients, each on its own stream. */
async function both(subject: string, options?: () => Partial<JetStreamPublishOptions>) {
  return [await outcome(plain, `plain.${subject}`, options?.()), await outcome(acked, `acked.${subject}`, options?.())];
}

describe("withAckedPublish", () => {
  it("acknowledges, de-duplicates and refuses a failed expectation exactly as nats.js does", async () => {
    const [first, firstAcked] = await both("a", () => ({ msgID: "m-1" }));
    expect(firstAcked).toEqual(first);
    expect(firstAcked).toEqual({ ack: { seq: 1, duplicate: false } });
    const [again, againAcked] = await both("a", () => ({ msgID: "m-1" }));
    expect(againAcked).toEqual(again);
    expect(againAcked).toEqual({ ack: { seq: 1, duplicate: true } });

    const [expected, expectedAcked] = await both("a", () => ({ expect: { lastSubjectSequence: 1 }, headers: headers() }));
    expect(expectedAcked).toEqual(expected);
    expect(expectedAcked).toMatchObject({ ack: { seq: 2 } });
    const [wrong, wrongAcked] = await both("a", () => ({ expect: { lastSequence: 1 } }));
    expect(wrongAcked).toEqual(wrong);
    expect(wrongAcked).toMatchObject({ error: { type: "JetStreamApiError", code: 10071 } });
  });

  it("stores the message with its headers as nats.js does", async () => {
    const header = () => {
      const set = headers();
      set.set("Switchyard-Type", "switchyard.v1.CallBatch");
      return { headers: set, msgID: "m-headers" };
    };
    await both("h", header);
    const jsm = await jetstreamManager(nc);
    const [stored, storedAcked] = await Promise.all([
      jsm.streams.getMessage("PLAIN", { last_by_subj: "plain.h" }),
      jsm.streams.getMessage("ACKED", { last_by_subj: "acked.h" }),
    ]);
    expect([storedAcked?.header.get("Switchyard-Type"), storedAcked?.header.get("Nats-Msg-Id")]).toEqual([
      stored?.header.get("Switchyard-Type"),
      stored?.header.get("Nats-Msg-Id"),
    ]);
    expect(storedAcked?.string()).toBe("body of acked.h");
  });

  it("reports a subject no stream takes as nats.js does", async () => {
    const [none, noneAcked] = [await outcome(plain, "nowhere.a"), await outcome(acked, "nowhere.a")];
    expect(noneAcked).toEqual(none);
    expect(noneAcked).toMatchObject({ error: { name: "JetStreamNotEnabled" } });
  });

  it("times out as nats.js does when nothing answers, and leaves other options to nats.js", async () => {
    // A plain subscriber that never replies stands in for a JetStream that does not answer.
    const silent = nc.subscribe("silent.>");
    const [late, lateAcked] = [await outcome(plain, "silent.a", { timeout: 200 }), await outcome(acked, "silent.a", { timeout: 200 })];
    expect(lateAcked).toEqual(late);
    expect(lateAcked).toMatchObject({ error: { name: "TimeoutError" } });
    silent.unsubscribe();
    // retries is nats.js's own: the publish goes through it unchanged.
    expect(await outcome(acked, "acked.r", { retries: 2 })).toMatchObject({ ack: { duplicate: false } });
  });

  it("keeps 2,000 publishes in flight apart, each with its own acknowledgement, and makes no request of its own", async () => {
    const request = nc.request.bind(nc);
    let requests = 0;
    nc.request = (...args) => {
      requests++;
      return request(...args);
    };
    try {
      const acks = await Promise.all(
        Array.from({ length: 2_000 }, (_, n) => acked.publish(`acked.many.${n}`, undefined, { msgID: `many-${n}` })),
      );
      expect(new Set(acks.map((ack) => ack.seq)).size).toBe(2_000);
      expect(requests).toBe(0);
      await plain.publish("plain.many");
      expect(requests).toBe(1);
    } finally {
      nc.request = request;
    }
  });

  it("fails what waits when the connection closes", async () => {
    const own = await connect({ servers: nats.url, noAsyncTraces: true });
    const js = withAckedPublish(jetstream(own), own);
    own.subscribe("hold.>"); // never answers, so the publish waits
    const waiting = js.publish("hold.a", undefined, { timeout: 30_000 });
    await own.close();
    await expect(waiting).rejects.toThrow(/closed/i);
  });
});
