import { gzipSync } from "node:zlib";
import { status } from "@grpc/grpc-js";
import { checkCall, MAX_BATCH_BYTES, MAX_CALL_BYTES, protoCallToJson } from "@switchyard/calls";
import { Call, configApi, IngestBatchResponse } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { NatsServer, readCallBatches } from "@switchyard/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anyText, callBytes, callNearSize, deeplyNestedCall, lengthDelimited, anyStruct } from "@switchyard/testkit";
import { ADMIN_TOKEN, Pipeline, workspaceFor, WRITE_KEY } from "./support/pipeline.js";
import { profile, scenarioSeed } from "./support/profile.js";
import { RawGrpcClient, type RawOutcome } from "./support/raw-grpc.js";
import { recordFuzz } from "./support/results.js";
import { Tally } from "./support/tally.js";

const FILE = "test/reliability/fuzz.test.ts";
/** JSON bytes of `,"messageId":"<uuid>","timestamp":"<ISO>"`, with room to spare. */
const ENRICHMENT_BYTES = 128;
const seed = scenarioSeed();
process.stdout.write(`fuzz: seed ${seed}, ${profile.fuzzRuns} runs per target\n`);

let nats: NatsServer;
let tally: Tally;
let pipeline: Pipeline;

beforeAll(async () => {
  nats = await NatsServer.start();
  tally = await Tally.start();
  pipeline = await Pipeline.start({ natsUrl: nats.url, workspace: workspaceFor({ hook: tally.url() }), services: ["ingest", "delivery"] });
}, 120_000);
afterAll(async () => {
  await pipeline?.dispose();
  await tally?.close();
  await nats?.dispose();
});

/** Codes that tell a client its request was wrong; anything else for bad input is a server fault. */
const CLIENT_MISTAKE = new Set([
  status.INVALID_ARGUMENT,
  status.RESOURCE_EXHAUSTED,
  status.NOT_FOUND,
  status.ALREADY_EXISTS,
  status.FAILED_PRECONDITION,
]);

/** Outcomes of one target, by kind, and a few error texts to show in the summary. */
class Outcomes {
  readonly counts: Record<string, number> = {};
  readonly samples = new Set<string>();

  add(kind: string, message?: string): void {
    this.counts[kind] = (this.counts[kind] ?? 0) + 1;
    if (message !== undefined && this.samples.size < 6) this.samples.add(message.slice(0, 160));
  }
}

/** A refusal must say what is wrong: a field or rule, never an empty text or a stack trace. */
function expectClearError(message: string): void {
  expect(message.trim().length, "error text").toBeGreaterThan(5);
  expect(message).not.toMatch(/\n\s+at |internal error|Unexpected|undefined|\[object Object\]/);
}

function expectGrpcOutcome(outcome: RawOutcome, outcomes: Outcomes): void {
  if (outcome.ok) {
    outcomes.add("OK");
    return;
  }
  const code = outcome.error.code;
  expect(CLIENT_MISTAKE.has(code), `gRPC ${status[code]}: ${outcome.error.details}`).toBe(true);
  expectClearError(outcome.error.details);
  outcomes.add(status[code], outcome.error.details);
}

/** The service answers a valid request afterwards: it did not crash or wedge. */
async function expectIngestHealthy(): Promise<void> {
  expect(pipeline.processes.get("ingest")?.pid).toBeDefined();
  const client = new RawGrpcClient(pipeline.ingestTarget, basicAuthorization(WRITE_KEY));
  const call = Call.encode(
    Call.fromPartial({ userId: "after-fuzz", payload: { $case: "track", value: { event: "Still Alive" } } }),
  ).finish();
  const outcome = await client.send("/switchyard.v1.IngestService/IngestBatch", lengthDelimited(2, call));
  client.close();
  expect(outcome.ok).toBe(true);
  if (outcome.ok) expect(IngestBatchResponse.decode(outcome.response).accepted).toBe(1);
}

/** Every call on the bus is valid and enriched: nothing a fuzzer sent got past validation. */
async function expectBusValid(): Promise<number> {
  const batches = await readCallBatches(pipeline.nc, pipeline.names);
  let calls = 0;
  for (const { batch } of batches) {
    for (const call of batch.calls) {
      calls++;
      expect(call.messageId).not.toBe("");
      expect(call.timestamp).toBeDefined();
      expect(call.receivedAt).toBeDefined();
      const json = protoCallToJson(call);
      const check = checkCall(json, 0);
      if (!check.ok && check.rejection.rule === "max_size") {
        // The 32 KB limit is on the client's call; ingest adds its messageId and timestamp after the check.
        expect(Buffer.byteLength(JSON.stringify(json))).toBeLessThanOrEqual(MAX_CALL_BYTES + ENRICHMENT_BYTES);
      } else {
        expect(check.ok, JSON.stringify(check)).toBe(true);
      }
    }
  }
  return calls;
}

