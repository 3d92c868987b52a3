import { createHmac } from "node:crypto";
import { Call } from "@switchyard/contracts";
import { callEvent } from "@switchyard/mappings";
import { waitFor, type WebhookReceiver } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { busCall, configService, deliveryPerTest, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

/*
 * The Webhooks (Actions) kind through the real delivery service, nats-server and loopback
 * receivers: triggers choose the calls, each mapping makes its own request (URL, method, headers,
 * body), signed over the bytes sent; what a mapping cannot make a request of fails for good.
 */

const per = deliveryPerTest();
const SECRET = "actions-shared-secret";

const track = (event: string, properties: Record<string, unknown>): Call["payload"] => ({ $case: "track", value: { event, properties } });
const identify = (traits: Record<string, unknown>): Call["payload"] => ({ $case: "identify", value: { traits } });

function start(mappings: unknown[], env: Record<string, string> = {}, destination: object = {}): Promise<DeliveryFixture> {
  return per.start({
    workspace: {
      sources: [{ id: "web", writeKeys: ["wk_actions_test_0123"] }],
      destinations: [{ id: "actions", type: "webhooks_actions", settings: { sharedSecret: SECRET, mappings }, ...destination }],
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

  describe("with batching", () => {
    const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `b${from + i}`);

    it("sends a batch at its size or its wait, the array of its calls' data in order, signed over the whole body, logged once", async () => {
      const receiver = await per.receiver();
      const fixture = await start([
        {
          name: "Batched",
          trigger: 'type = "track"',
          url: receiver.url("/batch"),
          data: { id: { "@path": "$.messageId" }, n: { "@path": "$.properties.n" } },
          batching: { enabled: true, size: 3, maxWaitMs: 300 },
        },
      ]);
      await fixture.publishCalls(
        "web",
        ids(0, 7).map((id, n) => busCall(id, track("T", { n }))),
      );
      await waitFor("three requests", () => receiver.requests.length >= 3);
      await fixture.settled();
      const bodies = receiver.requests.map((request) => JSON.parse(request.raw.toString()) as { id: string; n: number }[]);
      expect(bodies.map((body) => body.map((item) => item.id))).toEqual([ids(0, 3), ids(3, 6), ids(6, 7)]);
      expect(bodies[0]![1]).toEqual({ id: "b1", n: 1 });
      for (const request of receiver.requests) expect(request.headers["x-signature"]).toBe(signatureOf(request.raw));

      // One attempt per request, under its first call, listing every call; found by any of them.
      const [logged] = await attemptsOf(fixture, "b4", 1);
      expect(logged).toMatchObject({ outcome: "delivered", messageId: "b3", batchMessageIds: ids(3, 6) });
      const all = await waitFor("the three requests in the log", async () => {
        const { attempts } = await fixture.admin.listDeliveryAttempts({ destinationId: "actions" });
        return attempts.length >= 3 && attempts;
      });
      expect(all).toHaveLength(3);
      expect(all.map((attempt) => attempt.batchMessageIds).sort()).toEqual([ids(0, 3), ids(3, 6), ids(6, 7)]);
    });

    it("claims one request of the destination's rate limit per batch, not one per call", async () => {
      const receiver = await per.receiver();
      const fixture = await start(
        [
          {
            name: "Limited",
            trigger: 'type = "track"',
            url: receiver.url("/limited"),
            data: { id: { "@path": "$.messageId" } },
            batching: { enabled: true, size: 50, maxWaitMs: 200 },
          },
        ],
        {},
        { maxRequestsPerSecond: 2 },
      );
      await fixture.publishCalls(
        "web",
        ids(0, 100).map((id) => busCall(id, track("T", {}))),
      );
      // At one request per call, 100 calls would take 50 s at this limit; two batches take one second.
      const items = () =>
        receiver.requests.flatMap((request) => (JSON.parse(request.raw.toString()) as { id: string }[]).map((item) => item.id));
      await waitFor("every call in its batch", () => items().length >= 100);
      await fixture.settled();
      expect(items().sort()).toEqual(ids(0, 100).sort());
      expect(receiver.requests).toHaveLength(2);
    });

    it("never puts calls whose URL, method or headers differ in one request", async () => {
      const receiver = await per.receiver();
      const fixture = await start([
        {
          name: "Per user",
          trigger: 'type = "track"',
          url: { "@template": `${receiver.url("/u")}/{{userId}}` },
          headers: { "X-Plan": { "@path": "$.properties.plan" } },
          data: { id: { "@path": "$.messageId" } },
          batching: { enabled: true, size: 10, maxWaitMs: 200 },
        },
      ]);
      await fixture.publishCalls("web", [
        busCall("a1", track("T", { plan: "pro" }), { userId: "ann" }),
        busCall("b1", track("T", { plan: "pro" }), { userId: "bob" }),
        busCall("a2", track("T", { plan: "free" }), { userId: "ann" }),
        busCall("a3", track("T", { plan: "pro" }), { userId: "ann" }),
      ]);
      await waitFor("three requests", () => receiver.requests.length >= 3);
      await fixture.settled();
      const sent = receiver.requests.map((request) => [request.path, request.headers["x-plan"], request.raw.toString()]).sort();
      expect(sent).toEqual([
        ["/u/ann", "free", '[{"id":"a2"}]'],
        ["/u/ann", "pro", '[{"id":"a1"},{"id":"a3"}]'],
        ["/u/bob", "pro", '[{"id":"b1"}]'],
      ]);
    });

    it("retries a batch the receiver failed, loses and doubles no call, and splits a batch refused as too large (413)", async () => {
      let failed = false;
      const receiver = await per.receiver((request) => {
        const items = JSON.parse(request.raw.toString()) as unknown[];
        if (items.length > 2) return { status: 413 };
        if (!failed) {
          failed = true;
          return { status: 503 };
        }
        return { status: 200 };
      });
      const fixture = await start([
        {
          name: "Batched",
          trigger: 'type = "track"',
          url: receiver.url("/b"),
          data: { id: { "@path": "$.messageId" } },
          batching: { enabled: true, size: 4, maxWaitMs: 200 },
        },
      ]);
      await fixture.publishCalls(
        "web",
        ids(0, 4).map((id) => busCall(id, track("T", {}))),
      );
      await fixture.settled();
      const items = receiver.requests.map((request) => (JSON.parse(request.raw.toString()) as { id: string }[]).map((item) => item.id));
      // The 413 for all four, then the halves; the first of those failed once (503) and came again.
      expect(items[0]).toEqual(ids(0, 4));
      expect(items.slice(1, 3)).toEqual([ids(0, 2), ids(2, 4)]);
      const answered200 = items.slice(3).concat([items[2]!]).flat();
      expect(answered200.sort()).toEqual(ids(0, 4));
      expect((await fixture.admin.listDeadLetters({ destinationId: "actions" })).entries).toEqual([]);
      const refused = await attemptsOf(fixture, "b2", 1);
      expect(refused.some((attempt) => attempt.status === 413 && attempt.batchMessageIds.length === 4)).toBe(true);
    });
  });

  describe("TestActionMapping", () => {
    const MAPPING = {
      name: "Orders",
      enabled: true,
      trigger: 'type = "track" and event = "Order Completed"',
      method: "PUT",
      headers: { Authorization: "Bearer s3cret", "X-Event": { "@path": "$.event" } },
      data: { total: { "@path": "$.properties.total" } },
    };
    const CALL = { type: "track", event: "Order Completed", userId: "u-1", messageId: "t-1", properties: { total: 12.5 } };

    it("shows the exact request a mapping makes of a call, signed with the stored secret, credentials masked", async () => {
      const receiver = await per.receiver();
      const fixture = await start([{ ...MAPPING, url: receiver.url("/orders") }]);
      const preview = await fixture.admin.testActionMapping({
        destinationId: "actions",
        mapping: { ...MAPPING, url: receiver.url("/orders") } as never,
        call: CALL,
      });
      expect(preview).toMatchObject({ problems: [], taken: true, reason: "", status: 0 });
      const body = Buffer.from(preview.request!.requestBody).toString();
      expect(body).toBe('{"total":12.5}');
      expect(preview.request!.method).toBe("PUT");
      const headers = Object.fromEntries(preview.request!.requestHeaders.map((header) => [header.name, header.value]));
      expect(headers).toMatchObject({
        Authorization: expect.stringMatching(/^\[set:hmac:/),
        "X-Event": expect.stringMatching(/^\[set:hmac:/),
      });
      expect(headers["x-signature"]).toBe(signatureOf(Buffer.from(body)));
      expect(receiver.requests).toHaveLength(0);

      const other = await fixture.admin.testActionMapping({
        mapping: { ...MAPPING, url: receiver.url("/orders") } as never,
        call: { ...CALL, event: "Other" },
      });
      expect(other.taken).toBe(false);
    });

    it("sends the request once with send, masked values standing for the stored ones, and shows the answer", async () => {
      const receiver = await per.receiver(() => ({ status: 202, body: "queued" }));
      const fixture = await start([{ ...MAPPING, url: receiver.url("/orders") }]);
      const { destination } = await configService(() => fixture.admin).getDestination({ id: "actions" });
      const [asRead] = destination!.kind?.$case === "webhooksActionsKind" ? destination!.kind.value.mappings : [];
      expect(asRead!.headers!.Authorization).toMatch(/^\[set:hmac:/);
      const sent = await fixture.admin.testActionMapping({ destinationId: "actions", mapping: asRead, call: CALL, send: true });
      expect(sent).toMatchObject({ problems: [], taken: true, status: 202, error: "" });
      expect(Buffer.from(sent.request!.responseBody).toString()).toBe("queued");
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0]!.headers.authorization).toBe("Bearer s3cret");
      expect(receiver.requests[0]!.method).toBe("PUT");
      // A test is not a delivery: nothing in the attempt log.
      expect((await fixture.admin.listDeliveryAttempts({ destinationId: "actions" })).attempts).toEqual([]);
    });

    it("names the field of every problem, and says why a call cannot be sent", async () => {
      const receiver = await per.receiver();
      const fixture = await start([{ ...MAPPING, url: receiver.url("/orders") }]);
      const bad = await fixture.admin.testActionMapping({
        mapping: { ...MAPPING, trigger: "type = track", url: receiver.url("/o"), headers: { Host: "x" } } as never,
        call: CALL,
      });
      expect(bad.problems).toEqual(
        expect.arrayContaining([expect.stringMatching(/^mapping\.trigger: /), expect.stringMatching(/^mapping\.headers\.Host: /)]),
      );
      const noUrl = await fixture.admin.testActionMapping({
        mapping: { ...MAPPING, url: { "@path": "$.properties.target" } } as never,
        call: CALL,
      });
      expect(noUrl).toMatchObject({ problems: [], taken: true, reason: "url: the mapping made nothing, not a URL" });
      const badCall = await fixture.admin.testActionMapping({
        mapping: { ...MAPPING, url: receiver.url("/o") } as never,
        call: { type: "bogus" },
      });
      expect(badCall.problems[0]).toMatch(/^call\./);
    });
  });
});
