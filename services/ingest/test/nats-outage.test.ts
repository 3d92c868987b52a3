import { status } from "@grpc/grpc-js";
import type { Call } from "@switchyard/contracts";
import { readCallBatches, waitFor, makeCall } from "@switchyard/testkit";
import { afterEach, beforeEach, expect, it } from "vitest";
import { isGrpcError, startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

let fixture: IngestFixture;
beforeEach(async () => {
  fixture = await startIngestFixture();
});
afterEach(async () => {
  await fixture.dispose();
});

const call = (id: string): Call =>
  makeCall({ messageId: id, userId: "u1", payload: { $case: "track", value: { event: "Outage Test", properties: undefined } } });

async function grpcCode(batchId: string, messageId: string): Promise<string> {
  try {
    await fixture.grpc.ingestBatch({ batchId, calls: [call(messageId)] });
    return "OK";
  } catch (error) {
    if (isGrpcError(error)) return status[error.code];
    throw error;
  }
}

it("answers UNAVAILABLE while NATS is down and recovers when it returns, storing each batch once", async () => {
  expect(await grpcCode("before", "m-before")).toBe("OK");

  await fixture.nats.stop();
  expect(await waitFor("ingest to report UNAVAILABLE", async () => (await grpcCode("during", "m-during")) === "UNAVAILABLE")).toBe(true);

  const http = await fetch(`${fixture.httpUrl}/v1/track`, {
    method: "POST",
    headers: { Authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`, "Content-Type": "application/json" },
    body: JSON.stringify({ userId: "u1", event: "During Outage", messageId: "m-http" }),
  });
  expect(http.status).toBe(503);
  expect(http.headers.get("retry-after")).toBe("1");

  await fixture.nats.start();
  // The client retries the refused batch with the same id, as it should, until it is accepted.
  await waitFor("ingest to accept again", async () => (await grpcCode("during", "m-during")) === "OK", { timeoutMs: 20_000 });
  expect(await grpcCode("during", "m-during")).toBe("OK");

  // The test's own connection reconnects on its own schedule after the restart (a CI run once timed out
  // reading right away, after ingest's connection was already back): read once it answers.
  const stored = await waitFor("the calls stream readable over the test's connection", () => readCallBatches(fixture.nc, fixture.names), {
    timeoutMs: 20_000,
  });
  expect(stored.flatMap((s) => s.batch.calls.map((c) => c.messageId))).toEqual(["m-before", "m-during"]);
});