/** After an ingest target: the service still works, the bus holds only valid calls, and the figures are recorded. */
async function concludeIngestTarget(target: string, outcomes: Outcomes): Promise<void> {
  await expectIngestHealthy();
  const stored = await expectBusValid();
  await recordFuzz(
    {
      target,
      file: FILE,
      seed,
      cases: profile.fuzzRuns,
      details: { outcomes: outcomes.counts, storedCallsChecked: stored, samples: [...outcomes.samples] },
    },
    pipeline.nc,
  );
}

const batchRequest = (batchId: string | undefined, calls: Uint8Array[]): Buffer =>
  Buffer.concat([
    ...(batchId === undefined ? [] : [lengthDelimited(1, Buffer.from(batchId))]),
    ...calls.map((call) => lengthDelimited(2, call)),
  ]);

/** IngestBatch / IngestCall request bytes: well-formed, malformed, random, truncated and oversized. */
const grpcIngestRequest = fc.oneof(
  fc.record({
    method: fc.constant("IngestBatch"),
    bytes: fc
      .tuple(fc.option(anyText(40), { nil: undefined }), fc.array(callBytes, { maxLength: 6 }))
      .map(([id, calls]) => batchRequest(id, calls)),
  }),
  fc.record({ method: fc.constant("IngestCall"), bytes: callBytes.map((call) => lengthDelimited(1, call)) }),
  fc.record({
    method: fc.constantFrom("IngestBatch", "IngestCall"),
    bytes: fc.uint8Array({ maxLength: 4096 }).map((bytes) => Buffer.from(bytes)),
  }),
  fc.record({
    method: fc.constant("IngestBatch"),
    bytes: fc.tuple(fc.array(callBytes, { minLength: 1, maxLength: 4 }), fc.nat()).map(([calls, cut]) => {
      const whole = batchRequest("truncated", calls);
      return whole.subarray(0, cut % whole.length);
    }),
  }),
  fc.record({
    method: fc.constant("IngestBatch"),
    bytes: fc.array(callNearSize(), { minLength: 1, maxLength: 3 }).map((calls) => batchRequest(undefined, calls)),
  }),
  // Over the 500 KB batch limit.
  fc.record({
    method: fc.constant("IngestBatch"),
    bytes: fc
      .integer({ min: 17, max: 24 })
      .chain((n) => fc.array(callNearSize(), { minLength: n, maxLength: n }))
      .map((calls) => batchRequest("too-big", calls)),
  }),
  fc.record({ method: fc.constant("IngestBatch"), bytes: deeplyNestedCall.map((call) => batchRequest(undefined, [call])) }),
);

