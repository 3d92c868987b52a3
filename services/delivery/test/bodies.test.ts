import { createHmac } from "node:crypto";
import { waitFor, type WebhookReceiver } from "@switchyard/testkit";
import { beforeEach, describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, webSourceTo, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

const SECRET = "receiver-shared-secret";

const scope = deliveryPerTest();
let receiver: WebhookReceiver;
let unsigned: WebhookReceiver;
let fixture: DeliveryFixture;

beforeEach(async () => {
  receiver = await scope.receiver();
  unsigned = await scope.receiver();
  fixture = await scope.start({
    workspace: webSourceTo("wk_bodies_test_0001", {
      signed: { webhooks: [{ url: receiver.url("/signed"), headers: { "X-Receiver-Token": "tok-123" } }], sharedSecret: SECRET },
      unsigned: unsigned.url("/plain"),
    }),
  });
});

const at = new Date("2026-11-21T10:00:00.000Z");
const context = {
  ip: "203.0.113.9",
  device: { model: "Pixel 8", type: "android" },
  os: { name: "Android", version: "15" },
  app: { build: "42", name: "Shop", version: "3.1.0" },
};

const cases = [
  {
    call: busCall(
      "m-page",
      {
        $case: "page",
        value: {
          name: "Pricing",
          category: "Docs",
          properties: { path: "/pricing", referrer: "", title: "Pricing", url: "https://example.com/pricing" },
        },
      },
      { timestamp: at },
    ),
    body: {
      version: 1,
      type: "page",
      userId: "user-1",
      name: "Pricing",
      category: "Docs",
      properties: { path: "/pricing", referrer: "", title: "Pricing", url: "https://example.com/pricing" },
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-page",
    },
  },
  {
    call: busCall(
      "m-screen",
      { $case: "screen", value: { name: "Home", category: "", properties: undefined } },
      { timestamp: at, context },
    ),
    body: {
      version: 1,
      type: "screen",
      userId: "user-1",
      name: "Home",
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-screen",
      context,
    },
  },
  {
    call: busCall(
      "m-identify",
      { $case: "identify", value: { traits: { email: "a@example.com", plan: "pro" } } },
      { timestamp: at, anonymousId: "anon-1" },
    ),
    body: {
      version: 1,
      type: "identify",
      userId: "user-1",
      traits: { email: "a@example.com", plan: "pro" },
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-identify",
      anonymousId: "anon-1",
    },
  },
  {
    call: busCall(
      "m-track",
      { $case: "track", value: { event: "Order Completed", properties: { revenue: 42.5, items: ["a"] } } },
      { timestamp: at },
    ),
    body: {
      version: 1,
      type: "track",
      userId: "user-1",
      event: "Order Completed",
      properties: { revenue: 42.5, items: ["a"] },
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-track",
    },
  },
  {
    call: busCall("m-alias", { $case: "alias", value: { previousId: "anon-1" } }, { timestamp: at }),
    body: {
      version: 1,
      type: "alias",
      "Previous ID": "anon-1",
      "User ID": "user-1",
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-alias",
    },
  },
  {
    call: busCall("m-group", { $case: "group", value: { groupId: "acme", traits: { employees: 120 } } }, { timestamp: at }),
    body: {
      version: 1,
      type: "group",
      groupId: "acme",
      userId: "user-1",
      traits: { employees: 120 },
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-group",
    },
  },
  {
    call: busCall("m-delete", { $case: "delete", value: {} }, { timestamp: at }),
    body: { type: "delete", userId: "user-1", timestamp: "2026-11-21T10:00:00.000Z", messageId: "m-delete" },
  },
];

describe("forwarded requests", () => {
  it("carry exactly the specified body and headers for each of the seven types", async () => {
    await fixture.publishCalls(
      "web",
      cases.map((c) => c.call),
    );
    await waitFor("all signed deliveries", () => receiver.requests.length === cases.length);
    await waitFor("all unsigned deliveries", () => unsigned.requests.length === cases.length);

    for (const { call, body } of cases) {
      const [signed] = receiver.byMessageId(call.messageId);
      const [plain] = unsigned.byMessageId(call.messageId);
      expect(signed, call.messageId).toBeDefined();
      expect(plain, call.messageId).toBeDefined();
      if (!signed || !plain) continue;

      // Exactly these keys, in docs/contract.md §6.3's order.
      expect(Object.keys(signed.json)).toEqual(Object.keys(body));
      expect(signed.json).toEqual(body);
      expect(plain.json).toEqual(body);
      expect("version" in signed.json).toBe(call.payload?.$case !== "delete");

      expect(signed.method).toBe("POST");
      expect(signed.path).toBe("/signed");
      expect(signed.headers["user-agent"]).toBe("Switchyard/1.0");
      expect(signed.headers["content-type"]).toBe("application/json");
      expect(signed.headers["x-receiver-token"]).toBe("tok-123");
      // The receiver recomputes the HMAC over the raw bytes it received.
      const expected = createHmac("sha1", SECRET).update(signed.raw).digest("hex");
      expect(signed.headers["x-signature"]).toBe(expected);
      expect(signed.headers["x-signature"]).toMatch(/^[0-9a-f]{40}$/);

      expect(plain.headers["x-signature"]).toBeUndefined();
      expect(plain.headers["user-agent"]).toBe("Switchyard/1.0");
      expect(plain.headers["x-receiver-token"]).toBeUndefined();
    }
  });
});
