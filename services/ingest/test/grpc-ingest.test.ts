import { status } from "@grpc/grpc-js";
import type { Call } from "@switchyard/contracts";
import { readCallBatches, makeCall } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isGrpcError, startIngestFixture, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

let fixture: IngestFixture;
beforeEach(async () => {
  fixture = await startIngestFixture();
});
afterEach(async () => {
  await fixture.dispose();
});

function trackCall(index: number, overrides: Partial<Call> = {}): Call {
  return makeCall({
    messageId: "",
    userId: `user-${index}`,
    context: { ip: "203.0.113.7", library: { name: "test", version: "1" } },
    payload: { $case: "track", value: { event: "Order Completed", properties: { index, revenue: 12.5, items: ["a", "b"] } } },
    ...overrides,
  });
}

async function expectGrpcError(promise: Promise<unknown>, code: status, pattern: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isGrpcError(error), `expected a gRPC error, got ${String(error)}`).toBe(true);
  if (!isGrpcError(error)) return;
  expect(status[error.code]).toBe(status[code]);
  expect(error.details).toMatch(pattern);
}

describe("gRPC ingest", () => {
  it("publishes each batch as one JetStream message with every call enriched", async () => {
    const before = Date.now();
    const historical = new Date("2024-03-01T12:34:56.789Z");
    const sent: Call[][] = [
      Array.from({ length: 50 }, (_, i) => trackCall(i)),
      [trackCall(100, { messageId: "client-id-1", timestamp: historical })],
    ];
    const responses = [];
    for (const calls of sent) responses.push(await fixture.grpc.ingestBatch({ calls }));

    expect(responses.map((r) => r.accepted)).toEqual([50, 1]);
    expect(responses[1]?.messageIds).toEqual(["client-id-1"]);

    const stored = await readCallBatches(fixture.nc, fixture.names);
    expect(stored).toHaveLength(2);
    expect(stored[0]?.subject).toBe(fixture.names.callsSubject("web"));
    expect(stored[0]?.type).toBe("switchyard.v1.CallBatch");
    expect(stored[0]?.msgId).toBe(`web:${responses[0]?.batchId}`);

    const calls = stored.flatMap((s) => s.batch.calls);
    expect(calls).toHaveLength(51);
    expect(calls.map((c) => c.messageId)).toEqual([...(responses[0]?.messageIds ?? []), "client-id-1"]);
    expect(new Set(calls.map((c) => c.messageId)).size).toBe(51);
    for (const [index, call] of calls.slice(0, 50).entries()) {
      expect(call.userId).toBe(`user-${index}`);
      expect(call.payload).toEqual({
        $case: "track",
        value: { event: "Order Completed", properties: { index, revenue: 12.5, items: ["a", "b"] } },
      });
      expect(call.context).toEqual({ ip: "203.0.113.7", library: { name: "test", version: "1" } });
      expect(call.receivedAt?.getTime()).toBeGreaterThanOrEqual(before);
      // No client timestamp: the accept time is used.
      expect(call.timestamp?.getTime()).toBe(call.receivedAt?.getTime());
    }
    const imported = calls[50];
    expect(imported?.timestamp?.toISOString()).toBe("2024-03-01T12:34:56.789Z");
    expect(imported?.receivedAt?.getTime()).toBeGreaterThanOrEqual(before);
    expect(stored.every((s) => s.batch.sourceId === "web")).toBe(true);
  });

  it("accepts a single call and refuses an invalid one by field and rule", async () => {
    const ok = await fixture.grpc.ingestCall({ call: trackCall(1, { messageId: "single-1" }) });
    expect(ok).toEqual({ messageId: "single-1", duplicate: false });

    await expectGrpcError(
      fixture.grpc.ingestCall({ call: trackCall(2, { userId: "" }) }),
      status.INVALID_ARGUMENT,
      /userId.*anonymousId is required/,
    );
    await expectGrpcError(
      fixture.grpc.ingestCall({ call: trackCall(3, { payload: { $case: "track", value: { event: "", properties: undefined } } }) }),
      status.INVALID_ARGUMENT,
      /^event: /,
    );
    const stored = await readCallBatches(fixture.nc, fixture.names);
    expect(stored.flatMap((s) => s.batch.calls.map((c) => c.messageId))).toEqual(["single-1"]);
  });

  it("stores a batch re-sent with the same batch id once", async () => {
    const calls = Array.from({ length: 5 }, (_, i) => trackCall(i));
    const first = await fixture.grpc.ingestBatch({ batchId: "batch-42", calls });
    const second = await fixture.grpc.ingestBatch({ batchId: "batch-42", calls });
    expect(first.duplicate).toBe(false);
    expect(second.duplicate).toBe(true);
    // Ids the ingest made up are derived from the batch id, so the re-send reports the same ones.
    expect(second.messageIds).toEqual(first.messageIds);

    const stored = await readCallBatches(fixture.nc, fixture.names);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.batch.calls).toHaveLength(5);
  });

  it("stores a valid batch whose protobuf outgrows one bus message in parts, and a re-send of it once", async () => {
    // 2,000 zeros are 4 KB of JSON but 22 KB of protobuf (11 bytes a google.protobuf.Value): 60 such calls are
    // 240 KB of JSON, well within the 500 KB limit, and 1.3 MB on the bus, over its 1 MiB message limit.
    const calls = Array.from({ length: 60 }, (_, i) =>
      trackCall(i, {
        messageId: `m-${i}`,
        payload: { $case: "track", value: { event: "Samples", properties: { l: Array(2_000).fill(0) } } },
      }),
    );
    const first = await fixture.grpc.ingestBatch({ batchId: "big-numbers", calls });
    expect(first).toMatchObject({ accepted: 60, duplicate: false, rejections: [] });
    const again = await fixture.grpc.ingestBatch({ batchId: "big-numbers", calls });
    expect(again).toMatchObject({ accepted: 60, duplicate: true });

    const stored = await readCallBatches(fixture.nc, fixture.names);
    expect(stored.length).toBeGreaterThan(1);
    expect(stored.flatMap((message) => message.batch.calls.map((call) => call.messageId))).toEqual(calls.map((call) => call.messageId));
    expect(new Set(stored.map((message) => message.batch.batchId))).toEqual(new Set(["big-numbers"]));
    expect(stored.map((message) => message.msgId)).toEqual(
      stored.map((message) => expect.stringMatching(new RegExp(`^${message.batch.sourceId}:big-numbers#calls=\\d+-\\d+$`))),
    );
  });

  it("keeps the valid calls of a mixed batch and reports each rejected one", async () => {
    const calls: Call[] = [
      trackCall(0),
      trackCall(1, { userId: "", anonymousId: "" }),
      trackCall(2, { payload: { $case: "group", value: { groupId: "", traits: undefined } } }),
      trackCall(3, { payload: { $case: "alias", value: { previousId: "" } } }),
      trackCall(4, { payload: undefined }),
      trackCall(5, { payload: { $case: "delete", value: {} } }),
      trackCall(6, { integrations: { Webhooks: "yes" } }),
      trackCall(7, { payload: { $case: "identify", value: { traits: { blob: "x".repeat(33 * 1024) } } } }),
      trackCall(8, { anonymousId: "anon-8", userId: "" }),
    ];
    const response = await fixture.grpc.ingestBatch({ calls });
    expect(response.accepted).toBe(2);
    expect(response.rejections.map((r) => [r.index, r.field, r.rule])).toEqual([
      [1, "userId", "identity_required"],
      [2, "groupId", "required"],
      [3, "previousId", "required"],
      [4, "type", "call_type"],
      [5, "type", "call_type"],
      [6, "integrations.Webhooks", "value"],
      [7, "", "max_size"],
    ]);
    for (const rejection of response.rejections) expect(rejection.message.length).toBeGreaterThan(10);

    const stored = await readCallBatches(fixture.nc, fixture.names);
    const users = stored.flatMap((s) => s.batch.calls.map((c) => c.userId || c.anonymousId));
    expect(users).toEqual(["user-0", "anon-8"]);
  });

  it("refuses a batch over 500 KB whole, and an empty batch", async () => {
    const big = Array.from({ length: 17 }, (_, i) =>
      trackCall(i, { payload: { $case: "track", value: { event: "Big", properties: { blob: "y".repeat(30 * 1024) } } } }),
    );
    await expectGrpcError(fixture.grpc.ingestBatch({ calls: big }), status.INVALID_ARGUMENT, /500 KB/);
    await expectGrpcError(fixture.grpc.ingestBatch({ calls: [] }), status.INVALID_ARGUMENT, /at least one call/);
    expect(await readCallBatches(fixture.nc, fixture.names)).toHaveLength(0);
  });

  it("refuses a batch id with control characters, naming the field, and publishes nothing", async () => {
    // The batch id goes into the Nats-Msg-Id header; a line break there broke the publish (UNAVAILABLE after a timeout).
    for (const batchId of ["line\nbreak", "\r\nNats-Expected-Stream: X", "nul\u0000", "tab\t", "next-line\u0085"]) {
      await expectGrpcError(
        fixture.grpc.ingestBatch({ batchId, calls: [trackCall(0)] }),
        status.INVALID_ARGUMENT,
        /^batch_id: must not contain control characters/,
      );
    }
    expect(await readCallBatches(fixture.nc, fixture.names)).toHaveLength(0);
    expect((await fixture.grpc.ingestBatch({ batchId: "ünïcode is fine", calls: [trackCall(0)] })).accepted).toBe(1);
  });

  it("refuses a batch id with white space at either end, which NATS would trim into another batch's id", async () => {
    expect((await fixture.grpc.ingestBatch({ batchId: "x", calls: [trackCall(0)] })).accepted).toBe(1);
    for (const batchId of ["x ", " x", "x\u00a0", "x\u2028", "\u3000x"]) {
      await expectGrpcError(
        fixture.grpc.ingestBatch({ batchId, calls: [trackCall(1)] }),
        status.INVALID_ARGUMENT,
        /^batch_id: must not begin or end with white space/,
      );
    }
    expect((await fixture.grpc.ingestBatch({ batchId: "white space inside is fine", calls: [trackCall(2)] })).duplicate).toBe(false);
    expect(await readCallBatches(fixture.nc, fixture.names)).toHaveLength(2);
  });

  it("answers UNAUTHENTICATED for a missing or wrong write key and publishes nothing", async () => {
    await expectGrpcError(fixture.grpc.ingestBatch({ calls: [trackCall(0)] }, null), status.UNAUTHENTICATED, /missing write key/);
    await expectGrpcError(
      fixture.grpc.ingestBatch({ calls: [trackCall(0)] }, "wk_wrong_key_000000"),
      status.UNAUTHENTICATED,
      /unknown write key/,
    );
    await expectGrpcError(
      fixture.grpc.ingestCall({ call: trackCall(0) }, "wk_wrong_key_000000"),
      status.UNAUTHENTICATED,
      /unknown write key/,
    );
    expect(await readCallBatches(fixture.nc, fixture.names)).toHaveLength(0);
  });

  it("routes each source's calls to its own subject", async () => {
    await fixture.grpc.ingestBatch({ calls: [trackCall(0)] });
    await fixture.grpc.ingestBatch({ calls: [trackCall(1)] }, "wk_test_other_0123456789");
    const stored = await readCallBatches(fixture.nc, fixture.names);
    expect(stored.map((s) => [s.subject, s.batch.sourceId])).toEqual([
      [fixture.names.callsSubject("web"), "web"],
      [fixture.names.callsSubject("mobile"), "mobile"],
    ]);
  });
});