describe("bad input: property-based fuzzing", () => {
  it(
    "gRPC ingest: random, malformed and oversized requests get OK or a clear client error, and the bus holds only valid calls",
    async () => {
      const client = new RawGrpcClient(pipeline.ingestTarget, basicAuthorization(WRITE_KEY));
      const outcomes = new Outcomes();
      try {
        await fc.assert(
          fc.asyncProperty(grpcIngestRequest, async ({ method, bytes }) => {
            const outcome = await client.send(`/switchyard.v1.IngestService/${method}`, bytes);
            expectGrpcOutcome(outcome, outcomes);
            if (outcome.ok && method === "IngestBatch") {
              for (const rejection of IngestBatchResponse.decode(outcome.response).rejections) {
                expect(rejection.rule).not.toBe("");
                expect(rejection.message).toContain(rejection.field === "" ? "" : rejection.field);
                expectClearError(rejection.message);
                outcomes.add(`rejected:${rejection.rule}`, rejection.message);
              }
            }
          }),
          { numRuns: profile.fuzzRuns, seed },
        );
      } finally {
        client.close();
      }
      await concludeIngestTarget("grpc-ingest", outcomes);
    },
    profile.timeoutMs,
  );

  it(
    "HTTP ingest: random bodies, content types, encodings, huge and deeply nested bodies never get a 5xx, and every refusal says why",
    async () => {
      const jsonText = fc.oneof(
        fc.json({ depthSize: "small" }),
        // Well-formed calls of every type, some of which pass validation (and must then be stored valid).
        fc
          .record({
            type: fc.constantFrom("track", "identify", "page", "screen", "group", "alias"),
            userId: fc.string({ minLength: 1, maxLength: 20 }),
            event: fc.string({ minLength: 1, maxLength: 20 }),
            groupId: fc.string({ minLength: 1, maxLength: 10 }),
            previousId: fc.string({ minLength: 1, maxLength: 10 }),
            properties: anyStruct,
            context: anyStruct,
          })
          .map((call) => JSON.stringify({ batch: [call, call] })),
        fc
          .record({
            type: fc.constantFrom("track", "identify", "page", "screen", "group", "alias", "delete", "bogus"),
            userId: fc.option(anyText(20)),
            event: fc.option(anyText(20)),
            properties: fc.option(anyStruct),
            messageId: fc.option(anyText(130)),
            timestamp: fc.option(
              fc.oneof(
                anyText(30),
                fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
              ),
            ),
          })
          .map((call) => JSON.stringify(call)),
        fc
          .array(
            fc.record({
              type: fc.constantFrom("track", "identify"),
              userId: anyText(10),
              event: anyText(10),
              traits: fc.option(anyStruct),
            }),
            { maxLength: 5 },
          )
          .map((batch) => JSON.stringify({ batch, context: { library: { name: "fuzz" } } })),
      );
      const body = fc.oneof(
        jsonText.map((text) => Buffer.from(text)),
        // Broken JSON: cut short, or with garbage spliced in.
        fc.tuple(jsonText, fc.nat(), anyText(4)).map(([text, at, junk]) => Buffer.from(text.slice(0, at % (text.length + 1)) + junk)),
        fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)),
        // Deep nesting, far beyond what the decoders accept.
        fc
          .integer({ min: 50, max: 100_000 })
          .map((depth) =>
            Buffer.from(
              `{"batch":[{"type":"track","userId":"u","event":"E","properties":{"v":${"[".repeat(depth)}${"]".repeat(depth)}}}]}`,
            ),
          ),
        // Huge: over the batch limit.
        fc
          .integer({ min: MAX_BATCH_BYTES + 1, max: 3 * MAX_BATCH_BYTES })
          .map((size) => Buffer.from(`{"batch":[{"type":"track","userId":"u","event":"${"x".repeat(size)}"}]}`)),
      );
      const request = fc.record({
        // Mostly real endpoints, so most cases reach validation rather than a 404.
        path: fc.oneof(
          { arbitrary: fc.constant("/v1/batch"), weight: 6 },
          { arbitrary: fc.constantFrom("/v1/track", "/v1/identify", "/v1/page", "/v1/screen", "/v1/group", "/v1/alias"), weight: 6 },
          { arbitrary: fc.constantFrom("/v1/import", "/v1/nope", "/", "/v1/track/", "/v1/track?x=1"), weight: 1 },
        ),
        contentType: fc.option(
          fc.oneof(
            fc.constantFrom(
              "application/json",
              "application/json; charset=utf-8",
              "text/plain",
              "application/x-www-form-urlencoded",
              "multipart/form-data; boundary=x",
            ),
            anyText(20).filter((t) => /^[\x20-\x7e]*$/.test(t)),
          ),
          { nil: undefined },
        ),
        encoding: fc.oneof(
          { arbitrary: fc.constant<"none">("none"), weight: 6 },
          { arbitrary: fc.constantFrom<"gzip" | "fake-gzip" | "br">("gzip", "fake-gzip", "br"), weight: 2 },
        ),
        method: fc.oneof({ arbitrary: fc.constant("POST"), weight: 10 }, { arbitrary: fc.constantFrom("PUT", "GET"), weight: 1 }),
        body,
      });
      const outcomes = new Outcomes();
      await fc.assert(
        fc.asyncProperty(request, async ({ path, contentType, encoding, method, body }) => {
          const headers: Record<string, string> = { authorization: basicAuthorization(WRITE_KEY) };
          if (contentType !== undefined) headers["content-type"] = contentType;
          let payload: Buffer = body;
          if (encoding === "gzip") payload = gzipSync(body);
          if (encoding !== "none") headers["content-encoding"] = encoding === "fake-gzip" ? "gzip" : encoding;
          const response = await fetch(`${pipeline.httpUrl}${path}`, { method, headers, ...(method === "GET" ? {} : { body: payload }) });
          const text = await response.text();
          expect(response.status, `${method} ${path}: ${text.slice(0, 200)}`).toBeLessThan(500);
          if (response.status === 200) {
            expect(JSON.parse(text)).toMatchObject({ success: true });
          } else {
            const error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
            expect(error?.code, text.slice(0, 200)).toBeTruthy();
            expectClearError(error?.message ?? "");
            outcomes.add(`${response.status}:${error?.code}`, error?.message);
            return;
          }
          outcomes.add("200");
        }),
        { numRuns: profile.fuzzRuns, seed },
      );
      await concludeIngestTarget("http-ingest", outcomes);
    },
    profile.timeoutMs,
  );

  it(
    "configuration API: random and malformed settings are refused with the field named, and nothing invalid is stored",
    async () => {
      const client = new RawGrpcClient(pipeline.deliveryTarget, `Bearer ${ADMIN_TOKEN}`);
      const url = fc.oneof(
        fc.constantFrom(
          "http://127.0.0.1:9/hook",
          "https://127.0.0.1:9/x?y=1",
          "ftp://127.0.0.1/x",
          "/relative",
          "http://",
          "javascript:alert(1)",
          "http://[::1",
          "",
        ),
        anyText(30),
        fc.webUrl().map((u) => u.slice(0, 3000)),
        fc.constant(`http://127.0.0.1:9/${"a".repeat(10_000)}`),
      );
      const headerName = fc.oneof(fc.constantFrom("X-Token", "Content-Type", "bad header", "X:Y", "", "é"), anyText(12));
      const destination = fc.record({
        id: fc.oneof(fc.constantFrom("fuzz-dest", "hook", ""), anyText(70)),
        name: anyText(30),
        enabled: fc.boolean(),
        webhooks: fc.array(
          fc.record({ url, headers: fc.dictionary(headerName, fc.oneof(anyText(20), fc.constant("ok\r\nInjected: 1")), { maxKeys: 3 }) }),
          { maxLength: 7 },
        ),
        sharedSecret: fc.oneof(fc.constant(""), anyText(40)),
      });
      const call = fc.oneof(
        destination.map((d) => ({
          path: "PutDestination",
          bytes: configApi.PutDestinationRequest.encode({ destination: configApi.Destination.fromPartial(d) }).finish(),
        })),
        fc
          .record({ id: anyText(70), name: anyText(20) })
          .map((s) => ({ path: "CreateSource", bytes: configApi.CreateSourceRequest.encode(s).finish() })),
        fc
          .record({ sourceId: anyText(20), destinationId: anyText(20) })
          .map((c) => ({ path: "Connect", bytes: configApi.ConnectRequest.encode({ ...c, filter: undefined }).finish() })),
        fc
          .tuple(
            fc.constantFrom("PutDestination", "CreateSource", "Connect", "GetDestination", "DeleteSource", "Disconnect"),
            fc.uint8Array({ maxLength: 2048 }),
          )
          .map(([path, bytes]) => ({ path, bytes })),
      );
      const outcomes = new Outcomes();
      try {
        await fc.assert(
          fc.asyncProperty(call, async ({ path, bytes }) => {
            const outcome = await client.send(`/switchyard.v1.ConfigService/${path}`, bytes);
            expectGrpcOutcome(outcome, outcomes);
            if (!outcome.ok && outcome.error.code === status.INVALID_ARGUMENT && path === "PutDestination") {
              // Decisions point 8: the message names the field.
              expect(outcome.error.details).toMatch(/id|name|webhooks|url|headers|sharedSecret|secret|destination|request/i);
            }
          }),
          { numRuns: profile.fuzzRuns, seed },
        );
      } finally {
        client.close();
      }
      // The service still answers, and whatever it stored is valid settings: 1 to 5 webhooks, each an absolute http(s) URL.
      const lister = new RawGrpcClient(pipeline.deliveryTarget, `Bearer ${ADMIN_TOKEN}`);
      const listed = await lister.send("/switchyard.v1.ConfigService/ListDestinations", new Uint8Array());
      lister.close();
      if (!listed.ok) throw listed.error;
      const destinations = configApi.ListDestinationsResponse.decode(listed.response).destinations;
      for (const stored of destinations) {
        expect(stored.webhooks.length).toBeGreaterThanOrEqual(1);
        expect(stored.webhooks.length).toBeLessThanOrEqual(5);
        for (const webhook of stored.webhooks) expect(new URL(webhook.url).protocol).toMatch(/^https?:$/);
      }
      await recordFuzz(
        {
          target: "config-api",
          file: FILE,
          seed,
          cases: profile.fuzzRuns,
          details: { outcomes: outcomes.counts, destinationsStored: destinations.length, samples: [...outcomes.samples] },
        },
        pipeline.nc,
      );
    },
    profile.timeoutMs,
  );
});
