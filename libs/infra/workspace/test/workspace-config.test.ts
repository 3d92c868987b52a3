import { jetstream } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { busNames } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import {
  applyWorkspaceFile,
  describeIssues,
  FILTER_PATH_RULE,
  hashWriteKey,
  kvKeys,
  openConfigBucket,
  readWorkspaceFile,
  workspaceFileSchema,
  WorkspaceView,
  type WorkspaceFile,
} from "../src/index.js";

let nats: NatsServer;
let nc: NatsConnection;
let kv: KV;
let dir: string;
const views: WorkspaceView[] = [];
const logger = createLogger({ service: "test", level: "silent" });

async function startBus(natsArgs: string[] = []): Promise<void> {
  nats = await NatsServer.start({ args: natsArgs });
  nc = await connect({ servers: nats.url });
  kv = await openConfigBucket(jetstream(nc), busNames(uniqueNamespace()), 1);
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-workspace-"));
  await startBus();
});
afterEach(async () => {
  for (const view of views.splice(0)) view.close();
  await nc.close();
  await nats.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** Writes a workspace file and reads it as the services do at start-up; resolves to the error message. */
async function fileError(workspace: unknown): Promise<string> {
  const path = join(dir, "workspace.json");
  await writeFile(path, JSON.stringify(workspace));
  return readWorkspaceFile(path).then(
    () => {
      throw new Error("expected the file to be refused");
    },
    (error: Error) => error.message,
  );
}

const hook = (entry: { url?: string; headers?: Record<string, string> }, extra: object = {}) => ({
  id: "hook",
  ...extra,
  settings: { webhooks: [{ url: "https://example.com/hook", ...entry }] },
});

const file = (): WorkspaceFile =>
  workspaceFileSchema.parse({
    sources: [
      { id: "web", name: "Web", writeKeys: ["wk_web_0123456789"] },
      { id: "app", writeKeys: [{ hash: hashWriteKey("wk_app_0123456789") }] },
    ],
    destinations: [
      { id: "hook", settings: { webhooks: [{ url: "https://example.com/hook", headers: { "X-Token": "t" } }], sharedSecret: "s3cret" } },
    ],
    connections: [{ sourceId: "web", destinationId: "hook" }],
  });

async function openView(): Promise<WorkspaceView> {
  const view = await WorkspaceView.open(kv, logger);
  views.push(view);
  return view;
}

describe("workspace configuration in JetStream KV", () => {
  it("seeds the bucket from a file idempotently, storing write keys only as hashes", async () => {
    const first = await applyWorkspaceFile(kv, file());
    expect(first.written.sort()).toEqual(["connection.web.hook", "destination.hook", "source.app", "source.web"]);
    const second = await applyWorkspaceFile(kv, file());
    expect(second).toEqual({ written: [], unchanged: expect.arrayContaining(first.written) });

    const stored = (await kv.get(kvKeys.source("web")))?.string() ?? "";
    expect(stored).not.toContain("wk_web_0123456789");
    expect(JSON.parse(stored)).toEqual({ id: "web", name: "Web", writeKeyHashes: [hashWriteKey("wk_web_0123456789")] });
  });

  it("finds the source of a write key, and the destinations connected to it", async () => {
    await applyWorkspaceFile(kv, file());
    const view = await openView();
    expect(view.sourceForWriteKey("wk_web_0123456789")?.id).toBe("web");
    expect(view.sourceForWriteKey("wk_app_0123456789")?.id).toBe("app");
    expect(view.sourceForWriteKey("wk_nobody_000000")).toBeUndefined();
    expect(view.destinationsOf("web").map((d) => d.id)).toEqual(["hook"]);
    expect(view.destinationsOf("app")).toEqual([]);
    expect(view.webhookDestinationsOf("web").map((d) => d.id)).toEqual(["hook"]);
  });

  it("opens on an empty bucket", async () => {
    const view = await openView();
    expect(view.sourceForWriteKey("wk_web_0123456789")).toBeUndefined();
  });

  it("follows changes without a restart: new key, removed source, disabled destination", async () => {
    await applyWorkspaceFile(kv, file());
    const view = await openView();

    await kv.put(kvKeys.source("web"), JSON.stringify({ id: "web", writeKeyHashes: [hashWriteKey("wk_rotated_00000000")] }));
    await waitFor("the rotated key", () => view.sourceForWriteKey("wk_rotated_00000000")?.id === "web");
    expect(view.sourceForWriteKey("wk_web_0123456789")).toBeUndefined();

    const disabled = { ...file().destinations[0], enabled: false };
    await kv.put(kvKeys.destination("hook"), JSON.stringify(disabled));
    await waitFor("the disabled destination", () => view.destination("hook")?.enabled === false);
    // Still connected, but no longer delivered to.
    expect(view.destinationsOf("web").map((d) => d.id)).toEqual(["hook"]);
    expect(view.webhookDestinationsOf("web")).toEqual([]);

    await kv.delete(kvKeys.source("app"));
    await waitFor("the deleted source", () => view.sourceForWriteKey("wk_app_0123456789") === undefined);
  });

  it("accepts a retiring key until its expiry, and only the same source's", async () => {
    const expiresAt = "2030-01-01T00:00:00.000Z";
    await kv.put(
      kvKeys.source("web"),
      JSON.stringify({
        id: "web",
        writeKeyHashes: [hashWriteKey("wk_new_000000000000")],
        retiringWriteKeys: [{ hash: hashWriteKey("wk_old_000000000000"), expiresAt }],
      }),
    );
    const view = await openView();
    const expiry = Date.parse(expiresAt);
    expect(view.sourceForWriteKey("wk_new_000000000000", expiry + 1)?.id).toBe("web");
    expect(view.sourceForWriteKey("wk_old_000000000000", expiry - 1)?.id).toBe("web");
    expect(view.sourceForWriteKey("wk_old_000000000000", expiry)).toBeUndefined();
    expect(view.sourceForWriteKey("wk_old_000000000000", expiry + 1)).toBeUndefined();

    // Once the record no longer lists it, the old key is gone whatever the time.
    await kv.put(kvKeys.source("web"), JSON.stringify({ id: "web", writeKeyHashes: [hashWriteKey("wk_new_000000000000")] }));
    await waitFor("the retired key to go", () => view.sourceForWriteKey("wk_old_000000000000", expiry - 1) === undefined);
  });

  it("refuses invalid destination settings, naming the field", () => {
    const result = workspaceFileSchema.safeParse({
      destinations: [
        { id: "too-many", settings: { webhooks: Array.from({ length: 6 }, () => ({ url: "https://example.com" })) } },
        { id: "bad", settings: { webhooks: [{ url: "ftp://example.com", headers: { "Bad Header": "x" } }], sharedSecret: "" } },
      ],
    });
    expect(result.success).toBe(false);
    const messages = result.error ? describeIssues(result.error) : [];
    expect(messages).toContain("destinations.0.settings.webhooks: needs 1 to 5 webhook entries");
    expect(messages).toContain("destinations.1.settings.webhooks.0.url: must be an absolute http or https URL");
    expect(messages).toContain("destinations.1.settings.webhooks.0.headers.Bad Header: header names must be HTTP tokens");
    expect(messages).toContain("destinations.1.settings.sharedSecret: must be a non-empty string");
  });

  it("SWITCHYARD_WORKSPACE_FILE is held to the same rules as PutDestination, each issue naming its field", async () => {
    const message = await fileError({
      destinations: [
        hook({ url: "https://user:pass@example.com/hook", headers: { Upgrade: "websocket", "keep-alive": "5", Expect: "100-continue" } }),
        { ...hook({ headers: { "X-Big": "b".repeat(70_000) } }), id: "big" },
        { ...hook({ url: "https://example.com/hook#top", headers: { TE: "trailers", "X-Ok": "a\u0000b" } }), id: "nul" },
        { ...hook({}), id: "huge", name: "n".repeat(600_000) },
      ],
    });
    expect(message.split("\n").map((line) => line.trim())).toEqual([
      expect.stringMatching(/^SWITCHYARD_WORKSPACE_FILE: .*workspace\.json is invalid:$/),
      "destinations.0.settings.webhooks.0.url: must not hold credentials (user:password@), which would not be sent: put them in an Authorization header",
      "destinations.0.settings.webhooks.0.headers.Upgrade: hop-by-hop headers cannot be set: the HTTP client manages the connection",
      "destinations.0.settings.webhooks.0.headers.keep-alive: hop-by-hop headers cannot be set: the HTTP client manages the connection",
      "destinations.0.settings.webhooks.0.headers.Expect: framing headers cannot be set: Switchyard frames each request from the URL and body",
      "destinations.1.settings.webhooks.0.headers: take 70009 bytes; at most 65536 (receivers refuse larger request headers)",
      "destinations.2.settings.webhooks.0.url: must not have a #fragment, which is never sent",
      "destinations.2.settings.webhooks.0.headers.TE: hop-by-hop headers cannot be set: the HTTP client manages the connection",
      "destinations.2.settings.webhooks.0.headers.X-Ok: header values must be visible ASCII, spaces or tabs (no CR, LF, NUL or other control characters)",
      expect.stringMatching(
        /^destinations\.3: takes 6\d{5} bytes as stored; at most 524288 \(a configuration record must fit in one bus message\)$/,
      ),
    ]);
  });

  it("a workspace file cannot hold masked values: there is no stored value to keep", async () => {
    const mask = "[set:sha256:0123abcd]";
    const message = await fileError({
      destinations: [hook({ url: `https://example.com/hook?token=${mask}`, headers: { Authorization: mask } })],
    });
    expect(message).toContain(
      'destinations.0.settings.webhooks.0.url: the value of query parameter "token" is a masked value, as reads show it',
    );
    expect(message).toContain("destinations.0.settings.webhooks.0.headers.Authorization: is a masked value, as reads show it");
  });

  it("a connection's filter: refused in a file naming its field; stored and followed by the view as given", async () => {
    const connection = (filter: unknown) => ({
      sources: [{ id: "web", writeKeys: ["wk_web_0123456789"] }],
      destinations: [hook({})],
      connections: [{ sourceId: "web", destinationId: "hook", filter }],
    });
    const message = await fileError(
      connection({ all: { filters: [{ field: { path: "type", equals: "track" } }, { field: { path: "revenue", greater_than: 0 } }] } }),
    );
    expect(message.split("\n").map((line) => line.trim())).toEqual([
      expect.stringMatching(/^SWITCHYARD_WORKSPACE_FILE: .*workspace\.json is invalid:$/),
      `connections.0.filter.all.filters.1.field.path: ${FILTER_PATH_RULE}`,
    ]);

    const filter = {
      all: { filters: [{ field: { path: "type", equals: "track" } }, { field: { path: "properties.revenue", greater_than: 0 } }] },
    };
    await applyWorkspaceFile(kv, workspaceFileSchema.parse(connection(filter)));
    const stored = {
      all: { filters: [{ field: { path: "type", equals: "track" } }, { field: { path: "properties.revenue", greaterThan: 0 } }] },
    };
    expect((await kv.get(kvKeys.connection("web", "hook")))?.json()).toEqual({ sourceId: "web", destinationId: "hook", filter: stored });
    const view = await openView();
    expect(view.routesOf("web")).toEqual([{ destination: view.destination("hook"), filter: stored }]);
    // Applying the same file again changes nothing.
    expect(await applyWorkspaceFile(kv, workspaceFileSchema.parse(connection(filter)))).toEqual({
      written: [],
      unchanged: [kvKeys.source("web"), kvKeys.destination("hook"), kvKeys.connection("web", "hook")],
    });
  });

  it("a record stored before the current rules keeps loading in every service's view", async () => {
    // As written by an older version: the view must not drop it (its deliveries would silently stop).
    const old = {
      id: "old",
      type: "webhooks",
      enabled: true,
      settings: { webhooks: [{ url: "https://u:p@example.com/#x", headers: { Upgrade: "h2c" } }] },
    };
    await kv.put(kvKeys.destination("old"), JSON.stringify(old));
    const view = await openView();
    expect(view.destination("old")).toEqual(old);
  });

  it("a destination larger than the server's max payload is a clear start-up error naming its key", async () => {
    await nc.close();
    await nats.dispose();
    const config = join(dir, "nats.conf");
    await writeFile(config, "max_payload: 262144\n");
    await startBus(["-c", config]);
    // Valid by the schema (60 KB of headers per entry, 5 entries), 300 KB as stored.
    const destination = {
      id: "wide",
      settings: {
        webhooks: Array.from({ length: 5 }, (_, i) => ({ url: `https://example.com/${i}`, headers: { "X-Big": "b".repeat(60_000) } })),
      },
    };
    const error = await applyWorkspaceFile(kv, workspaceFileSchema.parse({ destinations: [destination] })).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.name).toBe("ConfigError");
    expect(error?.message).toMatch(/^destination\.wide: takes 3\d{5} bytes as stored, more than the bus's max payload$/);
  });
});
