import { createHmac } from "node:crypto";
import { Call } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { makeCall, WebhookReceiver, waitFor, type ReceivedRequest } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../helpers/stack.js";

const WRITE_KEY = "wk_e2e_client_to_receiver_01";
const SECRET = "e2e-shared-secret";
const HISTORICAL = new Date("2025-03-04T05:06:07.089Z");
const ISO_WITH_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let receiver: WebhookReceiver;
let stack: Stack;

beforeEach(async () => {
  receiver = await WebhookReceiver.start();
  stack = await startStack({
    workspace: {
      sources: [{ id: "backend", writeKeys: [WRITE_KEY] }],
      destinations: [
        {
          id: "hook",
          settings: { webhooks: [{ url: receiver.url("/webhooks"), headers: { "X-Receiver-Token": "tok-e2e" } }], sharedSecret: SECRET },
        },
      ],
      connections: [{ sourceId: "backend", destinationId: "hook" }],
    },
  });
});
afterEach(async () => {
  await stack.dispose();
  await receiver.close();
});

/** The one request that carried this messageId. */
async function arrived(messageId: string): Promise<ReceivedRequest> {
  const found = await waitFor(`the call ${messageId} at the receiver`, () => {
    const requests = receiver.byMessageId(messageId);
    return requests.length > 0 ? requests : undefined;
  });
  expect(found, `requests for ${messageId}`).toHaveLength(1);
  return found[0]!;
}

/** Exact keys in order, exact values, the headers of docs/contract.md §6.1 and a valid signature over the bytes received. */
function expectForwarded(request: ReceivedRequest, body: Record<string, unknown>): void {
  expect(Object.keys(request.json)).toEqual(Object.keys(body));
  expect(request.json).toStrictEqual(body);

  expect(request.method).toBe("POST");
  expect(request.path).toBe("/webhooks");
  expect(request.headers["user-agent"]).toBe("Switchyard/1.0");
  expect(request.headers["content-type"]).toBe("application/json");
  expect(request.headers["x-receiver-token"]).toBe("tok-e2e");
  expect(request.headers["x-signature"]).toBe(createHmac("sha1", SECRET).update(request.raw).digest("hex"));
  // A receiver may verify over its re-serialised parse (docs/contract.md §6.2): that gives back the same bytes.
  expect(JSON.stringify(JSON.parse(request.raw.toString("utf8")))).toBe(request.raw.toString("utf8"));
}

/** A timestamp ingest set: ISO with ms, within the time the request took. */
function expectAcceptTime(timestamp: unknown, sentAt: number, answeredAt: number): void {
  expect(timestamp).toMatch(ISO_WITH_MS);
  const ms = Date.parse(timestamp as string);
  expect(ms).toBeGreaterThanOrEqual(sentAt);
  expect(ms).toBeLessThanOrEqual(answeredAt);
}

