import { jetstream } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  applyWorkspaceFile,
  busNames,
  createLogger,
  describeIssues,
  hashWriteKey,
  kvKeys,
  openConfigBucket,
  workspaceFileSchema,
  WorkspaceView,
  type WorkspaceFile,
} from "../src/index.js";

let nats: NatsServer;
let nc: NatsConnection;
let kv: KV;
const views: WorkspaceView[] = [];
const logger = createLogger({ service: "test", level: "silent" });

beforeEach(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url });
  kv = await openConfigBucket(jetstream(nc), busNames(uniqueNamespace()), 1);
});
afterEach(async () => {
  for (const view of views.splice(0)) view.close();
  await nc.close();
  await nats.dispose();
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
});
