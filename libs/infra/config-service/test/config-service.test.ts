import { Client, credentials, Metadata, status, type ServiceDefinition } from "@grpc/grpc-js";
import { configApi, DeliveryServiceService, IngestServiceClient } from "@switchyard/contracts";
import { basicAuthorization, hashWriteKey, kvKeys, loadMasker, type Masker } from "@switchyard/workspace";
import { signedUpCall, WebhookReceiver, waitFor } from "@switchyard/testkit";
import { createHash, createHmac } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ADMIN_TOKEN,
  configService,
  grpcFailure as failure,
  startDeliveryFixture,
  type DeliveryFixture,
} from "@switchyard/testkit/fixtures/delivery";

let fixture: DeliveryFixture;
let receiver: WebhookReceiver;
let masker: Masker | undefined;

beforeEach(async () => {
  receiver = await WebhookReceiver.start();
  fixture = await startDeliveryFixture({ workspace: {} });
  masker = await loadMasker(fixture.configKv);
});
afterEach(async () => {
  await fixture.dispose();
  await receiver.close();
});

/** The ConfigService of the running test's fixture. */
const api = configService(() => fixture.admin);

/** A complete Destination message (proto3 has no "unset": enabled must be given). */
function destination(id: string, overrides: Partial<configApi.Destination> = {}): configApi.Destination {
  return {
    id,
    name: "",
    enabled: true,
    webhooks: [{ url: receiver.url(`/${id}`), headers: {} }],
    sharedSecret: "",
    standardWebhooks: undefined,
    maxRequestsPerSecond: 0,
    kind: undefined,
    ...overrides,
  };
}

const MASKED_RULE =
  "is a masked value, as reads show it: give the value itself (PutDestination puts the stored value back only for the same URL origin and name, and only for the keyed [set:hmac:…] form reads give now: read the destination again for it)";

/** How reads show a header or query value: the first 8 hex digits of its HMAC-SHA256 under the deployment's key. */
function masked(value: string): string {
  if (!masker) throw new Error("the masking key is read in beforeAll");
  return masker.maskValue(value);
}

/** The unkeyed form reads gave before fingerprints were keyed: the first 8 hex digits of the value's SHA-256. */
function unkeyedMask(value: string): string {
  return `[set:sha256:${createHash("sha256").update(value).digest("hex").slice(0, 8)}]`;
}

async function storedJson(key: string): Promise<any> {
  const entry = await fixture.configKv.get(key);
  return entry?.operation === "PUT" ? entry.json() : undefined;
}

/** An IngestCall over gRPC with the write key; resolves to the gRPC status code (0 when accepted). */
function grpcTrack(writeKey: string, messageId: string): Promise<number> {
  const client = new IngestServiceClient(`127.0.0.1:${fixture.ingest!.grpcPort}`, credentials.createInsecure());
  const metadata = new Metadata();
  metadata.set("authorization", basicAuthorization(writeKey));
  const call = signedUpCall(messageId);
  return new Promise<number>((resolve) =>
    client.ingestCall({ call }, metadata, { deadline: Date.now() + 10_000 }, (error) => {
      client.close();
      resolve(error?.code ?? status.OK);
    }),
  );
}

function track(ingestUrl: string, writeKey: string, messageId: string): Promise<Response> {
  return fetch(`${ingestUrl}/v1/track`, {
    method: "POST",
    headers: { authorization: basicAuthorization(writeKey), "content-type": "application/json" },
    body: JSON.stringify({ userId: "user-1", event: "Signed Up", messageId }),
  });
}

/**
 * Calls a method by its path with an empty request (valid for every proto3
 * message), so every method of a service can be tried without knowing its types.
 */
function rawCall(path: string, token: string | null): Promise<number> {
  const client = new Client(`127.0.0.1:${fixture.delivery.grpcPort}`, credentials.createInsecure());
  return new Promise<number>((resolve) =>
    client.makeUnaryRequest(
      path,
      () => Buffer.alloc(0),
      (bytes: Buffer) => bytes,
      {},
      fixture.admin.metadata(token),
      { deadline: Date.now() + 10_000 },
      (error) => {
        client.close();
        resolve(error?.code ?? status.OK);
      },
    ),
  );
}

const ADMIN_SERVICES: [string, ServiceDefinition][] = [
  ["ConfigService", configApi.ConfigServiceService as unknown as ServiceDefinition],
  ["DeliveryService", DeliveryServiceService as unknown as ServiceDefinition],
];