describe("from a gRPC client to a webhook receiver", () => {
  it("forwards each of the six client call types with the exact body, headers and signature", async () => {
    const screenContext = {
      device: { model: "iPhone 16", type: "ios" },
      os: { name: "iOS", version: "18.1" },
      app: { build: "512", name: "Shop", version: "4.2.0" },
    };
    const identifyContext = { ip: "203.0.113.7", locale: "en-GB" };
    const pageProperties = {
      url: "https://example.com/pricing",
      title: "Pricing",
      referrer: "https://search.example/",
      path: "/pricing",
      plan_shown: "pro",
    };

    // Three calls in one IngestBatch: two with the client's messageId and a historical timestamp, one with neither.
    const batchSentAt = Date.now();
    const batch = await stack.grpc.ingestBatch(
      {
        calls: [
          Call.fromPartial({
            messageId: "client-identify-1",
            userId: "user-42",
            anonymousId: "anon-42",
            timestamp: HISTORICAL,
            context: identifyContext,
            payload: { $case: "identify", value: { traits: { email: "ada@example.com", plan: "pro", logins: 3, verified: true } } },
          }),
          Call.fromPartial({
            userId: "user-42",
            payload: {
              $case: "track",
              value: { event: "Order Completed", properties: { revenue: 42.5, currency: "EUR", items: [{ sku: "a-1", qty: 2 }] } },
            },
          }),
          Call.fromPartial({
            messageId: "client-page-1",
            userId: "user-42",
            timestamp: HISTORICAL,
            payload: { $case: "page", value: { name: "Pricing", category: "Docs", properties: pageProperties } },
          }),
        ],
      },
      WRITE_KEY,
    );
    const batchAnsweredAt = Date.now();
    expect(batch.rejections).toEqual([]);
    expect(batch.accepted).toBe(3);
    const [identifyId, trackId, pageId] = batch.messageIds;
    expect([identifyId, pageId]).toEqual(["client-identify-1", "client-page-1"]);
    expect(trackId).toMatch(/^[0-9a-f-]{36}$/);

    // Three more, one IngestCall each.
    const screenSentAt = Date.now();
    const screen = await stack.grpc.ingestCall(
      {
        call: Call.fromPartial({
          userId: "user-42",
          context: screenContext,
          payload: { $case: "screen", value: { name: "Checkout" } },
        }),
      },
      WRITE_KEY,
    );
    const screenAnsweredAt = Date.now();
    const group = await stack.grpc.ingestCall(
      {
        call: Call.fromPartial({
          messageId: "client-group-1",
          userId: "user-42",
          timestamp: HISTORICAL,
          payload: { $case: "group", value: { groupId: "acme", traits: { name: "Acme Inc", employees: 120 } } },
        }),
      },
      WRITE_KEY,
    );
    const aliasSentAt = Date.now();
    const alias = await stack.grpc.ingestCall(
      { call: Call.fromPartial({ userId: "user-42", payload: { $case: "alias", value: { previousId: "anon-42" } } }) },
      WRITE_KEY,
    );
    const aliasAnsweredAt = Date.now();
    expect(group.messageId).toBe("client-group-1");

    const historical = HISTORICAL.toISOString();
    expect(historical).toBe("2025-03-04T05:06:07.089Z");

    expectForwarded(await arrived(identifyId!), {
      version: 1,
      type: "identify",
      userId: "user-42",
      traits: { email: "ada@example.com", plan: "pro", logins: 3, verified: true },
      timestamp: historical,
      messageId: "client-identify-1",
      anonymousId: "anon-42",
      context: identifyContext,
    });

    const track = await arrived(trackId!);
    expectAcceptTime(track.json.timestamp, batchSentAt, batchAnsweredAt);
    expectForwarded(track, {
      version: 1,
      type: "track",
      userId: "user-42",
      event: "Order Completed",
      properties: { revenue: 42.5, currency: "EUR", items: [{ sku: "a-1", qty: 2 }] },
      timestamp: track.json.timestamp,
      messageId: trackId,
    });

    expectForwarded(await arrived(pageId!), {
      version: 1,
      type: "page",
      userId: "user-42",
      name: "Pricing",
      category: "Docs",
      properties: pageProperties,
      timestamp: historical,
      messageId: "client-page-1",
    });

    const screenRequest = await arrived(screen.messageId);
    expectAcceptTime(screenRequest.json.timestamp, screenSentAt, screenAnsweredAt);
    expectForwarded(screenRequest, {
      version: 1,
      type: "screen",
      userId: "user-42",
      name: "Checkout",
      timestamp: screenRequest.json.timestamp,
      messageId: screen.messageId,
      context: screenContext,
    });

    expectForwarded(await arrived("client-group-1"), {
      version: 1,
      type: "group",
      groupId: "acme",
      userId: "user-42",
      traits: { name: "Acme Inc", employees: 120 },
      timestamp: historical,
      messageId: "client-group-1",
    });

    const aliasRequest = await arrived(alias.messageId);
    expectAcceptTime(aliasRequest.json.timestamp, aliasSentAt, aliasAnsweredAt);
    expectForwarded(aliasRequest, {
      version: 1,
      type: "alias",
      "Previous ID": "anon-42",
      "User ID": "user-42",
      timestamp: aliasRequest.json.timestamp,
      messageId: alias.messageId,
    });

    await stack.settled();
    expect(receiver.requests).toHaveLength(6);
  });

  it("honours each call's integrations object (Webhooks, All, case-sensitive names)", async () => {
    const track = (messageId: string, integrations: Record<string, unknown>) =>
      Call.fromPartial({ messageId, userId: "user-1", integrations, payload: { $case: "track", value: { event: "E" } } });
    const response = await stack.grpc.ingestBatch(
      {
        calls: [
          track("off", { Webhooks: false }),
          track("all-off", { All: false }),
          track("all-off-but-webhooks", { All: false, Webhooks: true }),
          track("other-spelling", { webhooks: false }),
          track("object-counts-as-on", { Webhooks: { note: "on" } }),
          track("others-only", { Mixpanel: false }),
        ],
      },
      WRITE_KEY,
    );
    expect(response.accepted).toBe(6);

    await stack.settled();
    const delivered = receiver.requests.map((request) => request.json.messageId as string).sort();
    expect(delivered).toEqual(["all-off-but-webhooks", "object-counts-as-on", "other-spelling", "others-only"]);
    expect(receiver.requests.every((request) => !("integrations" in request.json))).toBe(true);
  });
});

