import { status } from "@grpc/grpc-js";
import type { RequestDeletionRequest } from "@switchyard/contracts";
import { WebhookReceiver, waitFor } from "@switchyard/testkit";
import { afterEach, beforeEach, expect, it } from "vitest";
import { isGrpcError, startAudienceFixture, type AudienceFixture } from "@switchyard/testkit/fixtures/audience-sync";

let web: WebhookReceiver;
let app: WebhookReceiver;
let offline: WebhookReceiver;
let fixture: AudienceFixture;

beforeEach(async () => {
  [web, app, offline] = await Promise.all([WebhookReceiver.start(), WebhookReceiver.start(), WebhookReceiver.start()]);
  fixture = await startAudienceFixture({
    sources: [
      { id: "web", writeKeys: ["wk_deletion_web_001"] },
      { id: "app", writeKeys: ["wk_deletion_app_001"] },
      { id: "pos", writeKeys: ["wk_deletion_pos_001"] },
    ],
    destinations: [
      { id: "web-hook", settings: { webhooks: [{ url: web.url("/web") }] } },
      { id: "app-hook", settings: { webhooks: [{ url: app.url("/app") }] } },
      // The third source's only webhook destination is disabled: it gets no notification.
      { id: "pos-hook", enabled: false, settings: { webhooks: [{ url: offline.url("/pos") }] } },
    ],
    connections: [
      { sourceId: "web", destinationId: "web-hook" },
      { sourceId: "app", destinationId: "app-hook" },
      { sourceId: "pos", destinationId: "pos-hook" },
    ],
  });
});
afterEach(async () => {
  await fixture.dispose();
  await Promise.all([web.close(), app.close(), offline.close()]);
});

it("notifies each affected source with an enabled webhook destination once, without version", async () => {
  const response = await fixture.client.requestDeletion({ userId: "user-42", sourceIds: ["web", "app", "pos"], requestId: "del-1" });
  expect(response.notifiedSourceIds.sort()).toEqual(["app", "web"]);
  await waitFor("both notifications", () => web.requests.length === 1 && app.requests.length === 1);

  // Repeating the same request does not notify twice.
  await fixture.client.requestDeletion({ userId: "user-42", sourceIds: ["web", "app", "pos"], requestId: "del-1" });
  await fixture.deliveredAll();

  for (const receiver of [web, app]) {
    expect(receiver.requests).toHaveLength(1);
    const body = receiver.requests[0]!.json;
    expect(Object.keys(body)).toEqual(["type", "userId", "timestamp", "messageId"]);
    expect(body).toMatchObject({ type: "delete", userId: "user-42" });
    expect(body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  }
  expect(web.requests[0]!.path).toBe("/web");
  expect(app.requests[0]!.path).toBe("/app");
  expect(offline.requests).toHaveLength(0);
});

it("covers every source when none is named", async () => {
  const response = await fixture.client.requestDeletion({ userId: "user-7" });
  expect(response.notifiedSourceIds.sort()).toEqual(["app", "web"]);
  expect(response.requestId).not.toBe("");
  await waitFor("both notifications", () => web.requests.length === 1 && app.requests.length === 1);
});

it("refuses an unknown source and a missing user id, notifying nobody", async () => {
  const cases: [Partial<RequestDeletionRequest>, string, RegExp][] = [
    [{ userId: "u", sourceIds: ["web", "nope"] }, "NOT_FOUND", /source_ids\[1\]: unknown source "nope"/],
    [{ userId: "" }, "INVALID_ARGUMENT", /user_id: is required/],
  ];
  for (const [request, code, message] of cases) {
    const error = await fixture.client.requestDeletion(request).catch((e: unknown) => e);
    expect(isGrpcError(error) && status[error.code]).toBe(code);
    expect(isGrpcError(error) && error.details).toMatch(message);
  }
  await fixture.deliveredAll();
  expect(web.requests.length + app.requests.length).toBe(0);
});
