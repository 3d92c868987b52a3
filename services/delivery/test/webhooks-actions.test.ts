import { createHmac } from "node:crypto";
import { Call } from "@switchyard/contracts";
import { callEvent } from "@switchyard/mappings";
import { waitFor, type WebhookReceiver } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

/*
 * The Webhooks (Actions) kind through the real delivery service, nats-server and loopback
 * receivers: triggers choose the calls, each mapping makes its own request (URL, method, headers,
 * body), signed over the bytes sent; what a mapping cannot make a request of fails for good.
 */

const per = deliveryPerTest();
const SECRET = "actions-shared-secret";

const track = (event: string, properties: Record<string, unknown>): Call["payload"] => ({ $case: "track", value: { event, properties } });
const identify = (traits: Record<string, unknown>): Call["payload"] => ({ $case: "identify", value: { traits } });

function start(mappings: unknown[], env: Record<string, string> = {}): Promise<DeliveryFixture> {
  return per.start({
    workspace: {
      sources: [{ id: "web", writeKeys: ["wk_actions_test_0123"] }],
      destinations: [{ id: "actions", type: "webhooks_actions", settings: { sharedSecret: SECRET, mappings } }],
      connections: [{ sourceId: "web", destinationId: "actions" }],
    },
    env,
  });
}

/** The call as delivery reads it back from the bus. */
const asStored = (call: Call) => Call.decode(Call.encode(call).finish());

const signatureOf = (body: Buffer) => createHmac("sha1", SECRET).update(body).digest("hex");

async function attemptsOf(fixture: DeliveryFixture, messageId: string, count: number) {
  return waitFor(`${count} attempts of ${messageId}`, async () => {
    const { attempts } = await fixture.admin.listDeliveryAttempts({ destinationId: "actions", messageId });
    return attempts.length >= count && attempts;
  });
}