describe("admin token", () => {
  it.each(ADMIN_SERVICES)("is required by every method of %s (missing, wrong, or not Bearer)", async (_name, service) => {
    const paths = Object.values(service).map((method) => method.path);
    expect(paths.length).toBeGreaterThan(3);
    for (const path of paths) {
      for (const token of [null, "not-the-admin-token-000", `${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(0, -1)]) {
        expect({ path, token, code: await rawCall(path, token) }).toEqual({ path, token, code: status.UNAUTHENTICATED });
      }
      // The right token gets past the check (the empty request may still be refused for what it holds).
      expect({ path, code: await rawCall(path, ADMIN_TOKEN) }).not.toEqual({ path, code: status.UNAUTHENTICATED });
    }
  });

  it("is required: no token or a wrong one gets UNAUTHENTICATED, and nothing is written", async () => {
    for (const token of [null, "not-the-admin-token-000"]) {
      expect((await failure(api.listSources({}, token))).code).toBe(status.UNAUTHENTICATED);
      expect((await failure(api.createSource({ id: "web" }, token))).code).toBe(status.UNAUTHENTICATED);
      expect((await failure(api.putDestination({ destination: destination("hook") }, token))).code).toBe(status.UNAUTHENTICATED);
    }
    expect(await storedJson(kvKeys.source("web"))).toBeUndefined();
    expect(await storedJson(kvKeys.destination("hook"))).toBeUndefined();
    expect((await api.listSources({})).sources).toEqual([]);
  });
});

describe("malformed requests", () => {
  it("bytes that are not the request message get INVALID_ARGUMENT naming the method, not INTERNAL", async () => {
    const client = new Client(`127.0.0.1:${fixture.delivery.grpcPort}`, credentials.createInsecure());
    const metadata = new Metadata();
    metadata.set("authorization", `Bearer ${ADMIN_TOKEN}`);
    const error = await new Promise<{ code: number; details: string }>((resolve) =>
      client.makeUnaryRequest(
        "/switchyard.v1.ConfigService/PutDestination",
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
        Buffer.from([5]),
        metadata,
        (e) => resolve(e ?? { code: status.OK, details: "" }),
      ),
    );
    client.close();
    expect(status[error.code]).toBe("INVALID_ARGUMENT");
    expect(error.details).toMatch(/^request: not a valid \/switchyard\.v1\.ConfigService\/PutDestination request message/);
    expect((await api.listDestinations({})).destinations).toEqual([]);
  });
});

describe("sources", () => {
  it("CreateSource returns a write key once, stores only its digest, and ingest accepts the key", async () => {
    const created = await api.createSource({ id: "web", name: "Web backend" });
    expect(created.source).toEqual({ id: "web", name: "Web backend", writeKeyCount: 1, retiringWriteKeyCount: 0 });
    expect(created.writeKey).toMatch(/^wk_[A-Za-z0-9_-]{32}$/);

    const stored = await storedJson(kvKeys.source("web"));
    expect(stored).toEqual({ id: "web", name: "Web backend", writeKeyHashes: [hashWriteKey(created.writeKey)] });
    expect(JSON.stringify(stored)).not.toContain(created.writeKey);
    // Reads never return the key again.
    expect(await api.getSource({ id: "web" })).toEqual({ source: created.source });
    expect((await api.listSources({})).sources).toEqual([created.source]);

    const ingestUrl = await fixture.startIngest();
    const accepted = await track(ingestUrl, created.writeKey, "m-key-check");
    expect(accepted.status).toBe(200);
    expect((await track(ingestUrl, "wk_a_key_nobody_was_given", "m-wrong")).status).toBe(401);
  });

  it("refuses a second source with the same id (ALREADY_EXISTS) and keeps the first one's key", async () => {
    const first = await api.createSource({ id: "web" });
    const again = await failure(api.createSource({ id: "web", name: "another" }));
    expect(again.code).toBe(status.ALREADY_EXISTS);
    expect(again.details).toMatch(/^id: source "web" already exists/);
    expect((await storedJson(kvKeys.source("web"))).writeKeyHashes).toEqual([hashWriteKey(first.writeKey)]);
  });

  it("refuses an invalid id, naming the field", async () => {
    const refused = await failure(api.createSource({ id: "has spaces!" }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toMatch(/^id: must be 1-64 letters/);
  });

  it("GetSource and DeleteSource of an unknown source are NOT_FOUND", async () => {
    expect((await failure(api.getSource({ id: "nope" }))).code).toBe(status.NOT_FOUND);
    expect((await failure(api.deleteSource({ id: "nope" }))).code).toBe(status.NOT_FOUND);
  });
});

describe("write key rotation", () => {
  it("the old key keeps working through the grace period and stops after it; the new key works (HTTP and gRPC ingest)", async () => {
    const ingestUrl = await fixture.startIngest();
    const { writeKey: oldKey } = await api.createSource({ id: "web" });
    // Ingest is already running: it learns of the new source from its watch of the configuration, moments later.
    let probe = 0;
    await waitFor("the new source's key to work", async () => (await track(ingestUrl, oldKey, `m-before-${++probe}`)).status === 200, {
      intervalMs: 100,
    });

    const graceSeconds = 4;
    const rotated = await api.rotateWriteKey({ sourceId: "web", graceSeconds });
    const newKey = rotated.writeKey;
    expect(newKey).toMatch(/^wk_[A-Za-z0-9_-]{32}$/);
    expect(newKey).not.toBe(oldKey);
    expect(rotated.source).toMatchObject({ id: "web", writeKeyCount: 1, retiringWriteKeyCount: 1 });
    expect(rotated.previousKeysExpireAt!.getTime()).toBe(rotated.source!.retiringWriteKeysExpireAt!.getTime());

    // Stored as digests only, the old one with its end.
    const stored = await storedJson(kvKeys.source("web"));
    expect(stored).toEqual({
      id: "web",
      writeKeyHashes: [hashWriteKey(newKey)],
      retiringWriteKeys: [{ hash: hashWriteKey(oldKey), expiresAt: rotated.previousKeysExpireAt!.toISOString() }],
    });
    expect(JSON.stringify(stored)).not.toContain(oldKey);
    expect(JSON.stringify(stored)).not.toContain(newKey);

    // During the grace period both keys work, through both doors (ingest follows the change live).
    await waitFor("the new key to work", async () => (await track(ingestUrl, newKey, `m-new-${++probe}`)).status === 200, {
      intervalMs: 100,
    });
    expect(await grpcTrack(newKey, "m-new-grpc")).toBe(status.OK);
    expect((await track(ingestUrl, oldKey, "m-old-during")).status).toBe(200);
    expect(await grpcTrack(oldKey, "m-old-during-grpc")).toBe(status.OK);

    // After it, only the new one.
    await waitFor(
      "the old key to stop working over HTTP",
      async () => (await track(ingestUrl, oldKey, `m-old-${++probe}`)).status === 401,
      {
        intervalMs: 200,
        timeoutMs: graceSeconds * 1000 + 10_000,
      },
    );
    expect(Date.now()).toBeGreaterThanOrEqual(rotated.previousKeysExpireAt!.getTime());
    expect(await grpcTrack(oldKey, "m-old-after-grpc")).toBe(status.UNAUTHENTICATED);
    expect((await track(ingestUrl, newKey, "m-new-after")).status).toBe(200);
    expect(await grpcTrack(newKey, "m-new-after-grpc")).toBe(status.OK);
    expect((await api.getSource({ id: "web" })).source).toMatchObject({ writeKeyCount: 1, retiringWriteKeyCount: 0 });
  });

  it("with no grace the old key stops at once; a chosen key is accepted", async () => {
    const ingestUrl = await fixture.startIngest();
    const { writeKey: oldKey } = await api.createSource({ id: "web" });
    const chosen = "wk_chosen_by_the_operator_01";
    const rotated = await api.rotateWriteKey({ sourceId: "web", writeKey: chosen, graceSeconds: 0 });
    expect(rotated.writeKey).toBe(chosen);
    expect(rotated.source).toMatchObject({ writeKeyCount: 1, retiringWriteKeyCount: 0 });
    expect(await storedJson(kvKeys.source("web"))).toEqual({ id: "web", writeKeyHashes: [hashWriteKey(chosen)] });
    await waitFor("the chosen key to work", async () => (await track(ingestUrl, chosen, `m-${Math.random()}`)).status === 200);
    expect((await track(ingestUrl, oldKey, "m-old")).status).toBe(401);
  });

  it("refuses bad requests, naming the field, and changes nothing", async () => {
    const { writeKey } = await api.createSource({ id: "web" });
    await api.createSource({ id: "app" });
    const before = await storedJson(kvKeys.source("web"));
    const cases: [Partial<configApi.RotateWriteKeyRequest>, number, RegExp][] = [
      [{ sourceId: "nope", graceSeconds: 0 }, status.NOT_FOUND, /^source_id: no source "nope"/],
      [{ sourceId: "bad id", graceSeconds: 0 }, status.INVALID_ARGUMENT, /^source_id: must be 1-64/],
      [{ sourceId: "web", graceSeconds: 2_592_001 }, status.INVALID_ARGUMENT, /^grace_seconds: must be 0 to 2592000 \(30 days\)/],
      [
        { sourceId: "web", writeKey: "short", graceSeconds: 0 },
        status.INVALID_ARGUMENT,
        /^write_key: must be empty .* 16-256 visible ASCII/,
      ],
      [{ sourceId: "web", writeKey: "wk_with:colon_0000000", graceSeconds: 0 }, status.INVALID_ARGUMENT, /^write_key: /],
      [{ sourceId: "app", writeKey, graceSeconds: 0 }, status.ALREADY_EXISTS, /^write_key: is in use by another source/],
    ];
    for (const [request, code, details] of cases) {
      const refused = await failure(api.rotateWriteKey(request));
      expect(refused.code).toBe(code);
      expect(refused.details).toMatch(details);
    }
    expect(await storedJson(kvKeys.source("web"))).toEqual(before);
  });
});

describe("destination settings validation", () => {
  const sixEntries = Array.from({ length: 6 }, (_, i) => ({ url: `https://example.com/hook/${i}`, headers: {} }));
  const invalid: [string, Partial<configApi.Destination>, RegExp][] = [
    ["no webhook entries", { webhooks: [] }, /destination\.settings\.webhooks: needs 1 to 5 webhook entries/],
    ["six webhook entries", { webhooks: sixEntries }, /destination\.settings\.webhooks: needs 1 to 5 webhook entries/],
    [
      "an ftp:// URL",
      { webhooks: [{ url: "ftp://example.com/hook", headers: {} }] },
      /destination\.settings\.webhooks\.0\.url: must be an absolute http or https URL/,
    ],
    [
      "a relative URL",
      { webhooks: [{ url: "/hook", headers: {} }] },
      /destination\.settings\.webhooks\.0\.url: must be an absolute http or https URL/,
    ],
    [
      "a header name that is not an HTTP token",
      { webhooks: [{ url: "https://example.com/hook", headers: { "Bad Header": "x" } }] },
      /destination\.settings\.webhooks\.0\.headers\.Bad Header: header names must be HTTP tokens/,
    ],
    [
      "a header value with a line break",
      { webhooks: [{ url: "https://example.com/hook", headers: { "X-Token": "a\r\nInjected: yes" } }] },
      /destination\.settings\.webhooks\.0\.headers\.X-Token: header values must be visible ASCII/,
    ],
    ["an invalid id", { id: "no/slashes" }, /destination\.id: must be 1-64 letters/],
    [
      "a rate limit over 100000 requests per second",
      { maxRequestsPerSecond: 100_001 },
      /^destination\.maxRequestsPerSecond: must be a whole number of requests per second from 1 to 100000, or 0 for no limit$/,
    ],
  ];

  it.each(invalid)("refuses %s with INVALID_ARGUMENT naming the field, and stores nothing", async (_name, overrides, message) => {
    const refused = await failure(api.putDestination({ destination: destination("hook", overrides) }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toMatch(message);
    expect(await storedJson(kvKeys.destination("hook"))).toBeUndefined();
    expect((await api.listDestinations({})).destinations).toEqual([]);
  });

  it("keeps the stored destination when a replacement is refused", async () => {
    await api.putDestination({ destination: destination("hook") });
    const before = await storedJson(kvKeys.destination("hook"));
    expect((await failure(api.putDestination({ destination: destination("hook", { webhooks: [] }) }))).code).toBe(status.INVALID_ARGUMENT);
    expect(await storedJson(kvKeys.destination("hook"))).toEqual(before);
  });

  it("accepts 1 and 5 entries, and treats an empty secret as no secret", async () => {
    const five = Array.from({ length: 5 }, (_, i) => ({ url: `http://example.com/${i}`, headers: { "X-Index": String(i) } }));
    const stored = await api.putDestination({ destination: destination("five", { webhooks: five, sharedSecret: "" }) });
    expect(stored.destination?.webhooks).toEqual(five.map((entry, i) => ({ ...entry, headers: { "X-Index": masked(String(i)) } })));
    expect(stored.destination?.sharedSecret).toBe("");
    expect((await storedJson(kvKeys.destination("five"))).settings).toEqual({ webhooks: five });
    await api.putDestination({ destination: destination("one") });
    expect((await api.listDestinations({})).destinations.map((d) => d.id).sort()).toEqual(["five", "one"]);
  });
});

describe("rate limits (maxRequestsPerSecond)", () => {
  it("are stored, read back by Get and List, and 0 removes the limit", async () => {
    const put = await api.putDestination({ destination: destination("hook", { maxRequestsPerSecond: 50 }) });
    expect(put.destination?.maxRequestsPerSecond).toBe(50);
    expect((await api.getDestination({ id: "hook" })).destination?.maxRequestsPerSecond).toBe(50);
    expect((await api.listDestinations({})).destinations.map((d) => d.maxRequestsPerSecond)).toEqual([50]);
    expect((await storedJson(kvKeys.destination("hook"))).maxRequestsPerSecond).toBe(50);

    await api.putDestination({ destination: destination("hook", { maxRequestsPerSecond: 100_000 }) });
    expect((await api.getDestination({ id: "hook" })).destination?.maxRequestsPerSecond).toBe(100_000);

    await api.putDestination({ destination: destination("hook", { maxRequestsPerSecond: 0 }) });
    expect((await api.getDestination({ id: "hook" })).destination?.maxRequestsPerSecond).toBe(0);
    // No limit is stored as none: the record has no such key at all.
    expect(Object.keys(await storedJson(kvKeys.destination("hook")))).not.toContain("maxRequestsPerSecond");
  });

  it("a rotation of the signing secret keeps the limit", async () => {
    await api.putDestination({
      destination: destination("hook", {
        maxRequestsPerSecond: 7,
        standardWebhooks: { signingSecret: `whsec_${Buffer.alloc(32, 1).toString("base64")}`, retiringSecretsExpireAt: [] },
      }),
    });
    const rotated = await api.rotateSigningSecret({ destinationId: "hook", graceSeconds: 0 });
    expect(rotated.destination?.maxRequestsPerSecond).toBe(7);
  });

  it("ApplyWorkspace (and the workspace file) take maxRequestsPerSecond on a destination and refuse what is not a rate", async () => {
    const file = (limit: unknown) =>
      JSON.stringify({
        destinations: [{ id: "hook", maxRequestsPerSecond: limit, settings: { webhooks: [{ url: "https://example.com/h" }] } }],
      });
    await api.applyWorkspace({ workspaceJson: file(25) });
    expect((await api.getDestination({ id: "hook" })).destination?.maxRequestsPerSecond).toBe(25);
    for (const bad of [-1, 2.5, 100_001, "25", null]) {
      const refused = await failure(api.applyWorkspace({ workspaceJson: file(bad) }));
      expect(refused.code).toBe(status.INVALID_ARGUMENT);
      expect(refused.details).toBe(
        "workspace_json.destinations.0.maxRequestsPerSecond: must be a whole number of requests per second from 1 to 100000, or 0 for no limit",
      );
    }
    expect((await api.getDestination({ id: "hook" })).destination?.maxRequestsPerSecond).toBe(25);
  });
});

describe("destination settings that cannot work are refused at save time", () => {
  const withHeaders = (headers: Record<string, string>) => ({ webhooks: [{ url: "https://example.com/hook", headers }] });
  const withUrl = (url: string) => ({ webhooks: [{ url, headers: {} }] });
  const HOP_BY_HOP = "hop-by-hop headers cannot be set";
  const FRAMING = "framing headers cannot be set";
  const SET_BY_SWITCHYARD = "this header is set by Switchyard and cannot be overridden";
  // Mixed case on purpose: header names are case-insensitive.
  const forbidden: [string, string][] = [
    ["Connection", HOP_BY_HOP],
    ["keep-alive", HOP_BY_HOP],
    ["UPGRADE", HOP_BY_HOP],
    ["Upgrade", HOP_BY_HOP],
    ["Transfer-Encoding", HOP_BY_HOP],
    ["TE", HOP_BY_HOP],
    ["Trailer", HOP_BY_HOP],
    ["Proxy-Connection", HOP_BY_HOP],
    ["Expect", FRAMING],
    ["host", FRAMING],
    ["Content-Length", FRAMING],
    ["Content-Encoding", "the body is sent as plain JSON"],
    ["content-type", SET_BY_SWITCHYARD],
    ["User-Agent", SET_BY_SWITCHYARD],
    ["X-Signature", SET_BY_SWITCHYARD],
  ];

  async function refused(overrides: Partial<configApi.Destination>): Promise<string> {
    const failed = await failure(api.putDestination({ destination: destination("hook", overrides) }));
    expect(status[failed.code]).toBe("INVALID_ARGUMENT");
    expect(await storedJson(kvKeys.destination("hook"))).toBeUndefined();
    return failed.details;
  }

  it.each(forbidden)("the static header %s", async (name, rule) => {
    const details = await refused(withHeaders({ "X-Fine": "yes", [name]: "100-continue" }));
    expect(details).toBe(`destination.settings.webhooks.0.headers.${name}: ${details.split(": ").slice(1).join(": ")}`);
    expect(details).toContain(`headers.${name}: ${rule}`);
  });

  it.each([
    ["CR LF", "a\r\nX-Injected: yes"],
    ["a lone LF", "a\nb"],
    ["NUL", "a\u0000b"],
    ["DEL", "a\u007fb"],
    ["a non-ASCII letter", "caf\u00e9"],
  ])("a header value holding %s", async (_name, value) => {
    expect(await refused(withHeaders({ "X-Token": value }))).toMatch(
      /^destination\.settings\.webhooks\.0\.headers\.X-Token: header values must be visible ASCII, spaces or tabs \(no CR, LF, NUL/,
    );
  });

  it.each([
    ["X Token", "X Token"],
    ["X-Token:", "X-Token:"],
    ["X-T\u00f6ken", "X-T\u00f6ken"],
    ["X-Token\r\n", "X-Token\\u000d\\u000a"],
  ])("the header name %j", async (name, shown) => {
    expect(await refused(withHeaders({ [name]: "v" }))).toBe(
      `destination.settings.webhooks.0.headers.${shown}: header names must be HTTP tokens`,
    );
  });

  it.each([
    ["user and password", "https://user:pa55@example.com/hook"],
    ["a user only", "https://token-as-user@example.com/hook"],
  ])("URL credentials (%s): told to use an Authorization header", async (_name, url) => {
    expect(await refused(withUrl(url))).toBe(
      "destination.settings.webhooks.0.url: must not hold credentials (user:password@), which would not be sent: put them in an Authorization header",
    );
  });

  it("a URL #fragment, which is never sent", async () => {
    expect(await refused(withUrl("https://example.com/hook#section"))).toBe(
      "destination.settings.webhooks.0.url: must not have a #fragment, which is never sent",
    );
  });

  it("a URL over 16384 characters", async () => {
    expect(await refused(withUrl(`https://example.com/${"a".repeat(16_400)}`))).toMatch(
      /^destination\.settings\.webhooks\.0\.url: must be at most 16384 characters/,
    );
  });

  it("2 MB of headers, in one value or in many: INVALID_ARGUMENT naming the field, not INTERNAL", async () => {
    const one = await refused(withHeaders({ "X-Big": "a".repeat(2 * 1024 * 1024) }));
    expect(one).toContain(`destination.settings.webhooks.0.headers: take ${2 * 1024 * 1024 + "X-Big".length + 4} bytes; at most 65536`);
    expect(one).toMatch(/destination: takes \d+ bytes as stored; at most 524288/);

    const many = Object.fromEntries(Array.from({ length: 2048 }, (_, i) => [`X-Header-${i}`, "v".repeat(1000)]));
    expect(await refused(withHeaders(many))).toMatch(/^destination\.settings\.webhooks\.0\.headers: take \d+ bytes; at most 65536/);
  });

  it("a destination over 512 KiB as stored (a huge name), naming the destination", async () => {
    expect(await refused({ name: "n".repeat(600_000) })).toMatch(
      /^destination: takes 6\d{5} bytes as stored; at most 524288 \(a configuration record must fit in one bus message\)$/,
    );
  });

  it("keeps the error message short when a request holds thousands of bad headers or a huge header name", async () => {
    const bad = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`bad name ${i}`, "v"]));
    const details = await refused(withHeaders(bad));
    expect(details).toMatch(/; and 4990 more$/);
    expect(details.split("; ")).toHaveLength(11);

    const hugeName = await refused(withHeaders({ [`X-${"n".repeat(1024 * 1024)} bad`]: "v" }));
    expect(hugeName.length).toBeLessThan(300);
    expect(hugeName).toMatch(/headers\.X-n+…\(1048582 characters\): header names must be HTTP tokens$/);
  });

  it("lists every rule an entry breaks at once, each with its field", async () => {
    const details = await refused({
      webhooks: [
        { url: "https://ok.example.com/a", headers: { Authorization: "Bearer t" } },
        { url: "https://u:p@example.com/b#x", headers: { Upgrade: "h2c", "Keep-Alive": "timeout=5" } },
      ],
    });
    expect(details.split("; ")).toEqual([
      "destination.settings.webhooks.1.url: must not hold credentials (user:password@), which would not be sent: put them in an Authorization header",
      "destination.settings.webhooks.1.url: must not have a #fragment, which is never sent",
      "destination.settings.webhooks.1.headers.Upgrade: hop-by-hop headers cannot be set: the HTTP client manages the connection",
      "destination.settings.webhooks.1.headers.Keep-Alive: hop-by-hop headers cannot be set: the HTTP client manages the connection",
    ]);
  });

  it("keeps what was stored when a replacement breaks a rule", async () => {
    await api.putDestination({ destination: destination("hook", withHeaders({ Authorization: "Bearer t" })) });
    const before = await storedJson(kvKeys.destination("hook"));
    const failed = await failure(api.putDestination({ destination: destination("hook", withHeaders({ Upgrade: "websocket" })) }));
    expect(status[failed.code]).toBe("INVALID_ARGUMENT");
    expect(await storedJson(kvKeys.destination("hook"))).toEqual(before);
  });

  it("accepts what works: Authorization, other custom headers, tabs and spaces in values, query strings", async () => {
    const webhooks = [
      {
        url: "https://example.com/hook?token=abc&v=2",
        headers: { Authorization: "Basic dXNlcjpwYXNz", "X-Api-Key": "k 1\t2", Accept: "application/json", "Proxy-Authorization": "x" },
      },
    ];
    await api.putDestination({ destination: destination("hook", { webhooks }) });
    expect((await storedJson(kvKeys.destination("hook"))).settings.webhooks).toEqual(webhooks);
  });

  it("ApplyWorkspace applies the same rules, naming the file's field", async () => {
    const workspace = {
      destinations: [{ id: "hook", settings: { webhooks: [{ url: "https://a:b@example.com/", headers: { Expect: "100-continue" } }] } }],
    };
    const failed = await failure(
      fixture.admin.call<configApi.ApplyWorkspaceRequest, configApi.ApplyWorkspaceResponse>(
        fixture.admin.config,
        "applyWorkspace",
        configApi.ApplyWorkspaceRequest,
        { workspaceJson: JSON.stringify(workspace) },
      ),
    );
    expect(status[failed.code]).toBe("INVALID_ARGUMENT");
    expect(failed.details.split("; ")).toEqual([
      "workspace_json.destinations.0.settings.webhooks.0.url: must not hold credentials (user:password@), which would not be sent: put them in an Authorization header",
      "workspace_json.destinations.0.settings.webhooks.0.headers.Expect: framing headers cannot be set: Switchyard frames each request from the URL and body",
    ]);
    expect(await storedJson(kvKeys.destination("hook"))).toBeUndefined();
  });

  it("a record stored before these rules still reads (and can be deleted), so no destination vanishes on upgrade", async () => {
    const old = {
      id: "old",
      type: "webhooks",
      enabled: true,
      settings: { webhooks: [{ url: "https://u:p@example.com/x", headers: { Upgrade: "h2c" } }] },
    };
    await fixture.configKv.put(kvKeys.destination("old"), JSON.stringify(old));
    const read = (await api.getDestination({ id: "old" })).destination!;
    expect(read.webhooks).toEqual([{ url: `https://u:${masked("p")}@example.com/x`, headers: { Upgrade: masked("h2c") } }]);
    expect((await api.listDestinations({})).destinations.map((d) => d.id)).toEqual(["old"]);
    // Writing it back is held to the rules.
    expect((await failure(api.putDestination({ destination: read }))).code).toBe(status.INVALID_ARGUMENT);
    await api.deleteDestination({ id: "old" });
    expect(await storedJson(kvKeys.destination("old"))).toBeUndefined();
  });
});

describe("a NATS server with a max payload smaller than a destination", () => {
  let configFile: string;
  beforeEach(async () => {
    // Replace the default fixture by one whose bus carries at most 256 KiB per message.
    await fixture.dispose();
    configFile = join(tmpdir(), `switchyard-max-payload-${process.pid}-${Date.now()}.conf`);
    await writeFile(configFile, "max_payload: 262144\n");
    fixture = await startDeliveryFixture({ workspace: {}, nats: { args: ["-c", configFile] } });
  });

  it("PutDestination answers INVALID_ARGUMENT naming the destination, not INTERNAL", async () => {
    // Valid by the schema (each entry 60 KB of headers), 300 KB as stored.
    const webhooks = Array.from({ length: 5 }, (_, i) => ({ url: `https://example.com/${i}`, headers: { "X-Big": "b".repeat(60_000) } }));
    const failed = await failure(api.putDestination({ destination: destination("hook", { webhooks }) }));
    expect(status[failed.code]).toBe("INVALID_ARGUMENT");
    expect(failed.details).toMatch(/^destination: takes 3\d{5} bytes as stored, more than the bus's max payload$/);
    expect(await storedJson(kvKeys.destination("hook"))).toBeUndefined();
  });
});

describe("shared secrets", () => {
  it("are never revealed by reads, and putting the placeholder back keeps the secret", async () => {
    const put = await api.putDestination({ destination: destination("hook", { name: "Orders", sharedSecret: "s3cret-value" }) });
    expect(put.destination?.sharedSecret).toBe("[set]");
    expect((await api.getDestination({ id: "hook" })).destination?.sharedSecret).toBe("[set]");
    expect((await api.listDestinations({})).destinations.map((d) => d.sharedSecret)).toEqual(["[set]"]);
    expect((await storedJson(kvKeys.destination("hook"))).settings.sharedSecret).toBe("s3cret-value");

    // An edit that sends back what it read (the placeholder) changes the name and keeps the secret.
    const read = (await api.getDestination({ id: "hook" })).destination!;
    await api.putDestination({ destination: { ...read, name: "Orders v2" } });
    const stored = await storedJson(kvKeys.destination("hook"));
    expect(stored.name).toBe("Orders v2");
    expect(stored.settings.sharedSecret).toBe("s3cret-value");

    // An empty secret removes it.
    await api.putDestination({ destination: { ...read, sharedSecret: "" } });
    expect((await storedJson(kvKeys.destination("hook"))).settings.sharedSecret).toBeUndefined();
    expect((await api.getDestination({ id: "hook" })).destination?.sharedSecret).toBe("");
  });

  it("the placeholder on a destination that has no secret yet stores none", async () => {
    await api.putDestination({ destination: destination("hook", { sharedSecret: "[set]" }) });
    expect((await storedJson(kvKeys.destination("hook"))).settings.sharedSecret).toBeUndefined();
  });
});

describe("header values and URL query values are masked in reads", () => {
  const stored = () => storedJson(kvKeys.destination("hook"));
  const realWebhooks = () => [
    {
      url: receiver.url("/hook?token=tok-abc123&region=eu&flag&empty="),
      headers: { Authorization: "Bearer receiver-credential-1", "X-Team": "growth" },
    },
  ];
  const maskedWebhooks = () => [
    {
      url: receiver.url(`/hook?token=${masked("tok-abc123")}&region=${masked("eu")}&flag&empty=`),
      headers: { Authorization: masked("Bearer receiver-credential-1"), "X-Team": masked("growth") },
    },
  ];

  it("fingerprints are keyed: not the value's plain SHA-256, which a guess could be checked against", async () => {
    expect(masked("tok-abc123")).toMatch(/^\[set:hmac:[0-9a-f]{8}\]$/);
    expect(masked("tok-abc123").slice(-9, -1)).not.toBe(unkeyedMask("tok-abc123").slice(-9, -1));
  });

  it("Put, Get and List show names, host, path and fingerprints, never the values; KV keeps the values", async () => {
    const put = await api.putDestination({ destination: destination("hook", { webhooks: realWebhooks() }) });
    expect(put.destination!.webhooks).toEqual(maskedWebhooks());
    expect((await api.getDestination({ id: "hook" })).destination!.webhooks).toEqual(maskedWebhooks());
    expect((await api.listDestinations({})).destinations.map((d) => d.webhooks)).toEqual([maskedWebhooks()]);
    for (const response of [put, await api.getDestination({ id: "hook" }), await api.listDestinations({})]) {
      const text = JSON.stringify(response);
      for (const secret of ["receiver-credential-1", "tok-abc123", "growth"]) expect(text).not.toContain(secret);
    }
    expect((await stored()).settings.webhooks).toEqual(realWebhooks());
  });

  it("a read-modify-write keeps the stored values, and deliveries still carry them", async () => {
    const { writeKey } = await api.createSource({ id: "web" });
    await api.putDestination({ destination: destination("hook", { webhooks: realWebhooks() }) });
    await api.connect({ sourceId: "web", destinationId: "hook" });

    // The client reads, changes the name and adds a header, and sends the rest back as read.
    const read = (await api.getDestination({ id: "hook" })).destination!;
    const edited = {
      ...read,
      name: "Renamed",
      webhooks: [{ ...read.webhooks[0]!, headers: { ...read.webhooks[0]!.headers, "X-New": "added" } }],
    };
    const put = await api.putDestination({ destination: edited });
    expect(put.destination!.webhooks[0]!.headers["X-New"]).toBe(masked("added"));
    const after = await stored();
    expect(after.name).toBe("Renamed");
    expect(after.settings.webhooks).toEqual([{ ...realWebhooks()[0], headers: { ...realWebhooks()[0]!.headers, "X-New": "added" } }]);

    // What reaches the receiver is the real value, not the mask.
    const ingestUrl = await fixture.startIngest();
    let probe = 0;
    const [delivered] = await waitFor(
      "a delivery to the edited destination",
      async () => {
        await track(ingestUrl, writeKey, `m-masked-${++probe}`);
        return receiver.requests.length > 0 ? receiver.requests : undefined;
      },
      { intervalMs: 200 },
    );
    expect(delivered!.path).toBe("/hook?token=tok-abc123&region=eu&flag&empty=");
    expect(delivered!.headers.authorization).toBe("Bearer receiver-credential-1");
    expect(delivered!.headers["x-team"]).toBe("growth");
    expect(delivered!.headers["x-new"]).toBe("added");
  });

  it("a new value replaces a masked one; a percent-encoded mask (as URL tools write it) is recognised", async () => {
    await api.putDestination({ destination: destination("hook", { webhooks: realWebhooks() }) });
    const read = (await api.getDestination({ id: "hook" })).destination!;
    const url = receiver.url(`/hook?token=${encodeURIComponent(masked("tok-abc123"))}&region=us&flag&empty=`);
    expect(url).toContain("token=%5Bset%3Ahmac%3A");
    await api.putDestination({
      destination: { ...read, webhooks: [{ url, headers: { ...read.webhooks[0]!.headers, Authorization: "Bearer rotated-2" } }] },
    });
    expect((await stored()).settings.webhooks).toEqual([
      {
        url: receiver.url("/hook?token=tok-abc123&region=us&flag&empty="),
        headers: { Authorization: "Bearer rotated-2", "X-Team": "growth" },
      },
    ]);
  });

  it("refuses a mask sent to another origin, under another name, or with a fingerprint that matches nothing, and stores nothing", async () => {
    await api.putDestination({ destination: destination("hook", { webhooks: realWebhooks() }) });
    const before = await stored();
    const read = (await api.getDestination({ id: "hook" })).destination!;
    const entry = read.webhooks[0]!;
    const movedUrl = entry.url.replace("127.0.0.1", "localhost");
    const cases: [string, configApi.WebhookEntry, string[]][] = [
      [
        "a changed host: credentials never follow a URL to another origin",
        { url: movedUrl, headers: entry.headers },
        [
          `destination.settings.webhooks.0.url: the value of query parameter "token" ${MASKED_RULE}`,
          `destination.settings.webhooks.0.url: the value of query parameter "region" ${MASKED_RULE}`,
          `destination.settings.webhooks.0.headers.Authorization: ${MASKED_RULE}`,
          `destination.settings.webhooks.0.headers.X-Team: ${MASKED_RULE}`,
        ],
      ],
      [
        "a header renamed",
        { url: entry.url, headers: { "X-Authorization": entry.headers.Authorization! } },
        [`destination.settings.webhooks.0.headers.X-Authorization: ${MASKED_RULE}`],
      ],
      [
        "a fingerprint of nothing stored",
        { url: entry.url, headers: { Authorization: masked("some other value") } },
        [`destination.settings.webhooks.0.headers.Authorization: ${MASKED_RULE}`],
      ],
      [
        "the unkeyed form reads gave before, even of the stored value: never matched, never stored as a value",
        { url: entry.url, headers: { ...entry.headers, Authorization: unkeyedMask("Bearer receiver-credential-1") } },
        [`destination.settings.webhooks.0.headers.Authorization: ${MASKED_RULE}`],
      ],
    ];
    for (const [what, webhook, messages] of cases) {
      const failed = await failure(api.putDestination({ destination: { ...read, webhooks: [webhook] } }));
      expect({ what, code: status[failed.code], details: failed.details.split("; ") }).toEqual({
        what,
        code: "INVALID_ARGUMENT",
        details: messages,
      });
    }
    expect(await stored()).toEqual(before);
  });

  it("a mask with an id that is no valid key is refused for the id, not INTERNAL", async () => {
    const failed = await failure(
      api.putDestination({ destination: destination("bad id *", { webhooks: maskedWebhooks(), sharedSecret: "[set]" }) }),
    );
    expect(status[failed.code]).toBe("INVALID_ARGUMENT");
    expect(failed.details).toMatch(/^destination\.id: must be 1-64 letters/);
  });

  it("a new destination cannot store masks: there is nothing to keep", async () => {
    const failed = await failure(api.putDestination({ destination: destination("hook", { webhooks: maskedWebhooks() }) }));
    expect(status[failed.code]).toBe("INVALID_ARGUMENT");
    expect(failed.details).toContain(`destination.settings.webhooks.0.headers.Authorization: ${MASKED_RULE}`);
    expect(await stored()).toBeUndefined();
  });
});

describe("connections", () => {
  beforeEach(async () => {
    await api.createSource({ id: "web" });
    await api.createSource({ id: "ios" });
    await api.putDestination({ destination: destination("orders") });
    await api.putDestination({ destination: destination("crm") });
  });

  const sorted = (connections: configApi.Connection[]) =>
    connections.map((c) => `${c.sourceId}->${c.destinationId}`).sort((a, b) => a.localeCompare(b));

  it("Connect, ListConnections (all or one source's) and Disconnect", async () => {
    expect(await api.connect({ sourceId: "web", destinationId: "orders" })).toEqual({
      connection: { sourceId: "web", destinationId: "orders" },
    });
    await api.connect({ sourceId: "web", destinationId: "crm" });
    await api.connect({ sourceId: "ios", destinationId: "crm" });
    // Connecting twice is harmless.
    await api.connect({ sourceId: "ios", destinationId: "crm" });

    expect(sorted((await api.listConnections({})).connections)).toEqual(["ios->crm", "web->crm", "web->orders"]);
    expect(sorted((await api.listConnections({ sourceId: "web" })).connections)).toEqual(["web->crm", "web->orders"]);

    await api.disconnect({ sourceId: "web", destinationId: "crm" });
    expect(sorted((await api.listConnections({})).connections)).toEqual(["ios->crm", "web->orders"]);
  });

  it("refuses to connect what does not exist (NOT_FOUND, naming the field)", async () => {
    const noSource = await failure(api.connect({ sourceId: "android", destinationId: "crm" }));
    expect(noSource).toEqual({ code: status.NOT_FOUND, details: 'source_id: no source "android"' });
    const noDestination = await failure(api.connect({ sourceId: "web", destinationId: "billing" }));
    expect(noDestination).toEqual({ code: status.NOT_FOUND, details: 'destination_id: no destination "billing"' });
    expect((await api.listConnections({})).connections).toEqual([]);
  });

  it("DeleteSource removes the source and its connections, and its key stops working", async () => {
    const created = await api.createSource({ id: "server" });
    await api.connect({ sourceId: "server", destinationId: "orders" });
    await api.connect({ sourceId: "web", destinationId: "orders" });
    const ingestUrl = await fixture.startIngest();
    expect((await track(ingestUrl, created.writeKey, "m-before")).status).toBe(200);

    await api.deleteSource({ id: "server" });
    expect((await failure(api.getSource({ id: "server" }))).code).toBe(status.NOT_FOUND);
    expect(sorted((await api.listConnections({})).connections)).toEqual(["web->orders"]);
    await waitFor(
      "ingest to refuse the deleted source's key",
      async () => (await track(ingestUrl, created.writeKey, "m-after")).status === 401,
    );
  });

  it("DeleteDestination removes the destination and its connections", async () => {
    await api.connect({ sourceId: "web", destinationId: "orders" });
    await api.connect({ sourceId: "web", destinationId: "crm" });
    await api.connect({ sourceId: "ios", destinationId: "crm" });

    await api.deleteDestination({ id: "crm" });
    expect((await failure(api.getDestination({ id: "crm" }))).code).toBe(status.NOT_FOUND);
    expect(sorted((await api.listConnections({})).connections)).toEqual(["web->orders"]);
    expect((await api.listDestinations({})).destinations.map((d) => d.id)).toEqual(["orders"]);
  });
});

describe("live configuration", () => {
  it("a source and a destination created through the API work at once, without a restart", async () => {
    const ingestUrl = await fixture.startIngest();
    const { writeKey } = await api.createSource({ id: "web" });
    await api.putDestination({
      destination: destination("hook", {
        webhooks: [{ url: receiver.url("/live"), headers: { "X-Token": "t-1" } }],
        sharedSecret: "live-secret",
      }),
    });
    await api.connect({ sourceId: "web", destinationId: "hook" });

    // Both services follow the configuration bucket; the first calls may beat the change to them,
    // so keep sending (each call with its own id) until one arrives.
    let probe = 0;
    await waitFor(
      "a call to reach the new destination",
      async () => {
        await track(ingestUrl, writeKey, `m-probe-${++probe}`);
        return receiver.requests.length > 0;
      },
      { intervalMs: 200 },
    );
    const response = await track(ingestUrl, writeKey, "m-live");
    expect(response.status).toBe(200);
    const [delivered] = await waitFor("the call sent after the change settled", () => {
      const found = receiver.byMessageId("m-live");
      return found.length > 0 ? found : undefined;
    });
    expect(delivered!.path).toBe("/live");
    expect(delivered!.json).toMatchObject({ type: "track", userId: "user-1", event: "Signed Up", messageId: "m-live" });
    expect(delivered!.headers["x-token"]).toBe("t-1");
    expect(delivered!.headers["x-signature"]).toBe(createHmac("sha1", "live-secret").update(delivered!.raw).digest("hex"));

    // A change of URL is followed too.
    const moved = await WebhookReceiver.start();
    try {
      await api.putDestination({ destination: destination("hook", { webhooks: [{ url: moved.url("/moved"), headers: {} }] }) });
      await waitFor(
        "a call to reach the new URL",
        async () => {
          await track(ingestUrl, writeKey, `m-moved-${++probe}`);
          return moved.requests.length > 0;
        },
        { intervalMs: 200 },
      );
      expect(moved.requests[0]!.headers["x-signature"]).toBeUndefined();
    } finally {
      await moved.close();
    }
  });
});
