import { status } from "@grpc/grpc-js";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { insightsApi, type Call } from "@switchyard/contracts";
import { kvKeys, openConfigBucket, sourceRecordSchema, type SourceRecord } from "@switchyard/workspace";
import { MetricsSnapshot, readCallBatches, readStream, waitFor, makeCall } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isGrpcError, startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

/**
 * Blocking at the source: calls a source blocks are answered as accepted, stored on the filtered
 * stream with the batch's id and never on the calls stream; requests that refuse invalid calls
 * are reported to usage. Real nats-server and ingest; the blocks come from the workspace file
 * and, for live changes, from the configuration bucket as ConfigService writes it.
 */

const BLOCKING_KEY = "wk_test_blocking_0123456789";

let fixture: IngestFixture;
beforeEach(async () => {
  fixture = await startIngestFixture({
    sources: [{ id: "blocking", writeKeys: [BLOCKING_KEY], blocked: { types: ["page"], trackEvents: ["Noisy Event"] } }],
  });
});
afterEach(async () => {
  await fixture.dispose();
});

async function post(path: string, body: unknown, writeKey = BLOCKING_KEY) {
  const response = await fetch(`${fixture.httpUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const storedCalls = () => readCallBatches(fixture.nc, fixture.names);

const filtered = () => readCallBatches(fixture.nc, fixture.names, fixture.names.filteredStream);
async function rejectedReports() {
  return (await readStream(fixture.nc, fixture.names.usageStream)).map(({ data, ...message }) => ({
    ...message,
    report: insightsApi.RejectedCalls.decode(data),
  }));
}

/** What the bus shows of a call: its type, its event or name, and its messageId. */
function described(call: Call): string {
  const payload = call.payload;
  const value = payload && "value" in payload ? (payload.value as { event?: string; name?: string }) : {};
  return `${payload?.$case}:${value.event ?? value.name ?? ""}:${call.messageId}`;
}

function grpcCall(messageId: string, payload: Call["payload"]): Call {
  return makeCall({ messageId, userId: "user-1", payload });
}

/** A batch with two calls that pass, one blocked by event name, one blocked by type, and one invalid (index 4). */
const MIXED_JSON = [
  { type: "track", userId: "u1", event: "Signed Up", messageId: "m-0" },
  { type: "track", userId: "u1", event: "Noisy Event", messageId: "m-1", properties: { a: 1 } },
  { type: "page", userId: "u1", name: "Pricing", messageId: "m-2" },
  { type: "identify", userId: "u1", traits: { plan: "pro" }, messageId: "m-3" },
  { type: "track", userId: "u1", messageId: "m-4" },
];
const MIXED_GRPC: Call[] = [
  grpcCall("g-0", { $case: "track", value: { event: "Signed Up", properties: undefined } }),
  grpcCall("g-1", { $case: "track", value: { event: "Noisy Event", properties: { a: 1 } } }),
  grpcCall("g-2", { $case: "page", value: { name: "Pricing", category: "", properties: undefined } }),
  grpcCall("g-3", { $case: "identify", value: { traits: { plan: "pro" } } }),
  grpcCall("g-4", { $case: "track", value: { event: "", properties: undefined } }),
];

describe("blocked calls", () => {
  it("HTTP /v1/batch: blocked calls are answered as accepted and stored on the filtered stream only, with the batch's id", async () => {
    const response = await post("/v1/batch", { batch: MIXED_JSON });
    // The same answer as for any partly accepted batch: blocked calls count as accepted.
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true, accepted: 4, rejected: [{ index: 4, field: "event" }] });

    const [stored] = await storedCalls();
    const [blocked, ...more] = await filtered();
    expect(more).toEqual([]);
    expect(stored?.batch.calls.map(described)).toEqual(["track:Signed Up:m-0", "identify::m-3"]);
    expect(blocked?.batch.calls.map(described)).toEqual(["track:Noisy Event:m-1", "page:Pricing:m-2"]);
    expect(blocked?.subject).toBe(fixture.names.filteredSubject("blocking"));
    expect(blocked?.type).toBe("switchyard.v1.CallBatch");
    expect(blocked?.batch.batchId).toBe(stored?.batch.batchId);
    expect(blocked?.msgId).toBe(stored?.msgId);
    expect(blocked?.msgId).toBe(`blocking:${stored?.batch.batchId}`);
    expect(blocked?.batch.sourceId).toBe("blocking");
    // Enriched like every accepted call, so they can be replayed as they are.
    for (const call of blocked?.batch.calls ?? []) expect(call.receivedAt).toEqual(blocked?.batch.receivedAt);
    expect(blocked?.batch.calls[0]?.payload).toMatchObject({ $case: "track", value: { properties: { a: 1 } } });
  });

  it("gRPC IngestBatch: the same split, every valid call's messageId in the answer, and a re-send stored once", async () => {
    const first = await fixture.grpc.ingestBatch({ batchId: "grpc-mixed-1", calls: MIXED_GRPC }, BLOCKING_KEY);
    expect(first).toMatchObject({ batchId: "grpc-mixed-1", accepted: 4, messageIds: ["g-0", "g-1", "g-2", "g-3"], duplicate: false });
    expect(first.rejections.map((r) => [r.index, r.field])).toEqual([[4, "event"]]);
    const again = await fixture.grpc.ingestBatch({ batchId: "grpc-mixed-1", calls: MIXED_GRPC }, BLOCKING_KEY);
    expect(again).toMatchObject({ accepted: 4, messageIds: ["g-0", "g-1", "g-2", "g-3"], duplicate: true });

    const stored = await storedCalls();
    const blocked = await filtered();
    expect(stored.map((s) => [s.msgId, s.batch.calls.map(described)])).toEqual([
      ["blocking:grpc-mixed-1", ["track:Signed Up:g-0", "identify::g-3"]],
    ]);
    expect(blocked.map((s) => [s.subject, s.msgId, s.batch.batchId, s.batch.calls.map(described)])).toEqual([
      [fixture.names.filteredSubject("blocking"), "blocking:grpc-mixed-1", "grpc-mixed-1", ["track:Noisy Event:g-1", "page:Pricing:g-2"]],
    ]);
    // Stored from the client's bytes (the fast path), properties intact.
    expect(blocked[0]?.batch.calls[0]?.payload).toMatchObject({ $case: "track", value: { properties: { a: 1 } } });
  });

  it("blocked calls too large for one bus message are stored in parts, as accepted ones are, and a re-send once", async () => {
    // 1,900 zeros: 3.8 KB of JSON, 21 KB of protobuf. 60 such calls each way: 456 KB of JSON, and 1.25 MB on
    // the bus each way, over its 1 MiB message limit.
    const calls = Array.from({ length: 120 }, (_, i) =>
      grpcCall(`p-${i}`, {
        $case: "track",
        value: { event: i % 2 === 0 ? "Samples" : "Noisy Event", properties: { l: Array(1_900).fill(0) } },
      }),
    );
    expect(await fixture.grpc.ingestBatch({ batchId: "big-mixed", calls }, BLOCKING_KEY)).toMatchObject({
      accepted: 120,
      duplicate: false,
    });
    expect(await fixture.grpc.ingestBatch({ batchId: "big-mixed", calls }, BLOCKING_KEY)).toMatchObject({ accepted: 120, duplicate: true });

    for (const [stored, parity] of [
      [await storedCalls(), 0],
      [await filtered(), 1],
    ] as const) {
      expect(stored.length).toBeGreaterThan(1);
      expect(stored.flatMap((message) => message.batch.calls.map((call) => call.messageId))).toEqual(
        calls.filter((_, i) => i % 2 === parity).map((call) => call.messageId),
      );
      expect(stored.map((message) => message.msgId)).toEqual(stored.map(() => expect.stringMatching(/^blocking:big-mixed#calls=\d+-\d+$/)));
    }
  });

  it("a request whose calls are all blocked is a success and puts nothing on the calls stream", async () => {
    const http = await post("/v1/track", { userId: "u1", event: "Noisy Event", messageId: "h-1" });
    expect(http).toEqual({ status: 200, body: { success: true } });
    const single = await fixture.grpc.ingestCall(
      { call: grpcCall("c-1", { $case: "page", value: { name: "Home", category: "", properties: undefined } }) },
      BLOCKING_KEY,
    );
    expect(single).toEqual({ messageId: "c-1", duplicate: false });
    const batch = await fixture.grpc.ingestBatch({ calls: [MIXED_GRPC[1]!, MIXED_GRPC[2]!] }, BLOCKING_KEY);
    expect(batch).toMatchObject({ accepted: 2, messageIds: ["g-1", "g-2"], rejections: [] });

    expect(await storedCalls()).toEqual([]);
    expect((await filtered()).map((s) => s.batch.calls.map(described))).toEqual([
      ["track:Noisy Event:h-1"],
      ["page:Home:c-1"],
      ["track:Noisy Event:g-1", "page:Pricing:g-2"],
    ]);
  });

  it("blocks only the source that set them, and track event names exactly", async () => {
    // "web" blocks nothing; "noisy event" differs from the blocked name in case.
    await post("/v1/page", { userId: "u1", name: "Pricing", messageId: "w-1" }, WRITE_KEY);
    await post("/v1/track", { userId: "u1", event: "noisy event", messageId: "b-1" });
    await post("/v1/track", { userId: "u1", event: "Noisy Event ", messageId: "b-2" });
    expect((await storedCalls()).map((s) => [s.batch.sourceId, s.batch.calls.map(described)])).toEqual([
      ["web", ["page:Pricing:w-1"]],
      ["blocking", ["track:noisy event:b-1"]],
      ["blocking", ["track:Noisy Event :b-2"]],
    ]);
    expect(await filtered()).toEqual([]);
  });

  it("applies block and unblock changes live, to calls accepted after them", async () => {
    const kv = await openConfigBucket(jetstream(fixture.nc), fixture.names, 1);
    const setBlocks = async (blocked: SourceRecord["blocked"]) => {
      const entry = await kv.get(kvKeys.source("web"));
      const { blocked: _previous, ...record } = sourceRecordSchema.parse(entry!.json());
      await kv.put(kvKeys.source("web"), JSON.stringify(blocked ? { ...record, blocked } : record));
    };
    let sent = 0;
    /** Sends "Signed Up" tracks until one lands on `stream`; the messageIds sent. */
    const sendUntilStoredOn = async (stream: () => Promise<{ batch: { calls: Call[] } }[]>) => {
      const ids: string[] = [];
      await waitFor("a call to land where expected", async () => {
        const id = `live-${sent++}`;
        ids.push(id);
        expect((await post("/v1/track", { userId: "u1", event: "Signed Up", messageId: id }, WRITE_KEY)).status).toBe(200);
        return (await stream()).some((s) => s.batch.calls.some((call) => call.messageId === id));
      });
      return ids;
    };

    await setBlocks({ types: [], trackEvents: ["Signed Up"] });
    const whileBlocking = await sendUntilStoredOn(filtered);
    await setBlocks(undefined);
    const afterUnblock = await sendUntilStoredOn(storedCalls);

    // Each call went to exactly one stream, and once blocking took effect, until the unblock did.
    const onCalls = (await storedCalls()).flatMap((s) => s.batch.calls.map((call) => call.messageId));
    const onFiltered = (await filtered()).flatMap((s) => s.batch.calls.map((call) => call.messageId));
    const all = [...whileBlocking, ...afterUnblock];
    expect([...onCalls, ...onFiltered].sort()).toEqual([...all].sort());
    expect(onFiltered).toContain(whileBlocking.at(-1));
    expect(onCalls).toContain(afterUnblock.at(-1));
    expect(onFiltered).not.toContain(afterUnblock.at(-1));
  });

  it("counts blocked calls in a metric of their own", async () => {
    await post("/v1/batch", { batch: MIXED_JSON });
    await fixture.grpc.ingestBatch({ calls: MIXED_GRPC }, BLOCKING_KEY);
    const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${fixture.ingest.opsPort}/metrics`);
    expect(metrics.value("switchyard_ingest_calls_blocked_total", { transport: "http" })).toBe(2);
    expect(metrics.value("switchyard_ingest_calls_blocked_total", { transport: "grpc" })).toBe(2);
    expect(metrics.value("switchyard_ingest_calls_accepted_total")).toBe(4);
  });
});

