import { status as GrpcStatus } from "@grpc/grpc-js";
import { Call } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { MetricsSnapshot, WebhookReceiver } from "@switchyard/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, type Stack } from "../helpers/stack.js";

/**
 * Ingest and delivery in this process with a real receiver behind three
 * destinations: one answers 200, one 503 once per call and then 200, one 410
 * (a permanent failure: dead letter). A known set of calls goes in, some of
 * them refused; after delivery settled, both services' /metrics must count
 * exactly that.
 */

const WRITE_KEY = "wk_e2e_metrics_0123456789";
let receiver: WebhookReceiver;
let stack: Stack;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  const seenFlaky = new Set<string>();
  receiver.respond((request) => {
    if (request.path === "/gone") return { status: 410 };
    if (request.path === "/flaky" && !seenFlaky.has(request.json.messageId)) {
      seenFlaky.add(request.json.messageId);
      return { status: 503 };
    }
    return { status: 200 };
  });
  const destination = (id: string) => ({ id, settings: { webhooks: [{ url: receiver.url(`/${id}`) }] } });
  stack = await startStack({
    workspace: {
      sources: [{ id: "backend", writeKeys: [WRITE_KEY] }],
      destinations: [destination("ok"), destination("flaky"), destination("gone")],
      connections: ["ok", "flaky", "gone"].map((destinationId) => ({ sourceId: "backend", destinationId })),
    },
    // Quick retries, and no destination is marked failing, so no first attempt is deferred.
    deliveryEnv: { DELIVERY_RETRY_BASE_DELAY_MS: "50", DELIVERY_FAILURE_THRESHOLD: "1000" },
  });
});

afterAll(async () => {
  await stack?.dispose();
  await receiver?.close();
});

async function post(path: string, body: unknown, writeKey = WRITE_KEY): Promise<{ status: number; json: any }> {
  const response = await fetch(`${stack.httpUrl}${path}`, {
    method: "POST",
    headers: { Authorization: basicAuthorization(writeKey), "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

const track = (userId: string, event: string) => Call.fromPartial({ userId, payload: { $case: "track", value: { event } } });

it("counts accepted, rejected and delivered calls exactly as they happened", async () => {
  // HTTP: a batch of three valid calls and one without any user id, one single call, one bad write key.
  const batch = await post("/v1/batch", {
    batch: [
      { type: "track", userId: "h1", event: "A" },
      { type: "track", userId: "h2", event: "B" },
      { type: "identify", userId: "h3", traits: { plan: "pro" } },
      { type: "track", event: "No Identity" },
    ],
  });
  expect(batch.status).toBe(200);
  const httpRule: string = batch.json.rejected[0].rule;
  expect((await post("/v1/track", { userId: "h4", event: "C" })).status).toBe(200);
  expect((await post("/v1/track", { userId: "h5", event: "D" }, "wk_unknown_0123456789")).status).toBe(401);

  // gRPC: a batch of two valid calls and one invalid, sent twice (the re-send is a duplicate), one bad write key.
  const grpcBatch = { batchId: "metrics-batch-1", calls: [track("g1", "E"), track("g2", "F"), track("g3", "")] };
  const first = await stack.grpc.ingestBatch(grpcBatch, WRITE_KEY);
  expect(first.accepted).toBe(2);
  const grpcRule = first.rejections[0]!.rule;
  expect((await stack.grpc.ingestBatch(grpcBatch, WRITE_KEY)).duplicate).toBe(true);
  await expect(stack.grpc.ingestBatch(grpcBatch, "wk_unknown_0123456789")).rejects.toMatchObject({ code: GrpcStatus.UNAUTHENTICATED });

  await stack.settled();
  const stored = 6; // h1 h2 h3 h4 g1 g2, each to three destinations

  const ingest = await MetricsSnapshot.scrape(`http://127.0.0.1:${stack.ingest.opsPort}/metrics`);
  expect(ingest.value("switchyard_ingest_calls_accepted_total", { transport: "http" })).toBe(4);
  expect(ingest.value("switchyard_ingest_calls_accepted_total", { transport: "grpc" })).toBe(4); // the duplicate's calls count too
  expect(ingest.value("switchyard_ingest_duplicate_batches_total", { transport: "grpc" })).toBe(1);
  expect(ingest.value("switchyard_ingest_calls_rejected_total", { transport: "http", reason: httpRule })).toBe(1);
  expect(ingest.value("switchyard_ingest_calls_rejected_total", { transport: "grpc", reason: grpcRule })).toBe(2);
  expect(ingest.value("switchyard_ingest_calls_rejected_total")).toBe(3);
  expect(ingest.value("switchyard_ingest_requests_rejected_total", { transport: "http", reason: "unauthorized" })).toBe(1);
  expect(ingest.value("switchyard_ingest_requests_rejected_total", { transport: "grpc", reason: "unauthenticated" })).toBe(1);
  expect(ingest.value("switchyard_ingest_requests_rejected_total")).toBe(2);
  expect(ingest.value("switchyard_ingest_publish_duration_seconds_count", { outcome: "ok" })).toBe(4);
  expect(ingest.value("switchyard_ingest_publish_duration_seconds_count", { outcome: "failed" })).toBe(0);
  expect(ingest.has("process_cpu_user_seconds_total")).toBe(true);

  const delivery = await MetricsSnapshot.scrape(`http://127.0.0.1:${stack.delivery.opsPort}/metrics`);
  const requests = (outcome: string, status_class: string) =>
    delivery.value("switchyard_delivery_requests_total", { outcome, status_class });
  expect(requests("delivered", "2xx")).toBe(2 * stored); // ok, and flaky on its retry
  expect(requests("retryable", "5xx")).toBe(stored);
  expect(requests("permanent", "4xx")).toBe(stored);
  expect(delivery.value("switchyard_delivery_requests_total")).toBe(4 * stored);
  expect(delivery.value("switchyard_delivery_request_duration_seconds_count")).toBe(4 * stored);
  expect(receiver.requests).toHaveLength(4 * stored);

  const deliveries = (result: string) => delivery.value("switchyard_delivery_deliveries_total", { result });
  expect([deliveries("delivered"), deliveries("retry_scheduled"), deliveries("deferred"), deliveries("dead_lettered")]).toEqual([
    2 * stored,
    stored,
    0,
    stored,
  ]);
  expect(delivery.value("switchyard_delivery_dead_letters_total", { reason: "permanent_failure" })).toBe(stored);
  expect(delivery.value("switchyard_delivery_dead_letters")).toBe(stored);
  expect(delivery.value("switchyard_delivery_retry_backlog")).toBe(0);
  expect(delivery.value("switchyard_delivery_accept_to_delivery_seconds_count")).toBe(2 * stored);
  // Every delivery took longer than nothing and, on this machine, less than the retry window.
  expect(delivery.value("switchyard_delivery_accept_to_delivery_seconds_sum")).toBeGreaterThan(0);
  expect(delivery.value("switchyard_delivery_accept_to_delivery_seconds_bucket", { le: "14400" })).toBe(2 * stored);
});