describe("from the Segment-compatible HTTP API to a webhook receiver", () => {
  it("forwards a track call with the exact body, leaving out the SDK's extra keys", async () => {
    const context = { library: { name: "analytics-node", version: "3.1.0" }, ip: "198.51.100.4" };
    const response = await fetch(`${stack.httpUrl}/v1/track`, {
      method: "POST",
      headers: { authorization: basicAuthorization(WRITE_KEY), "content-type": "application/json" },
      body: JSON.stringify({
        type: "track",
        messageId: "segment-1",
        userId: "user-7",
        anonymousId: "anon-7",
        event: "Plan Upgraded",
        properties: { from: "free", to: "pro" },
        // An offset timestamp: forwarded in UTC, with milliseconds.
        timestamp: "2025-03-04T07:06:07.089+02:00",
        context,
        integrations: { All: true },
        sentAt: new Date().toISOString(),
        _metadata: { nodeVersion: process.versions.node },
      }),
    });
    expect(response.status).toBe(200);

    expectForwarded(await arrived("segment-1"), {
      version: 1,
      type: "track",
      userId: "user-7",
      event: "Plan Upgraded",
      properties: { from: "free", to: "pro" },
      timestamp: "2025-03-04T05:06:07.089Z",
      messageId: "segment-1",
      anonymousId: "anon-7",
      context,
    });
  });

  it('forwards "__proto__", "constructor" and "prototype" keys as data, from HTTP and from gRPC', async () => {
    const properties = '{"__proto__":{"a":1},"constructor":"c","prototype":[2],"nested":{"__proto__":null}}';
    const context = '{"__proto__":"ctx","ip":"198.51.100.4"}';
    const raw = `{"messageId":"proto-http","userId":"u","event":"E","properties":${properties},"context":${context},"integrations":{"__proto__":true,"All":true}}`;
    const response = await fetch(`${stack.httpUrl}/v1/track`, {
      method: "POST",
      headers: { authorization: basicAuthorization(WRITE_KEY), "content-type": "application/json" },
      body: raw,
    });
    expect(response.status).toBe(200);
    const viaHttp = await arrived("proto-http");
    expect(viaHttp.raw.toString("utf8")).toContain(`"properties":${properties}`);
    expect(viaHttp.raw.toString("utf8")).toContain(`"context":${context}`);

    const call: Call = makeCall({
      messageId: "proto-grpc",
      userId: "u",
      context: JSON.parse(context) as Record<string, unknown>,
      payload: { $case: "identify", value: { traits: JSON.parse(properties) as Record<string, unknown> } },
    });
    expect((await stack.grpc.ingestCall({ call }, WRITE_KEY)).messageId).toBe("proto-grpc");
    const viaGrpc = await arrived("proto-grpc");
    expect(viaGrpc.raw.toString("utf8")).toContain(`"traits":${properties}`);
    expect(viaGrpc.raw.toString("utf8")).toContain(`"context":${context}`);
  });
});
