import { credentials, Metadata, status, type ServiceError as GrpcError } from "@grpc/grpc-js";
import { MAX_BATCH_CALLS } from "@switchyard/calls";
import { Call, IngestBatchResponse, IngestServiceClient, IngestServiceService } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { readCallBatches, makeCall } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lengthDelimited, varint } from "@switchyard/testkit";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

// What only a client writing its own protobuf bytes can send: malformed calls and requests, and
// fields a generated client never writes.
let fixture: IngestFixture;
let client: IngestServiceClient;
beforeEach(async () => {
  fixture = await startIngestFixture();
  client = new IngestServiceClient(`127.0.0.1:${fixture.ingest.grpcPort}`, credentials.createInsecure());
});
afterEach(async () => {
  client.close();
  await fixture.dispose();
});

function sendRaw(path: string, request: Buffer): Promise<Buffer> {
  const metadata = new Metadata();
  metadata.set("authorization", basicAuthorization(WRITE_KEY));
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(
      path,
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      request,
      metadata,
      { deadline: Date.now() + 10_000 },
      (error, response) => (error || !response ? reject(error ?? new Error("no response")) : resolve(response)),
    ),
  );
}

async function grpcErrorOf(promise: Promise<unknown>): Promise<GrpcError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as GrpcError,
  );
  if (!error) throw new Error("expected a gRPC error");
  return error;
}

const trackCall = (overrides: Partial<Call> = {}): Buffer =>
  Buffer.from(
    Call.encode(
      makeCall({
        messageId: "",
        userId: "u1",
        context: { ip: "203.0.113.7" },
        payload: { $case: "track", value: { event: "Signed In", properties: { plan: "pro" } } },
        ...overrides,
      }),
    ).finish(),
  );

