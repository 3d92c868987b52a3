import { makeCall } from "@switchyard/testkit";
import type { Call } from "@switchyard/contracts";
import { describe, expect, it } from "vitest";
import { webhookBody } from "./webhook-body.js";

const AT = new Date("2026-11-21T10:00:00.000Z");
const RECEIVED = new Date("2026-11-21T10:05:30.250Z");

function call(payload: Call["payload"], overrides: Partial<Call> = {}): Call {
  return makeCall({ messageId: "m-1", userId: "user-1", timestamp: AT, receivedAt: RECEIVED, payload, ...overrides });
}

/** Asserts the exact keys, in order, and the exact values. */
function expectBody(actual: Record<string, unknown>, expected: Record<string, unknown>): void {
  expect(Object.keys(actual)).toEqual(Object.keys(expected));
  expect(actual).toStrictEqual(expected);
}

describe("webhookBody: one body per type, keys in docs/contract.md §6.3's order", () => {
  it("identify: version, type, userId, traits, timestamp, messageId", () => {
    expectBody(webhookBody(call({ $case: "identify", value: { traits: { email: "a@example.com" } } })), {
      version: 1,
      type: "identify",
      userId: "user-1",
      traits: { email: "a@example.com" },
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-1",
    });
  });

  it("track: version, type, userId, event, properties, timestamp, messageId", () => {
    expectBody(webhookBody(call({ $case: "track", value: { event: "Order Completed", properties: { revenue: 10 } } })), {
      version: 1,
      type: "track",
      userId: "user-1",
      event: "Order Completed",
      properties: { revenue: 10 },
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-1",
    });
  });

  it("page: version, type, userId, name, category, properties, timestamp, messageId", () => {
    const properties = {
      path: "/pricing",
      referrer: "https://example.org/",
      title: "Pricing",
      url: "https://example.com/pricing",
      ab: "b",
    };
    expectBody(webhookBody(call({ $case: "page", value: { name: "Pricing", category: "Docs", properties } })), {
      version: 1,
      type: "page",
      userId: "user-1",
      name: "Pricing",
      category: "Docs",
      properties,
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-1",
    });
  });

  it("screen: version, type, userId, name, timestamp, messageId, context", () => {
    const context = {
      device: { model: "Pixel 8", type: "android" },
      os: { name: "Android", version: "15" },
      app: { build: "42", name: "Shop", version: "3.1.0" },
    };
    const screen = call({ $case: "screen", value: { name: "Home", category: "Main", properties: { tab: 2 } } }, { context });
    expectBody(webhookBody(screen), {
      version: 1,
      type: "screen",
      userId: "user-1",
      name: "Home",
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-1",
      context,
    });
  });

  it("group: version, type, groupId, userId, traits, timestamp, messageId", () => {
    expectBody(webhookBody(call({ $case: "group", value: { groupId: "acme", traits: { employees: 120 } } })), {
      version: 1,
      type: "group",
      groupId: "acme",
      userId: "user-1",
      traits: { employees: 120 },
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-1",
    });
  });

  it('alias: "Previous ID" and "User ID", with the space, and no userId key', () => {
    expectBody(webhookBody(call({ $case: "alias", value: { previousId: "anon-7" } })), {
      version: 1,
      type: "alias",
      "Previous ID": "anon-7",
      "User ID": "user-1",
      timestamp: "2026-11-21T10:00:00.000Z",
      messageId: "m-1",
    });
  });

  it("delete: type, userId, timestamp, messageId, and no version", () => {
    const body = webhookBody(call({ $case: "delete", value: {} }));
    expectBody(body, { type: "delete", userId: "user-1", timestamp: "2026-11-21T10:00:00.000Z", messageId: "m-1" });
    expect("version" in body).toBe(false);
  });
});

describe("webhookBody: optional parts", () => {
  it("adds anonymousId and context after messageId only when the call has them", () => {
    const context = { ip: "203.0.113.9", locale: "en-GB" };
    const body = webhookBody(call({ $case: "track", value: { event: "E", properties: {} } }, { anonymousId: "anon-1", context }));
    expect(Object.keys(body).slice(-3)).toEqual(["messageId", "anonymousId", "context"]);
    expect(body.anonymousId).toBe("anon-1");
    expect(body.context).toStrictEqual(context);

    const bare = webhookBody(call({ $case: "track", value: { event: "E", properties: {} } }));
    expect("anonymousId" in bare).toBe(false);
    expect("context" in bare).toBe(false);
  });

  it("leaves userId out of an anonymous call", () => {
    const body = webhookBody(call({ $case: "identify", value: { traits: {} } }, { userId: "", anonymousId: "anon-1" }));
    expect(Object.keys(body)).toEqual(["version", "type", "traits", "timestamp", "messageId", "anonymousId"]);
  });

  it("sends empty properties and traits as {}", () => {
    expect(webhookBody(call({ $case: "identify", value: { traits: undefined } })).traits).toStrictEqual({});
    expect(webhookBody(call({ $case: "track", value: { event: "E", properties: undefined } })).properties).toStrictEqual({});
    expect(webhookBody(call({ $case: "page", value: { name: "", category: "", properties: undefined } })).properties).toStrictEqual({});
    expect(webhookBody(call({ $case: "group", value: { groupId: "g", traits: undefined } })).traits).toStrictEqual({});
  });

  it("carries page name and category only when the client set them", () => {
    const bare = webhookBody(call({ $case: "page", value: { name: "", category: "", properties: { url: "https://example.com/" } } }));
    expect(Object.keys(bare)).toEqual(["version", "type", "userId", "properties", "timestamp", "messageId"]);

    const named = webhookBody(call({ $case: "page", value: { name: "Home", category: "", properties: undefined } }));
    expect(Object.keys(named)).toEqual(["version", "type", "userId", "name", "properties", "timestamp", "messageId"]);

    const categorised = webhookBody(call({ $case: "page", value: { name: "", category: "Docs", properties: undefined } }));
    expect(Object.keys(categorised)).toEqual(["version", "type", "userId", "category", "properties", "timestamp", "messageId"]);
  });
});

describe("webhookBody: timestamp", () => {
  it("is ISO 8601 UTC with milliseconds, even when they are zero", () => {
    const body = webhookBody(
      call({ $case: "track", value: { event: "E", properties: {} } }, { timestamp: new Date(Date.UTC(2020, 0, 2, 3, 4, 5)) }),
    );
    expect(body.timestamp).toBe("2020-01-02T03:04:05.000Z");
    expect(body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("is the call's own timestamp (historical import), not the accept time", () => {
    const historical = new Date("2019-03-04T05:06:07.089Z");
    const body = webhookBody(call({ $case: "identify", value: { traits: {} } }, { timestamp: historical }));
    expect(body.timestamp).toBe("2019-03-04T05:06:07.089Z");
  });

  it("falls back to the accept time when the call has no timestamp", () => {
    const body = webhookBody(call({ $case: "identify", value: { traits: {} } }, { timestamp: undefined }));
    expect(body.timestamp).toBe(RECEIVED.toISOString());
  });
});

it("refuses a call without a payload", () => {
  expect(() => webhookBody(call(undefined))).toThrow(/m-1 has no payload/);
});
