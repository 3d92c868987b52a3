import { gzipSync } from "node:zlib";
import { Analytics } from "@segment/analytics-node";
import { MAX_BATCH_CALLS } from "@switchyard/calls";
import { readCallBatches } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

let fixture: IngestFixture;
beforeEach(async () => {
  fixture = await startIngestFixture();
});
afterEach(async () => {
  await fixture.dispose();
});

async function post(
  path: string,
  body: unknown,
  init: { writeKey?: string | null; raw?: string | Buffer; headers?: Record<string, string> } = {},
) {
  const writeKey = init.writeKey === undefined ? WRITE_KEY : init.writeKey;
  const headers: Record<string, string> = { "Content-Type": "application/json", ...init.headers };
  if (writeKey !== null) headers.Authorization = `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
  const response = await fetch(`${fixture.httpUrl}${path}`, { method: "POST", headers, body: init.raw ?? JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function storedCalls() {
  return (await readCallBatches(fixture.nc, fixture.names)).flatMap((stored) => stored.batch.calls);
}

describe("Segment-compatible HTTP API", () => {
  it("takes all six call types from an unmodified @segment/analytics-node", async () => {
    const analytics = new Analytics({ writeKey: WRITE_KEY, host: fixture.httpUrl, flushAt: 6, maxRetries: 0 });
    const errors: unknown[] = [];
    analytics.on("error", (error) => errors.push(error));
    analytics.identify({ userId: "u1", traits: { email: "u1@example.com", plan: "pro" } });
    analytics.track({ userId: "u1", event: "Order Completed", properties: { revenue: 42 } });
    analytics.page({
      userId: "u1",
      name: "Pricing",
      category: "Docs",
      properties: { url: "https://example.com/pricing", path: "/pricing" },
    });
    analytics.screen({
      anonymousId: "a1",
      name: "Home",
      context: { device: { model: "Pixel 8", type: "android" }, os: { name: "Android", version: "15" } },
    });
    analytics.group({ userId: "u1", groupId: "acme", traits: { employees: 120 } });
    analytics.alias({ userId: "u1", previousId: "a1" });
    await analytics.closeAndFlush({ timeout: 10_000 });
    expect(errors).toEqual([]);

    const calls = await storedCalls();
    expect(calls.map((c) => c.payload?.$case)).toEqual(["identify", "track", "page", "screen", "group", "alias"]);
    for (const call of calls) {
      expect(call.messageId).not.toBe("");
      expect(call.receivedAt).toBeInstanceOf(Date);
      expect(call.timestamp).toBeInstanceOf(Date);
      expect(call.context?.library?.name).toBe("@segment/analytics-node");
    }
    expect(calls[0]?.payload).toEqual({ $case: "identify", value: { traits: { email: "u1@example.com", plan: "pro" } } });
    expect(calls[1]?.payload).toEqual({ $case: "track", value: { event: "Order Completed", properties: { revenue: 42 } } });
    expect(calls[2]?.payload).toMatchObject({
      $case: "page",
      value: { name: "Pricing", category: "Docs", properties: { path: "/pricing" } },
    });
    expect(calls[3]?.anonymousId).toBe("a1");
    expect(calls[3]?.context?.device).toEqual({ model: "Pixel 8", type: "android" });
    expect(calls[4]?.payload).toEqual({ $case: "group", value: { groupId: "acme", traits: { employees: 120 } } });
    expect(calls[5]).toMatchObject({ userId: "u1", payload: { $case: "alias", value: { previousId: "a1" } } });
  });

  it("serves each single-call endpoint", async () => {
    const bodies: Record<string, object> = {
      identify: { userId: "u1", traits: { a: 1 } },
      track: { userId: "u1", event: "Clicked" },
      page: { anonymousId: "a1", properties: { title: "Home" } },
      screen: { userId: "u1", name: "Settings" },
      group: { userId: "u1", groupId: "g1" },
      alias: { userId: "u1", previousId: "a1" },
    };
    for (const [type, body] of Object.entries(bodies)) {
      expect(await post(`/v1/${type}`, body)).toEqual({ status: 200, body: { success: true } });
    }
    expect((await storedCalls()).map((c) => c.payload?.$case)).toEqual(Object.keys(bodies));
  });

  it("keeps a historical timestamp, and accepts a gzip body", async () => {
    const body = JSON.stringify({ batch: [{ type: "track", userId: "u1", event: "Old", timestamp: "2023-05-06T07:08:09.123Z" }] });
    const response = await post("/v1/batch", undefined, { raw: gzipSync(body), headers: { "Content-Encoding": "gzip" } });
    expect(response).toEqual({ status: 200, body: { success: true } });
    const [call] = await storedCalls();
    expect(call?.timestamp?.toISOString()).toBe("2023-05-06T07:08:09.123Z");
    expect(call?.receivedAt?.getTime()).toBeGreaterThan(call?.timestamp?.getTime() ?? Infinity);
  });

  it("stores SDK-shaped calls as sent: offsets and microseconds in timestamps, null and empty ids, a messageId of its own", async () => {
    const batch = [
      // analytics-python: isoformat() with microseconds and an offset.
      { type: "track", userId: "u1", event: "Paid", timestamp: "2026-11-21T10:00:00.123456+02:00", messageId: "py-1" },
      // analytics.js before identify: userId null; analytics-kotlin: "".
      { type: "page", userId: null, anonymousId: "a1", name: "", properties: { path: "/", "": 1 }, timestamp: "2026-11-21T08:00:00Z" },
      { type: "identify", userId: "", anonymousId: "a2", traits: { plan: "pro" } },
    ];
    const response = await post("/v1/batch", { batch, context: { library: { name: "analytics-python", version: "2.3.2" } } });
    expect(response).toEqual({ status: 200, body: { success: true } });
    const [track, page, identify] = await storedCalls();
    expect(track?.messageId).toBe("py-1");
    expect(track?.timestamp?.toISOString()).toBe("2026-11-21T08:00:00.123Z");
    expect(track?.context).toEqual({ library: { name: "analytics-python", version: "2.3.2" } });
    expect(page?.userId).toBe("");
    expect(page?.anonymousId).toBe("a1");
    expect(page?.payload).toEqual({ $case: "page", value: { name: "", category: "", properties: { path: "/", "": 1 } } });
    expect(identify?.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(identify?.timestamp?.getTime()).toBe(identify?.receivedAt?.getTime());
  });

  it("refuses a batch call nested thousands of levels deep with 400 max_depth, not a 500", async () => {
    const deep = `${"[".repeat(20_000)}${"]".repeat(20_000)}`;
    const response = await post("/v1/batch", undefined, {
      raw: `{"batch":[{"type":"track","userId":"u","event":"E","properties":{"v":${deep}}},{"type":"track","userId":"u","event":"Fine"}]}`,
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ accepted: 1, rejected: [{ index: 0, rule: "max_depth" }] });
  });

  it("refuses a body that is not the gzip it claims to be, and still answers the next requests", async () => {
    // Large enough that the client is still sending when gunzip gives up: the rest must be drained, not left hanging.
    // Sent to /v1/batch, whose size limit it is far under, so gunzip's refusal is the only one it can get.
    for (let round = 0; round < 3; round++) {
      const response = await post("/v1/batch", undefined, { raw: Buffer.alloc(200_000, "x"), headers: { "Content-Encoding": "gzip" } });
      expect(response).toMatchObject({ status: 400, body: { error: { code: "bad_encoding" } } });
      expect(await post("/v1/track", { userId: "u1", event: "After" })).toEqual({ status: 200, body: { success: true } });
    }
    expect(await storedCalls()).toHaveLength(3);
  });

  it("applies batch-level context and integrations to each call, the call's own keys winning", async () => {
    await post("/v1/batch", {
      context: { ip: "198.51.100.1", locale: "en" },
      integrations: { All: false },
      batch: [{ type: "track", userId: "u1", event: "E", context: { locale: "fr" }, integrations: { Webhooks: true } }],
    });
    const [call] = await storedCalls();
    expect(call?.context).toEqual({ ip: "198.51.100.1", locale: "fr" });
    expect(call?.integrations).toEqual({ All: false, Webhooks: true });
  });

  it('stores "__proto__", "constructor" and "prototype" keys as ordinary data', async () => {
    const raw =
      '{"userId":"u","event":"E","properties":{"__proto__":{"a":1},"constructor":"c","prototype":[2]},' +
      '"context":{"__proto__":"ctx"},"integrations":{"__proto__":true}}';
    expect((await post("/v1/track", undefined, { raw })).status).toBe(200);
    const [call] = await storedCalls();
    const properties = call?.payload?.$case === "track" ? call.payload.value.properties : undefined;
    expect(JSON.stringify(properties)).toBe('{"__proto__":{"a":1},"constructor":"c","prototype":[2]}');
    expect(JSON.stringify(call?.context)).toBe('{"__proto__":"ctx"}');
    expect(JSON.stringify(call?.integrations)).toBe('{"__proto__":true}');
  });

  describe("bad input gets a clear error and puts nothing invalid on the bus", () => {
    const cases: [string, string, unknown, RegExp][] = [
      ["no userId and no anonymousId", "/v1/identify", { traits: {} }, /userId or anonymousId is required/],
      ["track without event", "/v1/track", { userId: "u1" }, /event: is required/],
      ["group without groupId", "/v1/group", { userId: "u1" }, /groupId: is required/],
      ["alias without previousId", "/v1/alias", { userId: "u1" }, /previousId: is required/],
      ["a wrongly typed field", "/v1/track", { userId: 7, event: "E" }, /userId: must be a string/],
      ["properties that are not an object", "/v1/track", { userId: "u", event: "E", properties: "x" }, /properties: must be a JSON object/],
      [
        "a bad timestamp",
        "/v1/track",
        { userId: "u", event: "E", timestamp: "last tuesday" },
        /timestamp: must be a valid ISO 8601 date-time/,
      ],
      [
        "an impossible date",
        "/v1/track",
        { userId: "u", event: "E", timestamp: "2026-02-30" },
        /call 0: timestamp: must be a valid ISO 8601 date-time/,
      ],
      [
        "a messageId with a line break",
        "/v1/track",
        { userId: "u", event: "E", messageId: "m\r\nX: y" },
        /call 0: messageId: must not contain control characters/,
      ],
      [
        "a lone surrogate",
        "/v1/track",
        { userId: "u", event: "E", properties: { name: "\ud800" } },
        /call 0: properties\.name: must be valid Unicode \(lone surrogate\)/,
      ],
      ["an unknown type in a batch", "/v1/batch", { batch: [{ type: "purchase", userId: "u" }] }, /type: must be one of identify, track/],
      ["a batch that is not an array", "/v1/batch", { batch: {} }, /batch: must be a non-empty array/],
      ["an empty batch", "/v1/batch", { batch: [] }, /batch: must be a non-empty array/],
      ["a body that is not an object", "/v1/track", [1, 2], /body: must be a JSON object/],
      [
        "properties nested deeper than the bus can decode",
        "/v1/track",
        { userId: "u", event: "E", properties: JSON.parse(`${'{"a":'.repeat(60)}{}${"}".repeat(60)}`) },
        /properties: objects and lists are nested too deeply/,
      ],
    ];
    it.each(cases)("%s", async (_name, path, body, message) => {
      const response = await post(path, body);
      expect(response.status).toBe(400);
      expect(response.body.success).toBe(false);
      expect(response.body.error.message).toMatch(message);
      expect(await storedCalls()).toEqual([]);
    });

    it("a number JSON cannot hold as a finite double (1e309), alone or in a batch", async () => {
      const single = await post("/v1/track", undefined, { raw: '{"userId":"u","event":"E","properties":{"price":1e309}}' });
      expect(single.status).toBe(400);
      expect(single.body.error.message).toMatch(/call 0: properties\.price: must be a finite number/);
      const batch = await post("/v1/batch", undefined, {
        raw: '{"batch":[{"type":"track","userId":"u","event":"E","context":{"n":[1,-1e400]}},{"type":"track","userId":"u","event":"ok"}]}',
      });
      expect(batch.status).toBe(200);
      expect((await storedCalls()).map((call) => call.payload?.$case === "track" && call.payload.value.event)).toEqual(["ok"]);
    });

    it("malformed JSON", async () => {
      const response = await post("/v1/track", undefined, { raw: '{"userId": "u1", "event": ' });
      expect(response).toEqual({
        status: 400,
        body: { success: false, error: { code: "invalid_json", message: "request body is not valid JSON" } },
      });
      expect(await storedCalls()).toEqual([]);
    });

    it("a body that is not UTF-8, plain or gzip: refused whole, nothing turned into U+FFFD", async () => {
      const bytes = Buffer.concat([Buffer.from('{"userId":"u1","event":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
      const expected = {
        status: 400,
        body: { success: false, error: { code: "invalid_json", message: "request body is not UTF-8, as JSON text must be" } },
      };
      expect(await post("/v1/track", undefined, { raw: bytes })).toEqual(expected);
      expect(await post("/v1/track", undefined, { raw: gzipSync(bytes), headers: { "Content-Encoding": "gzip" } })).toEqual(expected);
      expect(await storedCalls()).toEqual([]);
    });

    it("a 33 KB call, alone or inside a batch", async () => {
      const big = { userId: "u1", event: "Big", properties: { blob: "z".repeat(33 * 1024) } };
      const single = await post("/v1/track", big);
      expect(single.status).toBe(413);
      expect(single.body.error.code).toBe("call_too_large");
      expect(single.body.error.message).toMatch(/32 KB/);

      const inBatch = await post("/v1/batch", { batch: [{ type: "track", ...big }] });
      expect(inBatch.status).toBe(400);
      expect(inBatch.body.error.rejected).toEqual([
        expect.objectContaining({ index: 0, rule: "max_size", message: expect.stringMatching(/32 KB/) }),
      ]);
      expect(await storedCalls()).toEqual([]);
    });

    it("a 501 KB batch", async () => {
      const batch = Array.from({ length: 17 }, (_, i) => ({
        type: "track",
        userId: `u${i}`,
        event: "E",
        properties: { blob: "q".repeat(30 * 1024) },
      }));
      const response = await post("/v1/batch", { batch });
      expect(JSON.stringify({ batch }).length).toBeGreaterThan(501 * 1024);
      expect(response.status).toBe(413);
      expect(response.body.error).toEqual({ code: "batch_too_large", message: expect.stringMatching(/500 KB/) });
      expect(await storedCalls()).toEqual([]);
    });

    it("a wrong or missing write key gets 401", async () => {
      for (const writeKey of ["wk_not_a_real_key_00", null]) {
        const response = await post("/v1/track", { userId: "u1", event: "E" }, { writeKey });
        expect(response.status).toBe(401);
        expect(response.body.error.code).toBe("unauthorized");
      }
      expect(await storedCalls()).toEqual([]);
    });

    it("the valid calls of a mixed batch land; the others are reported by index", async () => {
      const response = await post("/v1/batch", {
        batch: [
          { type: "track", userId: "u1", event: "Good" },
          { type: "track", userId: "u2" },
          { type: "identify", anonymousId: "a3" },
          { type: "alias", userId: "u4" },
        ],
      });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        success: true,
        accepted: 2,
        rejected: [
          { index: 1, field: "event", rule: "required" },
          { index: 3, field: "previousId", rule: "required" },
        ],
      });
      expect((await storedCalls()).map((c) => c.userId || c.anonymousId)).toEqual(["u1", "a3"]);
    });

    it("a batch of more calls than any batch can hold, refused at once", async () => {
      const response = await post("/v1/batch", { batch: Array.from({ length: MAX_BATCH_CALLS + 1 }, () => ({})) });
      expect(response.status).toBe(400);
      expect(response.body.error).toEqual({
        code: "invalid_request",
        message: expect.stringMatching(new RegExp(`^batch: a batch holds at most ${MAX_BATCH_CALLS} calls`)),
      });
      expect(await storedCalls()).toEqual([]);
    });

    it("a batch sent again with its refused call fixed stores the fixed call; sent once more, nothing new", async () => {
      const good = { type: "track", userId: "u1", event: "Good", messageId: "m-good" };
      const first = await post("/v1/batch", { batch: [good, { type: "track", userId: "u2", messageId: "m-fixed" }] });
      expect(first.body).toMatchObject({ success: true, accepted: 1, rejected: [{ index: 1, field: "event" }] });
      const fixedBatch = { batch: [good, { type: "track", userId: "u2", event: "Fixed", messageId: "m-fixed" }] };
      expect((await post("/v1/batch", fixedBatch)).body).toEqual({ success: true });
      expect((await post("/v1/batch", fixedBatch)).body).toEqual({ success: true });
      // The second batch is new (its accepted calls differ from the first's); the third repeats it and is stored once.
      expect((await storedCalls()).map((c) => c.messageId)).toEqual(["m-good", "m-good", "m-fixed"]);
    });
  });

  it("stores and refuses a batch read straight from its bytes exactly as the same batch parsed whole", async () => {
    // Ordinary calls (transcoded), calls with what the transcoder leaves to the rules (an escape, a
    // repeated key, an integer-like key, a number past a double), invalid ones, and the key in the body.
    const calls = [
      '{"type":"track","event":"Signed Up","userId":"u1","properties":{"plan":"pro","price":1.25e1,"tags":["a",null,true],"é":"ü"}}',
      '{"type":"identify","userId":null,"anonymousId":"a1","traits":{"name":"Ada","":1,"nested":{"ok":false,"n":-0}}}',
      '{"type":"track","event":"Sign\\u0065d Up","userId":"u1","timestamp":"2026-11-21T10:00:00+02:00"}',
      '{"type":"page","name":"Home","name":"Docs","anonymousId":"a1"}',
      '{"type":"track","event":"x","userId":"u1","properties":{"2":"b","1":"a"}}',
      '{"type":"track","event":"x","userId":"u1","properties":{"big":1e400}}',
      '{"type":"track","event":"","userId":"u1"}',
      '{"type":"group","groupId":"g1"}',
      "5",
      '{"type":"screen","name":"Settings","userId":"u1","context":{"app":{"name":"demo"}},"integrations":{"All":false,"Mixpanel":true}}',
    ];
    const body = `{"batch":[${calls.join(",\n")}],"sentAt":"2026-11-25T06:00:00.000Z","writeKey":"${WRITE_KEY}"}`;
    const transcoded = await post("/v1/batch", undefined, { writeKey: null, raw: body });
    const transcodedCalls = await storedCalls();
    // A byte order mark in front: the transcoder leaves the body to JSON.parse and the rules.
    const parsed = await post("/v1/batch", undefined, { writeKey: null, raw: `\ufeff${body}` });
    const allCalls = await storedCalls();
    expect(transcoded).toEqual(parsed);
    expect(transcoded.body).toMatchObject({ success: true, accepted: 6 });
    expect(transcoded.body.rejected.map((rejection: { index: number }) => rejection.index)).toEqual([5, 6, 7, 8]);
    // Ingest's own values aside: ids it gave, the accept time, and the timestamp of calls sent without one.
    const comparable = (call: { timestamp?: Date; receivedAt?: Date }) => ({
      ...call,
      messageId: undefined,
      receivedAt: undefined,
      timestamp: call.timestamp?.getTime() === call.receivedAt?.getTime() ? undefined : call.timestamp,
    });
    expect(allCalls.slice(transcodedCalls.length).map(comparable)).toEqual(transcodedCalls.map(comparable));
    expect(transcodedCalls.map((call) => call.payload?.$case)).toEqual(["track", "identify", "track", "page", "track", "screen"]);
  });

  it("answers 404 for unknown paths and 405 for other methods", async () => {
    expect((await post("/v2/track", {})).status).toBe(404);
    const response = await fetch(`${fixture.httpUrl}/v1/track`);
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST, OPTIONS");
  });
});