describe("gRPC ingest from raw protobuf bytes", () => {
  it("refuses a malformed call on its own, keeps the others, and stores its own received_at, not the client's", async () => {
    const clientReceivedAt = Buffer.from(Call.encode({ ...Call.fromPartial({}), receivedAt: new Date(5_000) }).finish());
    const unknownField = Buffer.concat([varint((99 << 3) | 0), varint(42)]);
    const withExtras = Buffer.concat([trackCall({ messageId: "m-extras" }), unknownField, clientReceivedAt]);
    const truncated = trackCall({ messageId: "m-truncated" }).subarray(0, 20);
    const request = Buffer.concat([
      lengthDelimited(1, Buffer.from("raw-1")),
      ...[withExtras, truncated, trackCall({ messageId: "m-ok" })].map((c) => lengthDelimited(2, c)),
    ]);

    const response = IngestBatchResponse.decode(await sendRaw(IngestServiceService.ingestBatch.path, request));
    expect(response.messageIds).toEqual(["m-extras", "m-ok"]);
    expect(response.rejections).toEqual([
      { index: 1, messageId: "", field: "", rule: "malformed", message: expect.stringMatching(/^call: is not a valid protobuf Call/) },
    ]);

    const [stored] = await readCallBatches(fixture.nc, fixture.names);
    const published = stored?.batch.calls ?? [];
    expect(published.map((call) => call.messageId)).toEqual(["m-extras", "m-ok"]);
    expect(published[0]?.receivedAt?.getTime()).not.toBe(5_000);
    expect(published[0]?.receivedAt).toEqual(stored?.batch.receivedAt);
    expect(published[0]?.context).toEqual({ ip: "203.0.113.7" });
  });

  it("counts a malformed call's bytes toward the 500 KB batch limit, and refuses more calls than any batch can hold", async () => {
    const garbage = Buffer.alloc(100 * 1024, 0xff); // not a Call: 0xff starts a varint that never ends well
    const overWithGarbage = Buffer.concat(
      [trackCall({ messageId: "m-ok" }), ...Array.from({ length: 6 }, () => garbage)].map((c) => lengthDelimited(2, c)),
    );
    const sizeError = await grpcErrorOf(sendRaw(IngestServiceService.ingestBatch.path, overWithGarbage));
    expect(status[sizeError.code]).toBe("INVALID_ARGUMENT");
    expect(sizeError.details).toMatch(/500 KB/);

    // A few bytes each: without the count limit, each would have cost a refusal object and a line of the answer.
    const tiny = lengthDelimited(2, Buffer.from([0x08]));
    const countError = await grpcErrorOf(
      sendRaw(IngestServiceService.ingestBatch.path, Buffer.concat(Array.from({ length: MAX_BATCH_CALLS + 1 }, () => tiny))),
    );
    expect(status[countError.code]).toBe("INVALID_ARGUMENT");
    expect(countError.details).toMatch(new RegExp(`^calls: a batch holds at most ${MAX_BATCH_CALLS} calls`));
    expect(await readCallBatches(fixture.nc, fixture.names)).toHaveLength(0);
  });

  it("refuses a request that is not a valid IngestBatchRequest with INVALID_ARGUMENT", async () => {
    const error = await grpcErrorOf(sendRaw(IngestServiceService.ingestBatch.path, Buffer.from([0x12, 0x7f, 0x01])));
    expect(status[error.code]).toBe("INVALID_ARGUMENT");
    expect(error.details).toMatch(/not a valid IngestBatchRequest/);
  });

  it("refuses a timestamp no date can hold by the timestamp rule, not with INTERNAL", async () => {
    const farFuture = lengthDelimited(4, Buffer.concat([varint(1 << 3), varint(10n ** 15n)]));
    const call = Buffer.concat([trackCall({ messageId: "m-far" }), farFuture]);
    const batch = IngestBatchResponse.decode(await sendRaw(IngestServiceService.ingestBatch.path, lengthDelimited(2, call)));
    expect(batch.rejections.map((r) => [r.index, r.field, r.rule])).toEqual([[0, "timestamp", "format"]]);

    const error = await grpcErrorOf(sendRaw(IngestServiceService.ingestCall.path, lengthDelimited(1, call)));
    expect(status[error.code]).toBe("INVALID_ARGUMENT");
    expect(error.details).toMatch(/^timestamp: .*\(rule: format\)$/);
  });

  it("refuses what could not be stored as sent: a messageId with a line break, text not UTF-8, NaN; each naming its field", async () => {
    const notUtf8Properties = lengthDelimited(
      11,
      Buffer.concat([
        lengthDelimited(1, Buffer.from("E")),
        lengthDelimited(
          2,
          lengthDelimited(
            1,
            Buffer.concat([lengthDelimited(1, Buffer.from("name")), lengthDelimited(2, lengthDelimited(3, Buffer.from([0x61, 0xc3])))]),
          ),
        ),
      ]),
    );
    const calls = [
      trackCall({ messageId: "m\r\nNats-Msg-Id: other" }),
      Buffer.concat([lengthDelimited(2, Buffer.from("u1")), notUtf8Properties]),
      trackCall({ payload: { $case: "track", value: { event: "E", properties: { price: Number.NaN } } } }),
      trackCall({ context: { screen: { density: -Infinity } } }),
      trackCall({ messageId: "m-😀-ok" }),
    ];
    const batch = IngestBatchResponse.decode(
      await sendRaw(IngestServiceService.ingestBatch.path, Buffer.concat(calls.map((call) => lengthDelimited(2, call)))),
    );
    expect(batch.rejections.map((r) => [r.index, r.field, r.rule, r.message])).toEqual([
      [0, "messageId", "control_characters", "messageId: must not contain control characters"],
      [1, "properties.name", "utf8", "properties.name: must be valid UTF-8"],
      [2, "properties.price", "finite_number", "properties.price: must be a finite number"],
      [3, "context.screen.density", "finite_number", "context.screen.density: must be a finite number"],
    ]);
    expect(batch.messageIds).toEqual(["m-😀-ok"]);
    const stored = (await readCallBatches(fixture.nc, fixture.names)).flatMap((s) => s.batch.calls);
    expect(stored.map((call) => call.messageId)).toEqual(["m-😀-ok"]);

    const error = await grpcErrorOf(sendRaw(IngestServiceService.ingestCall.path, lengthDelimited(1, calls[0]!)));
    expect(status[error.code]).toBe("INVALID_ARGUMENT");
    expect(error.details).toBe("messageId: must not contain control characters (rule: control_characters)");
  });

  it('stores "__proto__" keys as ordinary data, on the fast path', async () => {
    const properties = JSON.parse('{"__proto__":{"a":1},"constructor":"c"}') as Record<string, unknown>;
    const context = JSON.parse('{"__proto__":"ctx"}') as Record<string, unknown>;
    const call = trackCall({ messageId: "m-proto", context, payload: { $case: "track", value: { event: "E", properties } } });
    expect(call.includes("__proto__")).toBe(true);
    await sendRaw(IngestServiceService.ingestBatch.path, lengthDelimited(2, call));
    const [stored] = (await readCallBatches(fixture.nc, fixture.names)).flatMap((s) => s.batch.calls);
    expect(JSON.stringify(stored?.context)).toBe('{"__proto__":"ctx"}');
    expect(JSON.stringify(stored?.payload?.$case === "track" && stored.payload.value.properties)).toBe(
      '{"__proto__":{"a":1},"constructor":"c"}',
    );
  });

  it("refuses a batch_id that is not UTF-8, which would read as U+FFFD and could pass for another batch's id", async () => {
    const call = lengthDelimited(2, trackCall({ messageId: "m-batch-id" }));
    for (const bad of [[0x61, 0xff], [0xc3], [0xed, 0xa0, 0x80]]) {
      const error = await grpcErrorOf(
        sendRaw(IngestServiceService.ingestBatch.path, Buffer.concat([lengthDelimited(1, Buffer.from(bad)), call])),
      );
      expect(status[error.code]).toBe("INVALID_ARGUMENT");
      expect(error.details).toBe("batch_id: must be valid UTF-8");
    }
    expect(await readCallBatches(fixture.nc, fixture.names)).toHaveLength(0);
    const ok = IngestBatchResponse.decode(
      await sendRaw(IngestServiceService.ingestBatch.path, Buffer.concat([lengthDelimited(1, Buffer.from("bätch-😀")), call])),
    );
    expect(ok.batchId).toBe("bätch-😀");
  });
});
