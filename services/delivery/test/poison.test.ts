import { BUS_MESSAGE_TYPE_HEADER, BUS_MESSAGE_TYPE_NAMES, POISON_HEADERS, busMessageHeaders } from "@switchyard/bus";
import { CallBatch } from "@switchyard/contracts";
import { jetstreamManager } from "@nats-io/jetstream";
import { headerSafeId } from "@switchyard/bus";
import { MetricsSnapshot, waitFor, type WebhookReceiver } from "@switchyard/testkit";
import { verifyStandardWebhook } from "@switchyard/webhook-verify";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, webSourceTo, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

const SIGNING_SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
/** Ids older versions of ingest accepted, and ids any version accepts that are not header-safe. */
const HOSTILE_IDS = ["bad\nid", "cr\r\nlf", "nul\0id", " spaced ", "😀 emoji", "x".repeat(200), "h_imitation"];

const scope = deliveryPerTest();
const receiver = (status: number) => scope.receiver(() => ({ status }));

async function deadLetterIds(f: DeliveryFixture, destinationId: string): Promise<Map<string, string>> {
  const entries = (await f.admin.listDeadLetters({ destinationId, limit: 1000 })).entries;
  return new Map(entries.map((entry) => [entry.deadLetter!.task!.call!.messageId, entry.deadLetter!.reason]));
}

describe("calls whose ids are not header-safe", () => {
  it("reach an end state at every destination with one request per attempt: delivered, dead-lettered at once, or after the window", async () => {
    const [ok, refused, failing, signed] = await Promise.all([receiver(200), receiver(400), receiver(500), receiver(200)]);
    const f = await scope.start({
      workspace: webSourceTo("wk_poison_test_0001", {
        ok: ok.url(),
        refused: refused.url(),
        failing: failing.url(),
        signed: { webhooks: [{ url: signed.url() }], standardWebhooks: { signingSecret: SIGNING_SECRET } },
      }),
      // A short window, so the failing destination's calls reach their end within the test.
      env: { DELIVERY_RETRY_WINDOW_MS: "3000", DELIVERY_RETRY_BASE_DELAY_MS: "200", DELIVERY_RETRY_MAX_DELAY_MS: "400" },
    });
    await f.publishCalls("web", [busCall("good-1", trackPayload()), ...HOSTILE_IDS.map((id) => busCall(id, trackPayload()))]);
    const all = ["good-1", ...HOSTILE_IDS];

    await waitFor("every call dead-lettered at the 400 and the 500 destination", async () => {
      const [refusedDead, failingDead] = await Promise.all([deadLetterIds(f, "refused"), deadLetterIds(f, "failing")]);
      return refusedDead.size === all.length && failingDead.size === all.length;
    });
    await f.settled();
    const refusedDead = await deadLetterIds(f, "refused");
    const failingDead = await deadLetterIds(f, "failing");
    for (const id of all) {
      expect(ok.byMessageId(id), `ok: ${JSON.stringify(id)}`).toHaveLength(1);
      expect(signed.byMessageId(id), `signed: ${JSON.stringify(id)}`).toHaveLength(1);
      expect(refused.byMessageId(id), `refused: ${JSON.stringify(id)}`).toHaveLength(1);
      expect(refusedDead.get(id)).toBe("permanent_failure");
      expect(failingDead.get(id)).toBe("window_exhausted");
    }
    // The 500 destination's requests are bounded by the retry schedule, not a redelivery loop.
    expect(failing.requests.length).toBeLessThanOrEqual(all.length * 12);

    for (const id of all) {
      const [request] = signed.byMessageId(id);
      expect(request!.headers["webhook-id"]).toBe(headerSafeId(id));
      expect(verifyStandardWebhook(request!.raw, request!.headers, SIGNING_SECRET)).toMatchObject({ valid: true });
    }
    expect(signed.byMessageId("good-1")[0]!.headers["webhook-id"]).toBe("good-1");
    const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${f.delivery.opsPort}/metrics`);
    expect(metrics.value("switchyard_delivery_poison_messages_total")).toBe(0);
  });
});

/** Source "web" connected to destination "ok", whose receiver answers 200. */
async function deliveringToOneReceiver(): Promise<{ ok: WebhookReceiver; f: DeliveryFixture }> {
  const ok = await receiver(200);
  const f = await scope.start({ workspace: webSourceTo("wk_poison_test_0001", { ok: ok.url() }) });
  return { ok, f };
}

describe("messages delivery cannot handle", () => {
  it("moves an undecodable calls message to the poison stream, intact, and goes on delivering", async () => {
    const { ok, f } = await deliveringToOneReceiver();
    const garbage = Buffer.from([0x22, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    const typed = busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch);
    await f.js.publish(f.names.callsSubject("web"), garbage, { headers: typed, msgID: "web:garbage" });
    await f.publishCalls("web", [busCall("after-garbage", trackPayload())]);

    await waitFor("the call after the garbage to be delivered", () => ok.byMessageId("after-garbage").length === 1);
    const jsm = await jetstreamManager(f.nc);
    const stored = await waitFor("the poison message", () =>
      jsm.streams.getMessage(f.names.poisonStream, { last_by_subj: f.names.poisonSubject("calls") }).then(
        (m) => m ?? undefined,
        () => undefined,
      ),
    );
    expect(Buffer.from(stored.data)).toEqual(garbage);
    expect(stored.header.get(POISON_HEADERS.reason)).toBe("undecodable");
    expect(stored.header.get(POISON_HEADERS.stream)).toBe(f.names.callsStream);
    expect(stored.header.get(POISON_HEADERS.subject)).toBe(f.names.callsSubject("web"));
    expect(stored.header.get(BUS_MESSAGE_TYPE_HEADER)).toBe(BUS_MESSAGE_TYPE_NAMES.callBatch);
    expect(stored.header.get(POISON_HEADERS.error)).not.toBe("");
    await f.settled();
    const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${f.delivery.opsPort}/metrics`);
    expect(metrics.value("switchyard_delivery_poison_messages_total", { stream: "calls", reason: "undecodable" })).toBe(1);
  });

  it("dead-letters a call no body can be made of as undeliverable, without a request, and delivers the rest of its batch", async () => {
    const { ok, f } = await deliveringToOneReceiver();
    const batch: CallBatch = {
      batchId: "typeless",
      sourceId: "web",
      receivedAt: new Date(),
      calls: [busCall("no-type", undefined), busCall("fine", trackPayload())],
    };
    const typed = busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch);
    await f.js.publish(f.names.callsSubject("web"), CallBatch.encode(batch).finish(), { headers: typed, msgID: "web:typeless" });

    const dead = await waitFor("the typeless call's dead letter", async () => {
      const entries = (await f.admin.listDeadLetters({ destinationId: "ok" })).entries;
      return entries.length > 0 ? entries : undefined;
    });
    expect(dead.map((entry) => [entry.deadLetter!.task!.call!.messageId, entry.deadLetter!.reason])).toEqual([
      ["no-type", "undeliverable"],
    ]);
    expect(dead[0]!.deadLetter!.lastAttempt!.error).toMatch(/no webhook body can be made: the call has no type/);
    await waitFor("the other call delivered", () => ok.byMessageId("fine").length === 1);
    expect(ok.requests).toHaveLength(1);
  });
});