describe("reports of refused calls", () => {
  it("publishes the count of invalid calls a request refused on the usage stream, once per batch id", async () => {
    // Three refused of five, with an accepted and a blocked call beside them.
    const batch = [...MIXED_JSON, { type: "identify", messageId: "m-5" }, { type: "nonsense", userId: "u1", messageId: "m-6" }];
    expect((await post("/v1/batch", { batch })).status).toBe(200);
    // Nothing accepted: 400, still reported.
    expect((await post("/v1/track", { userId: "u1", messageId: "m-7" })).status).toBe(400);
    // gRPC: a batch with a client batch id, sent twice (reported once), and a single refused call.
    const grpcBatch = { batchId: "grpc-refusals", calls: [MIXED_GRPC[0]!, MIXED_GRPC[4]!, MIXED_GRPC[4]!] };
    await fixture.grpc.ingestBatch(grpcBatch, BLOCKING_KEY);
    expect((await fixture.grpc.ingestBatch(grpcBatch, BLOCKING_KEY)).duplicate).toBe(true);
    const single = await fixture.grpc.ingestCall({ call: MIXED_GRPC[4]! }, WRITE_KEY).catch((error: unknown) => error);
    expect(isGrpcError(single) && status[single.code]).toBe("INVALID_ARGUMENT");
    // Nothing refused: no report.
    await post("/v1/track", { userId: "u1", event: "Fine", messageId: "m-8" });

    const reports = await waitFor("four reports", async () => {
      const stored = await rejectedReports();
      return stored.length >= 4 && stored;
    });
    expect(reports.map((r) => [r.subject, r.report.sourceId, r.report.count])).toEqual([
      [fixture.names.rejectedUsageSubject("blocking"), "blocking", 3],
      [fixture.names.rejectedUsageSubject("blocking"), "blocking", 1],
      [fixture.names.rejectedUsageSubject("blocking"), "blocking", 2],
      [fixture.names.rejectedUsageSubject("web"), "web", 1],
    ]);
    expect(reports.every((r) => r.type === "switchyard.v1.RejectedCalls")).toBe(true);
    expect(reports[2]?.msgId).toBe("rejected:blocking:grpc-refusals");
    for (const { report } of reports) expect(Math.abs(report.receivedAt!.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it("a report that cannot be stored never fails the request: it is counted", async () => {
    const jsm = await jetstreamManager(fixture.nc);
    await jsm.streams.delete(fixture.names.usageStream);
    const response = await post("/v1/batch", { batch: MIXED_JSON });
    expect(response).toMatchObject({ status: 200, body: { success: true, accepted: 4 } });
    expect((await storedCalls()).length).toBe(1);
    await waitFor("the failed report to be counted", async () => {
      const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${fixture.ingest.opsPort}/metrics`);
      return metrics.value("switchyard_ingest_usage_reports_failed_total") === 1;
    });
  });
});
