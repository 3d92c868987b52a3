import { request as httpRequest } from "node:http";
import { readCallBatches } from "@switchyard/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { OTHER_WRITE_KEY, startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

/**
 * What browser (analytics.js) and mobile (analytics-kotlin, analytics-swift) SDKs send: short
 * paths, the write key in the body, text/plain bodies, CORS, and the settings analytics.js loads.
 */

const SHOP_KEY = "wk_test_shop_browser_0123456789";
const SHOP_ORIGIN = "https://shop.example";

let fixture: IngestFixture | undefined;
afterEach(async () => {
  await fixture?.dispose();
  fixture = undefined;
});

async function start(options: Parameters<typeof startIngestFixture>[0] = {}): Promise<IngestFixture> {
  fixture = await startIngestFixture({
    sources: [{ id: "shop", writeKeys: [SHOP_KEY], allowedOrigins: [SHOP_ORIGIN, "http://127.0.0.1:3000"] }],
    ...options,
  });
  return fixture;
}

function basic(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
}

async function call(f: IngestFixture, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${f.httpUrl}${path}`, {
    method: init.method ?? "POST",
    headers: { "Content-Type": "text/plain", ...init.headers },
    ...(init.body === undefined ? {} : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text ? (JSON.parse(text) as Record<string, any>) : undefined };
}

async function storedCalls(f: IngestFixture) {
  return (await readCallBatches(f.nc, f.names)).flatMap((stored) => stored.batch.calls);
}

/** A stored call without what ingest assigns, to compare calls sent to different paths. */
function asSent(storedCall: Record<string, unknown>) {
  const { messageId: _m, receivedAt: _r, ...rest } = storedCall;
  return rest;
}

const BODIES: Record<string, Record<string, unknown>> = {
  track: { userId: "u1", event: "Clicked", properties: { n: 1 }, timestamp: "2026-01-02T03:04:05.000Z" },
  page: { anonymousId: "a1", name: "Home", properties: { path: "/" }, timestamp: "2026-01-02T03:04:05.000Z" },
  identify: { userId: "u1", traits: { plan: "pro" }, timestamp: "2026-01-02T03:04:05.000Z" },
  group: { userId: "u1", groupId: "g1", traits: { size: 3 }, timestamp: "2026-01-02T03:04:05.000Z" },
  alias: { userId: "u1", previousId: "a1", timestamp: "2026-01-02T03:04:05.000Z" },
  screen: { userId: "u1", name: "Settings", timestamp: "2026-01-02T03:04:05.000Z" },
};
const SHORT: Record<string, string> = { track: "t", page: "p", identify: "i", group: "g", alias: "a", screen: "s" };

describe("short paths", () => {
  it("/v1/t /v1/p /v1/i /v1/g /v1/a /v1/s and /v1/b store exactly what their long forms store", async () => {
    const f = await start();
    const auth = { Authorization: basic(WRITE_KEY), "Content-Type": "application/json" };
    for (const [type, body] of Object.entries(BODIES)) {
      expect((await call(f, `/v1/${type}`, { body: { ...body, messageId: `long-${type}` }, headers: auth })).status).toBe(200);
      expect((await call(f, `/v1/${SHORT[type]}`, { body: { ...body, messageId: `short-${type}` }, headers: auth })).status).toBe(200);
    }
    const batch = Object.entries(BODIES).map(([type, body]) => ({ ...body, type }));
    expect((await call(f, "/v1/batch", { body: { batch }, headers: auth })).status).toBe(200);
    expect((await call(f, "/v1/b", { body: { batch }, headers: auth })).status).toBe(200);

    const calls = (await storedCalls(f)).map((c) => asSent(c as unknown as Record<string, unknown>));
    expect(calls).toHaveLength(24);
    for (let i = 0; i < 12; i += 2) expect(calls[i + 1]).toEqual(calls[i]);
    expect(calls.slice(12, 18)).toEqual(calls.slice(18, 24));
    expect(calls.slice(0, 12).map((c) => (c.payload as { $case: string }).$case)).toEqual(
      Object.keys(BODIES).flatMap((type) => [type, type]),
    );
  });

  it("refuse bad input exactly as their long forms do", async () => {
    const f = await start();
    const auth = { Authorization: basic(WRITE_KEY) };
    for (const [long, short, body] of [
      ["/v1/track", "/v1/t", { userId: "u1" }],
      ["/v1/group", "/v1/g", { userId: "u1" }],
      ["/v1/batch", "/v1/b", { batch: [] }],
    ] as const) {
      const answers = [await call(f, long, { body, headers: auth }), await call(f, short, { body, headers: auth })];
      expect(answers[0]?.status).toBe(400);
      expect(answers[1]?.status).toBe(answers[0]?.status);
      expect(answers[1]?.body).toEqual(answers[0]?.body);
    }
    expect((await call(f, "/v1/x", { body: BODIES.track, headers: auth })).status).toBe(404);
  });
});

describe("write key in the body", () => {
  it("authenticates without an Authorization header, and is neither stored nor echoed", async () => {
    const f = await start();
    const response = await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: WRITE_KEY } });
    expect(response.status).toBe(200);
    const batch = await call(f, "/v1/b", {
      body: { writeKey: WRITE_KEY, batch: [{ ...BODIES.track, type: "track", writeKey: WRITE_KEY }] },
    });
    expect(batch.status).toBe(200);
    const calls = await storedCalls(f);
    expect(calls).toHaveLength(2);
    expect(JSON.stringify(await readCallBatches(f.nc, f.names))).not.toContain(WRITE_KEY);
  });

  it("the header wins: the same key in both is fine, a different one is refused with 401", async () => {
    const f = await start();
    const same = await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: WRITE_KEY }, headers: { Authorization: basic(WRITE_KEY) } });
    expect(same.status).toBe(200);
    const mismatch = await call(f, "/v1/t", {
      body: { ...BODIES.track, writeKey: OTHER_WRITE_KEY },
      headers: { Authorization: basic(WRITE_KEY) },
    });
    expect(mismatch.status).toBe(401);
    expect(mismatch.body?.error).toEqual({
      code: "unauthorized",
      message: "writeKey in the body differs from the write key in the Authorization header",
    });
    expect(mismatch.text).not.toContain(WRITE_KEY);
    expect(mismatch.text).not.toContain(OTHER_WRITE_KEY);
    expect(await storedCalls(f)).toHaveLength(1);
  });

  it("refuses an unknown, empty or non-string body key, and a malformed header beside a good body key", async () => {
    const f = await start();
    const cases: [Record<string, unknown>, Record<string, string>, RegExp][] = [
      [{ writeKey: "wk_not_a_real_key_000000" }, {}, /^unknown write key$/],
      [{ writeKey: "" }, {}, /writeKey: must be a non-empty string/],
      [{ writeKey: 42 }, {}, /writeKey: must be a non-empty string/],
      [{}, {}, /missing write key: .*"writeKey" field/],
      [{ writeKey: WRITE_KEY }, { Authorization: "Bearer nope" }, /malformed Authorization header|missing write key/],
    ];
    for (const [extra, headers, message] of cases) {
      const response = await call(f, "/v1/t", { body: { ...BODIES.track, ...extra }, headers });
      expect(response.status).toBe(401);
      expect(response.body?.error.message).toMatch(message);
      expect(response.text).not.toContain("wk_not_a_real_key_000000");
    }
    expect(await storedCalls(f)).toEqual([]);
  });
});

describe("anonymous calls as SDKs send them", () => {
  it('userId null (analytics.js) or "" (analytics-kotlin) beside an anonymousId is read as absent, as gRPC reads ""', async () => {
    const f = await start();
    for (const userId of [null, ""]) {
      const response = await call(f, "/v1/t", { body: { event: "Viewed", userId, anonymousId: "anon-1", writeKey: WRITE_KEY } });
      expect(response).toMatchObject({ status: 200, body: { success: true } });
    }
    const refused = await call(f, "/v1/t", { body: { event: "Viewed", userId: null, anonymousId: null, writeKey: WRITE_KEY } });
    expect(refused.body?.error.message).toMatch(/one of userId or anonymousId is required/);
    const calls = await storedCalls(f);
    expect(calls.map((c) => [c.userId, c.anonymousId])).toEqual([
      ["", "anon-1"],
      ["", "anon-1"],
    ]);
  });
});

describe("content types", () => {
  it("takes JSON sent as text/plain, with or without a charset, like application/json", async () => {
    const f = await start();
    for (const contentType of ["text/plain", "text/plain;charset=UTF-8", "application/json"]) {
      const response = await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: WRITE_KEY }, headers: { "Content-Type": contentType } });
      expect(response).toMatchObject({ status: 200, body: { success: true } });
    }
    expect(await storedCalls(f)).toHaveLength(3);
  });
});

describe("CORS", () => {
  it("answers a preflight for any origin with the methods, headers and max age", async () => {
    const f = await start();
    for (const path of ["/v1/t", "/v1/batch", "/v1/b"]) {
      const response = await call(f, path, {
        method: "OPTIONS",
        headers: {
          Origin: "https://anywhere.example",
          "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "content-type,authorization",
        },
      });
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe("https://anywhere.example");
      expect(response.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS");
      expect(response.headers.get("access-control-allow-headers")).toMatch(/Content-Type, Authorization/);
      expect(response.headers.get("access-control-max-age")).toBe("7200");
      expect(response.headers.get("access-control-allow-credentials")).toBe("true");
      expect(response.headers.get("vary")).toBe("Origin");
    }
    const settings = await call(f, `/v1/projects/${WRITE_KEY}/settings`, { method: "OPTIONS", headers: { Origin: SHOP_ORIGIN } });
    expect(settings.status).toBe(204);
    expect(settings.headers.get("access-control-allow-methods")).toBe("GET, HEAD, OPTIONS");
  });

  it("every answer to a browser carries Access-Control-Allow-Origin, errors included", async () => {
    const f = await start();
    const origin = { Origin: "https://anywhere.example" };
    const ok = await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: WRITE_KEY }, headers: origin });
    const bad = await call(f, "/v1/t", { body: { userId: "u1", writeKey: WRITE_KEY }, headers: origin });
    const unauthorized = await call(f, "/v1/t", { body: BODIES.track, headers: origin });
    for (const [response, status] of [
      [ok, 200],
      [bad, 400],
      [unauthorized, 401],
    ] as const) {
      expect(response.status).toBe(status);
      expect(response.headers.get("access-control-allow-origin")).toBe("https://anywhere.example");
      expect(response.headers.get("access-control-expose-headers")).toBe("Retry-After");
    }
    const serverSide = await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: WRITE_KEY } });
    expect(serverSide.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("a source's allowedOrigins: listed origins and clients without Origin send, other origins get 403", async () => {
    const f = await start();
    const body = { ...BODIES.track, writeKey: SHOP_KEY };
    expect((await call(f, "/v1/t", { body, headers: { Origin: SHOP_ORIGIN } })).status).toBe(200);
    expect((await call(f, "/v1/t", { body })).status).toBe(200);
    const refused = await call(f, "/v1/t", { body, headers: { Origin: "https://evil.example" } });
    expect(refused.status).toBe(403);
    expect(refused.body?.error).toEqual({
      code: "origin_not_allowed",
      message: 'Origin "https://evil.example" is not in this source\'s allowedOrigins',
    });
    expect(refused.headers.get("access-control-allow-origin")).toBe("https://evil.example");
    const batch = await call(f, "/v1/b", {
      body: { writeKey: SHOP_KEY, batch: [{ ...BODIES.track, type: "track" }] },
      headers: { Origin: "null" },
    });
    expect(batch.status).toBe(403);
    const settings = await call(f, `/v1/projects/${SHOP_KEY}/settings`, { method: "GET", headers: { Origin: "https://evil.example" } });
    expect(settings.status).toBe(403);
    // Sources without allowedOrigins take any origin.
    expect(
      (await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: WRITE_KEY }, headers: { Origin: "https://evil.example" } })).status,
    ).toBe(200);
    expect(await storedCalls(f)).toHaveLength(3);
  });
});

/** A GET with a Host header of our choosing (fetch does not let one set it). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { headers: { Host: host } }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
    });
    request.on("error", reject);
    request.end();
  });
}

describe("settings endpoint", () => {
  it("serves analytics.js settings pointing at this API, from the Host header by default", async () => {
    const f = await start();
    const response = await call(f, `/v1/projects/${WRITE_KEY}/settings`, { method: "GET", headers: { Origin: "http://127.0.0.1:3000" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe("http://127.0.0.1:3000");
    expect(response.headers.get("content-type")).toBe("application/json");
    const host = new URL(f.httpUrl).host;
    expect(response.body?.integrations).toEqual({
      "Segment.io": expect.objectContaining({ apiKey: WRITE_KEY, apiHost: `${host}/v1`, protocol: "http" }),
    });
    expect(response.body?.metrics).toEqual({ sampleRate: 0 });

    const spoofed = await getWithHost(`${f.httpUrl}/v1/projects/${WRITE_KEY}/settings`, "events.example:9000");
    expect(spoofed.body.integrations["Segment.io"]).toMatchObject({ apiHost: "events.example:9000/v1", protocol: "http" });
    const bad = await getWithHost(`${f.httpUrl}/v1/projects/${WRITE_KEY}/settings`, "evil.example/path");
    expect(bad).toMatchObject({ status: 400, body: { error: { code: "bad_host" } } });
  });

  it("uses INGEST_PUBLIC_URL when set", async () => {
    const f = await start({ env: { INGEST_PUBLIC_URL: "https://events.example.com/collect/" } });
    const response = await call(f, `/v1/projects/${encodeURIComponent(WRITE_KEY)}/settings`, { method: "GET" });
    expect(response.body?.integrations["Segment.io"]).toMatchObject({ apiHost: "events.example.com/collect/v1", protocol: "https" });
  });

  it("answers 404 for an unknown write key, revealing nothing, and only GET/HEAD/OPTIONS", async () => {
    const f = await start();
    const unknown = await call(f, "/v1/projects/wk_unknown_key_00000000/settings", { method: "GET" });
    expect(unknown).toMatchObject({
      status: 404,
      body: { success: false, error: { code: "not_found", message: "no settings for this write key" } },
    });
    expect(unknown.text).not.toContain("wk_unknown_key_00000000");
    const head = await call(f, `/v1/projects/${WRITE_KEY}/settings`, { method: "HEAD" });
    expect(head).toMatchObject({ status: 200, text: "" });
    const post = await call(f, `/v1/projects/${WRITE_KEY}/settings`, { body: {} });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
  });
});

describe("logs", () => {
  it("never hold a write key, whether it came in the body, the header or the settings path", async () => {
    const logLines: string[] = [];
    const f = await start({ logLines });
    await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: WRITE_KEY } });
    await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: OTHER_WRITE_KEY }, headers: { Authorization: basic(WRITE_KEY) } });
    await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: "wk_not_a_real_key_000000" } });
    await call(f, `/v1/projects/${WRITE_KEY}/settings`, { method: "GET" });
    await call(f, "/v1/projects/wk_not_a_real_key_000000/settings", { method: "GET" });
    await call(f, "/v1/t", { body: { ...BODIES.track, writeKey: SHOP_KEY }, headers: { Origin: "https://evil.example" } });
    expect(logLines.some((line) => line.includes("/v1/projects/[redacted]/settings"))).toBe(true);
    for (const key of [WRITE_KEY, OTHER_WRITE_KEY, SHOP_KEY, "wk_not_a_real_key_000000"]) {
      expect(logLines.filter((line) => line.includes(key))).toEqual([]);
    }
  });
});

describe("mobile SDKs", () => {
  it("a batch as analytics-kotlin and analytics-swift post it to /v1/b: Basic auth, writeKey and sentAt in the body", async () => {
    const f = await start();
    const context = {
      app: { name: "Shop", version: "3.2.1", namespace: "com.example.shop", build: "321" },
      device: { id: "d-1", manufacturer: "Google", model: "Pixel 8", type: "android", name: "shiba" },
      library: { name: "analytics-kotlin", version: "1.19.1" },
      os: { name: "Android", version: "15" },
      screen: { density: 2.625, height: 2400, width: 1080 },
      network: { wifi: true, bluetooth: false, cellular: false },
      locale: "en-US",
      timezone: "Europe/Berlin",
      userAgent: "Dalvik/2.1.0 (Linux; U; Android 15; Pixel 8)",
      instanceId: "i-1",
    };
    const metadata = { bundled: [], unbundled: [], bundledIds: [] };
    const body = {
      batch: [
        {
          type: "screen",
          name: "Home",
          category: "",
          properties: {},
          anonymousId: "anon-1",
          messageId: "m-screen",
          integrations: {},
          context,
          userId: "",
          timestamp: "2026-11-24T10:00:00.000Z",
          _metadata: metadata,
        },
        {
          type: "track",
          event: "Item Purchased",
          properties: { sku: "A-1", price: 9.99 },
          anonymousId: "anon-1",
          messageId: "m-track",
          integrations: {},
          context,
          userId: "user-1",
          timestamp: "2026-11-24T10:00:01.000Z",
          _metadata: metadata,
        },
        {
          type: "identify",
          traits: { email: "u@example.com" },
          anonymousId: "anon-1",
          messageId: "m-identify",
          integrations: {},
          context: { ...context, library: { name: "analytics-swift", version: "1.7.2" } },
          userId: "user-1",
          timestamp: "2026-11-24T10:00:02.000Z",
        },
      ],
      writeKey: WRITE_KEY,
      sentAt: "2026-11-24T10:00:03.000Z",
    };
    const response = await call(f, "/v1/b", {
      body,
      headers: {
        Authorization: basic(WRITE_KEY),
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": "analytics-kotlin/1.19.1",
      },
    });
    expect(response).toMatchObject({ status: 200, body: { success: true } });
    const calls = await storedCalls(f);
    expect(calls.map((c) => [c.messageId, c.payload?.$case])).toEqual([
      ["m-screen", "screen"],
      ["m-track", "track"],
      ["m-identify", "identify"],
    ]);
    expect(calls[0]?.anonymousId).toBe("anon-1");
    expect(calls[1]?.userId).toBe("user-1");
    expect(calls[1]?.context?.library).toEqual({ name: "analytics-kotlin", version: "1.19.1" });
    expect(calls[2]?.context?.library).toEqual({ name: "analytics-swift", version: "1.7.2" });
    expect(calls[1]?.timestamp?.toISOString()).toBe("2026-11-24T10:00:01.000Z");
  });
});