describe("a Webhooks (Actions) destination", () => {
  it("sends each call through the mappings whose trigger takes it, as the request each makes, signed over the bytes sent", async () => {
    const receiver = await per.receiver();
    const fixture = await start([
      {
        name: "Orders",
        trigger: 'type = "track" and event = "Order Completed"',
        url: { "@template": `${receiver.url("/orders")}/{{userId}}` },
        method: "PUT",
        headers: { "X-Event": { "@path": "$.event" }, "X-Static": "fixed" },
        data: { order: { "@path": "$.properties" }, user: { "@path": "$.userId" }, missing: { "@path": "$.properties.nothing" } },
      },
      { name: "Identities", trigger: 'type = "identify"', url: receiver.url("/ids"), method: "POST" },
      { name: "Off", enabled: false, trigger: 'type = "track"', url: receiver.url("/off") },
    ]);
    const order = busCall("c1", track("Order Completed", { total: 12.5, items: [{ sku: "a" }] }), { userId: "u-1" });
    const viewed = busCall("c2", track("Product Viewed", {}), { userId: "u-2" });
    const person = busCall("c3", identify({ plan: "pro" }), { userId: "u-3" });
    await fixture.publishCalls("web", [order, viewed, person]);
    await waitFor("both requests", () => receiver.requests.length >= 2);
    await fixture.settled();

    const put = receiver.requests.find((request) => request.path === "/orders/u-1");
    expect(put).toBeDefined();
    expect(put!.method).toBe("PUT");
    // A path that maps to nothing is left out, as mapping-kit leaves it.
    expect(put!.raw.toString()).toBe(JSON.stringify({ order: { total: 12.5, items: [{ sku: "a" }] }, user: "u-1" }));
    expect(put!.headers["x-event"]).toBe("Order Completed");
    expect(put!.headers["x-static"]).toBe("fixed");
    expect(put!.headers["content-type"]).toBe("application/json");
    expect(put!.headers["user-agent"]).toBe("Switchyard/1.0");
    expect(put!.headers["x-signature"]).toBe(signatureOf(put!.raw));

    // The default data is the whole call, in Segment's event shape.
    const post = receiver.requests.find((request) => request.path === "/ids");
    expect(post!.method).toBe("POST");
    expect(post!.raw.toString()).toBe(JSON.stringify(callEvent(asStored(person))));
    expect(post!.headers["x-signature"]).toBe(signatureOf(post!.raw));
    expect(receiver.requests).toHaveLength(2);

    // The attempt log records each mapping's request as sent: method, mapped URL, headers masked.
    const [logged] = await attemptsOf(fixture, "c1", 1);
    expect(logged).toMatchObject({ outcome: "delivered", status: 200, url: receiver.url("/orders/u-1") });
    const exchange = (await fixture.admin.getDeliveryAttempt({ attemptId: logged!.attemptId })).attempt!.exchange!;
    expect(exchange.method).toBe("PUT");
    const sent = Object.fromEntries(exchange.requestHeaders.map((header) => [header.name, header.value]));
    expect(sent["X-Static"]).toMatch(/^\[set:hmac:[0-9a-f]{8}\]$/);
    expect(Buffer.from(exchange.requestBody).toString()).toBe(put!.raw.toString());
  });

  it("fails a call for good, without a request, when its mapped URL is not http(s) or a mapped header is not HTTP, and says why", async () => {
    const receiver = await per.receiver();
    const fixture = await start([
      { name: "By target", trigger: 'type = "track"', url: { "@path": "$.properties.target" } },
      { name: "By header", trigger: 'event = "Header"', url: receiver.url("/h"), headers: { "X-Name": { "@path": "$.properties.name" } } },
    ]);
    await fixture.publishCalls("web", [
      busCall("ftp", track("Target", { target: "ftp://files.example/x" })),
      busCall("header", track("Header", { target: receiver.url("/t"), name: "line\nbreak" })),
    ]);
    const ftp = await attemptsOf(fixture, "ftp", 2);
    expect(ftp.map((attempt) => [attempt.outcome, attempt.error])).toEqual([
      ["dead_lettered", expect.any(String)],
      ["permanent", 'mapping "By target": url: "ftp://files.example/x" is a ftp URL: only http and https are sent to'],
    ]);
    // Its first mapping sends (the URL is fine); its second cannot make the header, and that part alone is dead-lettered.
    const header = await attemptsOf(fixture, "header", 3);
    expect(header.map((attempt) => attempt.outcome).sort()).toEqual(["dead_lettered", "delivered", "permanent"]);
    expect(header.find((attempt) => attempt.outcome === "permanent")!.error).toBe(
      'mapping "By header": headers.X-Name: holds characters a header cannot carry (ASCII only, no line breaks)',
    );
    await fixture.settled();
    expect(receiver.requests.map((request) => request.path)).toEqual(["/t"]);
    const dead = (await fixture.admin.listDeadLetters({ destinationId: "actions" })).entries;
    expect(dead.map((entry) => [entry.deadLetter!.task!.call!.messageId, entry.deadLetter!.task!.targetIndexes]).sort()).toEqual([
      ["ftp", [0]],
      ["header", [1]],
    ]);
  });

  it("holds every mapped URL to the address policy", async () => {
    const receiver = await per.receiver();
    const fixture = await start([{ name: "Mapped", trigger: 'type = "track"', url: { "@path": "$.properties.target" } }], {
      DELIVERY_ALLOWED_CIDRS: "",
    });
    await fixture.publishCalls("web", [busCall("loop", track("Go", { target: receiver.url("/mapped") }))]);
    const [, refused] = await attemptsOf(fixture, "loop", 2);
    expect(refused).toMatchObject({ outcome: "permanent", status: 0 });
    expect(refused!.error).toMatch(/^address refused: 127\.0\.0\.1: loopback/);
    await fixture.settled();
    expect(receiver.requests).toHaveLength(0);
  });

  it("retries only the mapping whose request failed, with the same method, URL and body; the one that took the call gets it once", async () => {
    let patches = 0;
    const receiver: WebhookReceiver = await per.receiver((request) => ({ status: request.path === "/p" && patches++ === 0 ? 503 : 200 }));
    const fixture = await start([
      { name: "Patch", trigger: 'type = "track"', url: receiver.url("/p"), method: "PATCH", data: { e: { "@path": "$.event" } } },
      { name: "Post", trigger: 'type = "track"', url: receiver.url("/q"), data: { e: { "@path": "$.event" } } },
    ]);
    await fixture.publishCalls("web", [busCall("r1", track("Retried", {}))]);
    await waitFor("the retry", () => receiver.requests.length >= 3);
    await fixture.settled();
    expect(receiver.requests.map((request) => [request.method, request.path, request.raw.toString()])).toEqual([
      ["PATCH", "/p", '{"e":"Retried"}'],
      ["POST", "/q", '{"e":"Retried"}'],
      ["PATCH", "/p", '{"e":"Retried"}'],
    ]);
    expect((await fixture.admin.listDeadLetters({ destinationId: "actions" })).entries).toEqual([]);
  });
});
