import { hashPassword } from "@switchyard/platform";
import { leakedSecrets, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startConsoleFixture, type ConsoleFixture } from "@switchyard/testkit/fixtures/console";

/**
 * The console's HTTP API against the real services: sessions, CSRF, the generic mapping onto
 * the gRPC services and its error answers.
 */

const PASSWORD = "console-test-password-42";
let fixture: ConsoleFixture;

beforeAll(async () => {
  fixture = await startConsoleFixture({ consoleEnv: { SWITCHYARD_CONSOLE_PASSWORD_HASH: await hashPassword(PASSWORD) } });
});
afterAll(async () => {
  await fixture?.dispose();
});

interface Answer {
  status: number;
  headers: Headers;
  json: any;
}

async function call(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; cookie?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers["content-type"] ??= "application/json";
  if (init.cookie) headers.cookie = init.cookie;
  const response = await fetch(`${fixture.url}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

/** Signs in; returns the cookie to send and the CSRF token. */
async function signIn(secret = ADMIN_TOKEN): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const answer = await call("/api/session", { body: { secret }, headers: { origin: fixture.url } });
  expect(answer.status).toBe(200);
  const setCookie = answer.headers.get("set-cookie") ?? "";
  return { cookie: setCookie.split(";")[0]!, csrf: answer.json.csrfToken, setCookie };
}

/** A method called as the page calls it: session cookie, CSRF token, same origin. */
function rpc(session: { cookie: string; csrf: string }, method: string, body: unknown = {}): Promise<Answer> {
  return call(`/api/${method}`, { body, cookie: session.cookie, headers: { "x-csrf-token": session.csrf, origin: fixture.url } });
}

describe("without a session", () => {
  it("refuses the API, the live views and the session read with 401", async () => {
    for (const path of ["/api/session", "/api/overview", "/api/live/overview", "/api/live/calls?source=web"]) {
      const answer = await call(path);
      expect(answer.status, path).toBe(401);
      expect(answer.json.error.code).toBe("UNAUTHENTICATED");
    }
    const mapped = await call("/api/switchyard.v1.ConfigService/ListSources", { body: {} });
    expect(mapped.status).toBe(401);
    // A made-up or expired cookie is no session either.
    expect((await call("/api/switchyard.v1.ConfigService/ListSources", { body: {}, cookie: "switchyard_session=forged" })).status).toBe(
      401,
    );
  });

  it("serves the web app, with a strict content security policy", async () => {
    const page = await fetch(`${fixture.url}/sources`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<div id="app">');
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const script = /src="(\/app-[A-Z0-9]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${fixture.url}${script}`, { headers: { "accept-encoding": "gzip" } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toContain("immutable");
    expect((await fetch(`${fixture.url}/missing.js`)).status).toBe(404);
  });
});

describe("signing in", () => {
  it("takes the admin token or the password, refuses anything else, and sets a strict HttpOnly cookie", async () => {
    const wrong = await call("/api/session", { body: { secret: "not-the-token" }, headers: { origin: fixture.url } });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.fields).toEqual([{ field: "secret", message: "wrong admin token or password" }]);
    expect(wrong.headers.get("set-cookie")).toBeNull();

    const { setCookie, csrf } = await signIn(ADMIN_TOKEN);
    expect(setCookie).toMatch(/^switchyard_session=[A-Za-z0-9_-]{40,}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    await signIn(PASSWORD);
  });

  it("refuses a sign-in posted from another origin", async () => {
    const answer = await call("/api/session", { body: { secret: ADMIN_TOKEN }, headers: { origin: "https://evil.example" } });
    expect(answer.status).toBe(403);
    expect(answer.headers.get("set-cookie")).toBeNull();
  });
});

