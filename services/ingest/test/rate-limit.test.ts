import { status } from "@grpc/grpc-js";
import { basicAuthorization } from "@switchyard/workspace";
import { readCallBatches, signedUpCall, waitFor } from "@switchyard/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { loadIngestConfig, rateLimitOf } from "../src/config.js";
import { isGrpcError, OTHER_WRITE_KEY, startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

/**
 * Per-source rate limiting through real ingest. The rate is slow (one call
 * every 4 s) so that nothing refills between two requests of the test unless
 * the test waits for it.
 */

let fixture: IngestFixture | undefined;
afterEach(async () => {
  await fixture?.dispose();
  fixture = undefined;
});

function httpTrack(f: IngestFixture, writeKey: string, messageId: string): Promise<Response> {
  return fetch(`${f.httpUrl}/v1/track`, {
    method: "POST",
    headers: { authorization: basicAuthorization(writeKey), "content-type": "application/json" },
    body: JSON.stringify({ userId: "user-1", event: "Signed Up", messageId }),
  });
}

async function grpcRefusal(promise: Promise<unknown>): Promise<{ code: number; details: string; retryAfter: unknown }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isGrpcError(error)) throw new Error("expected a gRPC error");
  return { code: error.code, details: error.details, retryAfter: error.metadata.get("retry-after")[0] };
}

describe("ingest rate limiting", () => {
  it("is off by default", async () => {
    const f = (fixture = await startIngestFixture());
    const calls = Array.from({ length: 200 }, (_, i) => signedUpCall(`m-${i}`));
    expect((await f.grpc.ingestBatch({ calls })).accepted).toBe(200);
    expect((await f.grpc.ingestBatch({ calls: calls.map((c) => ({ ...c, messageId: `again-${c.messageId}` })) })).accepted).toBe(200);
  });

  it("counts calls per source: over the limit gRPC gets RESOURCE_EXHAUSTED with retry-after, HTTP 429 with Retry-After, nothing is published", async () => {
    const f = (fixture = await startIngestFixture({ env: { INGEST_RATE_LIMIT_PER_SECOND: "0.25", INGEST_RATE_LIMIT_BURST: "3" } }));

    // A batch of 3 calls takes the whole burst.
    expect(
      (await f.grpc.ingestBatch({ batchId: "b-1", calls: [signedUpCall("m-1"), signedUpCall("m-2"), signedUpCall("m-3")] })).accepted,
    ).toBe(3);

    const refused = await grpcRefusal(f.grpc.ingestCall({ call: signedUpCall("m-refused-grpc") }));
    expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(refused.details).toMatch(/^rate limit: this source may send 0\.25 calls per second \(bursts of 3\); retry in [1-4] s$/);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(4);

    const http = await httpTrack(f, WRITE_KEY, "m-refused-http");
    expect(http.status).toBe(429);
    expect(Number(http.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(http.headers.get("retry-after"))).toBeLessThanOrEqual(4);
    expect(await http.json()).toMatchObject({ success: false, error: { code: "rate_limited" } });

    // Another source has a bucket of its own.
    expect((await httpTrack(f, OTHER_WRITE_KEY, "m-other")).status).toBe(200);

    // Once a token came back (polling; refused polls take nothing), the source is let in again.
    let probe = 0;
    await waitFor("the bucket to refill", async () => (await httpTrack(f, WRITE_KEY, `m-later-${++probe}`)).status === 200, {
      intervalMs: 250,
      timeoutMs: 15_000,
    });

    const stored = (await readCallBatches(f.nc, f.names)).flatMap((s) => s.batch.calls.map((c) => c.messageId));
    expect(stored.sort()).toEqual(["m-1", "m-2", "m-3", `m-later-${probe}`, "m-other"].sort());
  });

  it("refuses bad settings, naming the variables", () => {
    expect(() => loadIngestConfig({ INGEST_RATE_LIMIT_BURST: "10" })).toThrow(
      "INGEST_RATE_LIMIT_BURST: needs INGEST_RATE_LIMIT_PER_SECOND",
    );
    expect(() => loadIngestConfig({ INGEST_RATE_LIMIT_PER_SECOND: "-1" })).toThrow("INGEST_RATE_LIMIT_PER_SECOND: must be positive");
    expect(() => loadIngestConfig({ INGEST_RATE_LIMIT_PER_SECOND: "5", INGEST_RATE_LIMIT_BURST: "2.5" })).toThrow(
      "INGEST_RATE_LIMIT_BURST: must be an integer",
    );
    expect(rateLimitOf(loadIngestConfig({}))).toBeUndefined();
    expect(rateLimitOf(loadIngestConfig({ INGEST_RATE_LIMIT_PER_SECOND: "2.5" }))).toEqual({ perSecond: 2.5, burst: 3 });
  });
});
