import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startConsoleFixture, type ConsoleFixture } from "@switchyard/testkit/fixtures/console";

/**
 * The sign-in limiter behind a reverse proxy, against the real console over HTTP. The console
 * trusts 127.0.0.1 (standing in for the proxy, which appends the client's address to
 * X-Forwarded-For) and 10.0.0.0/8; a request from 127.0.0.2, another loopback address, is a
 * client reaching the console directly.
 */

let fixture: ConsoleFixture;

beforeAll(async () => {
  fixture = await startConsoleFixture({ consoleEnv: { CONSOLE_TRUSTED_PROXIES: "127.0.0.1, 10.0.0.0/8" } });
});
afterAll(async () => {
  await fixture?.dispose();
});

/** POST /api/session from `localAddress`, with X-Forwarded-For when given. */
function signIn(secret: string, options: { forwardedFor?: string; localAddress?: string } = {}): Promise<number> {
  const body = JSON.stringify({ secret });
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${fixture.url}/api/session`,
      {
        method: "POST",
        localAddress: options.localAddress ?? "127.0.0.1",
        agent: false,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          origin: fixture.url,
          ...(options.forwardedFor !== undefined ? { "x-forwarded-for": options.forwardedFor } : {}),
        },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

async function guessWrong(times: number, options: { forwardedFor?: string; localAddress?: string }, label: string): Promise<void> {
  for (let i = 0; i < times; i++) expect(await signIn(`${label}-guess-${i}`, options), `${label} guess ${i}`).toBe(401);
}

describe("failed sign-ins behind a trusted proxy", () => {
  it("lock only the client that made them; another client behind the same proxy signs in", async () => {
    const guesser = { forwardedFor: "203.0.113.7" };
    await guessWrong(10, guesser, "guesser");
    expect(await signIn("guesser-guess-10", guesser)).toBe(429);
    // Locked: the right secret is refused too, so the lock slows guessing.
    expect(await signIn(ADMIN_TOKEN, guesser)).toBe(429);
    // What the guesser writes into X-Forwarded-For itself is left of the hop the proxy appended.
    expect(await signIn(ADMIN_TOKEN, { forwardedFor: "198.51.100.99, 203.0.113.7" })).toBe(429);

    expect(await signIn(ADMIN_TOKEN, { forwardedFor: "203.0.113.8" })).toBe(200);
    // Behind a chain of trusted proxies, the client is the right-most address that is none of them.
    expect(await signIn(ADMIN_TOKEN, { forwardedFor: "203.0.113.9, 10.1.2.3" })).toBe(200);
    expect(await signIn(ADMIN_TOKEN, { forwardedFor: "203.0.113.7, 10.1.2.3" })).toBe(429);
  });

  it("from a peer that is not a trusted proxy are counted for the peer: its X-Forwarded-For is ignored", async () => {
    const direct = { localAddress: "127.0.0.2" };
    for (let i = 0; i < 10; i++) expect(await signIn(`direct-guess-${i}`, { ...direct, forwardedFor: `192.0.2.${i}` })).toBe(401);
    // No spoofing out of the lock: a fresh forwarded address changes nothing.
    expect(await signIn(ADMIN_TOKEN, { ...direct, forwardedFor: "192.0.2.200" })).toBe(429);
    expect(await signIn(ADMIN_TOKEN, direct)).toBe(429);
    // Clients behind the proxy are not locked by it.
    expect(await signIn(ADMIN_TOKEN, { forwardedFor: "192.0.2.200" })).toBe(200);
  });

  it("logs the client address, not the proxy's", () => {
    expect(fixture.consoleLog()).toMatch(/"address":"203\.0\.113\.7".*"sign-in refused"/);
  });
});