describe("with a session", () => {
  it("needs the CSRF token and the console's own origin for every call (403 otherwise)", async () => {
    const session = await signIn();
    const method = "/api/switchyard.v1.ConfigService/ListSources";
    const missing = await call(method, { body: {}, cookie: session.cookie, headers: { origin: fixture.url } });
    expect(missing.status).toBe(403);
    expect(missing.json.error.message).toMatch(/CSRF/);
    const wrong = await call(method, {
      body: {},
      cookie: session.cookie,
      headers: { origin: fixture.url, "x-csrf-token": "x".repeat(43) },
    });
    expect(wrong.status).toBe(403);
    const foreign = await call(method, {
      body: {},
      cookie: session.cookie,
      headers: { origin: "https://evil.example", "x-csrf-token": session.csrf },
    });
    expect(foreign.status).toBe(403);
    // Another session's token is no good either.
    const other = await signIn();
    expect(
      (await call(method, { body: {}, cookie: session.cookie, headers: { origin: fixture.url, "x-csrf-token": other.csrf } })).status,
    ).toBe(403);
    expect((await rpc(session, "switchyard.v1.ConfigService/ListSources")).status).toBe(200);
  });

  it("maps methods onto the services in proto3 JSON, and their errors onto HTTP with the fields named", async () => {
    const session = await signIn();
    const created = await rpc(session, "switchyard.v1.ConfigService/CreateSource", { id: "api-web", name: "Web" });
    expect(created.status).toBe(200);
    expect(created.json.source).toMatchObject({ id: "api-web", name: "Web", writeKeyCount: 1 });
    expect(created.json.writeKey).toMatch(/^wk_/);

    const listed = await rpc(session, "switchyard.v1.ConfigService/ListSources");
    expect(listed.json.sources.map((s: { id: string }) => s.id)).toContain("api-web");

    const again = await rpc(session, "switchyard.v1.ConfigService/CreateSource", { id: "api-web" });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: "ALREADY_EXISTS", fields: [{ field: "id" }] });

    const badId = await rpc(session, "switchyard.v1.ConfigService/CreateSource", { id: "not valid!" });
    expect(badId.status).toBe(400);
    expect(badId.json.error).toMatchObject({
      code: "INVALID_ARGUMENT",
      fields: [{ field: "id", message: "must be 1-64 letters, digits, '-' or '_'" }],
    });

    const badUrl = await rpc(session, "switchyard.v1.ConfigService/PutDestination", {
      destination: { id: "api-hook", enabled: true, webhooks: [{ url: "ftp://example.com" }] },
    });
    expect(badUrl.status).toBe(400);
    expect(badUrl.json.error.fields[0].field).toMatch(/^destination\.(settings\.)?webhooks\.0\.url$/);

    // snake_case field names are proto3 JSON too.
    const put = await rpc(session, "switchyard.v1.ConfigService/PutDestination", {
      destination: {
        id: "api-hook",
        enabled: true,
        webhooks: [{ url: "https://example.com/hook" }],
        shared_secret: "api-test-secret-value",
      },
    });
    expect(put.status).toBe(200);
    // Secrets never come back.
    expect(put.json.destination.sharedSecret).toBe("[set]");

    const missing = await rpc(session, "switchyard.v1.ConfigService/GetDestination", { id: "nope" });
    expect(missing.status).toBe(404);

    // AudienceService lives on audience-sync, DeliveryService on delivery.
    const audiences = await rpc(session, "switchyard.v1.AudienceService/ListAudiences");
    expect(audiences).toMatchObject({ status: 200, json: {} });
    const stats = await rpc(session, "switchyard.v1.DeliveryService/GetDeliveryStats");
    expect(stats.status).toBe(200);
    // Nothing listens at the insights address here.
    const insights = await rpc(session, "switchyard.v1.InsightsService/GetUsage");
    expect(insights.status).toBe(503);
    expect(insights.json.error.code).toBe("UNAVAILABLE");
  });

  it("refuses what the mapping does not cover, naming why", async () => {
    const session = await signIn();
    const unknown = await rpc(session, "switchyard.v1.ConfigService/DropEverything");
    expect(unknown.status).toBe(404);
    const ingest = await rpc(session, "switchyard.v1.IngestService/IngestBatch");
    expect(ingest.status).toBe(404);
    const streaming = await rpc(session, "switchyard.v1.AudienceService/SyncAudienceSnapshot");
    expect(streaming.status).toBe(404);
    expect(streaming.json.error.message).toMatch(/streams/);
    const get = await call("/api/switchyard.v1.ConfigService/ListSources", { cookie: session.cookie });
    expect(get.status).toBe(405);
    const form = await call("/api/switchyard.v1.ConfigService/ListSources", {
      body: "id=x",
      cookie: session.cookie,
      headers: { "content-type": "application/x-www-form-urlencoded", "x-csrf-token": session.csrf, origin: fixture.url },
    });
    expect(form.status).toBe(415);
    const notObject = await rpc(session, "switchyard.v1.ConfigService/ListSources", [1, 2]);
    expect(notObject.status).toBe(400);
    const broken = await call("/api/switchyard.v1.ConfigService/ListSources", {
      body: "{",
      cookie: session.cookie,
      headers: { "x-csrf-token": session.csrf, origin: fixture.url },
    });
    expect(broken.status).toBe(400);
    // The live calls feed sends at most 50 stored calls first.
    for (const recent of ["51", "-1", "x"]) {
      const feed = await call(`/api/live/calls?source=web&recent=${recent}`, { cookie: session.cookie });
      expect(feed.status, recent).toBe(400);
      expect(feed.json.error.fields).toEqual([{ field: "recent", message: "must be a whole number from 0 to 50" }]);
    }
  });

  it("streams the overview, and ends the session on sign-out", async () => {
    const session = await signIn();
    const controller = new AbortController();
    const stream = await fetch(`${fixture.url}/api/live/overview`, { headers: { cookie: session.cookie }, signal: controller.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = stream.body!.getReader();
    let text = "";
    await waitFor("an overview event", async () => {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
      return text.includes("event: overview");
    });
    const data = JSON.parse(/event: overview\ndata: (.*)\n/.exec(text)![1]!);
    expect(data).toMatchObject({ sources: expect.any(Array), destinations: expect.any(Array), deadLetters: expect.any(Number) });
    controller.abort();

    const signOutWithoutToken = await call("/api/session", { method: "DELETE", cookie: session.cookie, headers: { origin: fixture.url } });
    expect(signOutWithoutToken.status).toBe(403);
    const signOut = await call("/api/session", {
      method: "DELETE",
      cookie: session.cookie,
      headers: { origin: fixture.url, "x-csrf-token": session.csrf },
    });
    expect(signOut.status).toBe(204);
    expect(signOut.headers.get("set-cookie")).toMatch(/Max-Age=0/);
    expect((await rpc(session, "switchyard.v1.ConfigService/ListSources")).status).toBe(401);
  });

  it("logs no secret: not the admin token, the password, a session, a CSRF token or a write key", async () => {
    const session = await signIn(PASSWORD);
    const created = await rpc(session, "switchyard.v1.ConfigService/CreateSource", { id: "api-log-scan" });
    await call("/api/session", { body: { secret: "wrong-password-attempt-1" }, headers: { origin: fixture.url } });
    const sessionId = session.cookie.split("=")[1]!;
    expect(
      leakedSecrets(fixture.consoleLog(), [
        ADMIN_TOKEN,
        PASSWORD,
        sessionId,
        session.csrf,
        created.json.writeKey,
        "wrong-password-attempt-1",
      ]),
    ).toEqual([]);
    expect(fixture.consoleLog()).toContain("signed in");
  });
});

describe("repeated wrong sign-ins", () => {
  it("are refused with 429 for a while after ten from one address", async () => {
    await signIn(); // a success clears the address's earlier failures
    for (let i = 0; i < 10; i++) {
      const answer = await call("/api/session", { body: { secret: `guess-${i}` }, headers: { origin: fixture.url } });
      expect(answer.status).toBe(401);
    }
    const limited = await call("/api/session", { body: { secret: ADMIN_TOKEN }, headers: { origin: fixture.url } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    // No proxy is trusted by default: a forwarded address is no way out of the lock.
    const spoofed = await call("/api/session", {
      body: { secret: ADMIN_TOKEN },
      headers: { origin: fixture.url, "x-forwarded-for": "203.0.113.50" },
    });
    expect(spoofed.status).toBe(429);
  });
});
