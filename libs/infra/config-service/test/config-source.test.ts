import { Metadata } from "@grpc/grpc-js";
import { jetstream } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { busNames } from "@switchyard/bus";
import { createLogger, isConfigError } from "@switchyard/platform";
import {
  applyWorkspaceFile,
  checkConfigSource,
  kvKeys,
  loadMasker,
  openConfigBucket,
  WorkspaceView,
  workspaceFileSchema,
} from "@switchyard/workspace";
import { configService, READ_ONLY_MESSAGE } from "../src/index.js";

let nats: NatsServer;
let nc: NatsConnection;
let kv: KV;
let namespace: string;
const logger = createLogger({ service: "test", level: "silent" });
const metadata = new Metadata();

beforeEach(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url });
  namespace = uniqueNamespace();
  kv = await openBucket(nc);
});
afterEach(async () => {
  await nc.close();
  await nats.dispose();
});

async function openBucket(connection: NatsConnection): Promise<KV> {
  return openConfigBucket(jetstream(connection), busNames(namespace), 1);
}

const destination = (extra: object = {}) => ({
  id: "hook",
  settings: { webhooks: [{ url: "https://example.com/hook" }] },
  ...extra,
});
const workspace = (options: { hook?: object; extraDestination?: boolean } = {}) =>
  workspaceFileSchema.parse({
    sources: [{ id: "web", writeKeys: ["wk_web_0123456789"] }],
    destinations: [destination(options.hook), ...(options.extraDestination ? [{ ...destination(), id: "other" }] : [])],
    connections: [{ sourceId: "web", destinationId: "hook" }],
  });

const stored = async (key: string) => {
  const entry = await kv.get(key);
  return entry && entry.operation === "PUT" ? entry.json<Record<string, unknown>>() : undefined;
};
const revisions = async (key: string) => {
  const seen: number[] = [];
  for await (const entry of await kv.history({ key })) seen.push(entry.revision);
  return seen;
};

describe("SWITCHYARD_CONFIG_SOURCE=api: the workspace file seeds", () => {
  it("keeps a record changed through the API, and follows the file where nobody changed it", async () => {
    await applyWorkspaceFile(kv, workspace());
    expect(await kv.get(kvKeys.seeded(kvKeys.destination("hook")))).not.toBeNull();

    // Changed through the API: disabled.
    await kv.put(kvKeys.destination("hook"), JSON.stringify({ ...(await stored(kvKeys.destination("hook"))), enabled: false }));
    const again = await applyWorkspaceFile(kv, workspace());
    expect(again.kept).toEqual([kvKeys.destination("hook")]);
    expect((await stored(kvKeys.destination("hook")))?.enabled).toBe(false);

    // The file changes the destination (kept: changed through the API) and the connection (untouched: follows the file).
    const changed = workspaceFileSchema.parse({
      ...workspace({ hook: { maxRequestsPerSecond: 5 } }),
      connections: [{ sourceId: "web", destinationId: "hook", filter: { field: { path: "type", equals: "track" } } }],
    });
    const third = await applyWorkspaceFile(kv, changed);
    expect(third.written).toEqual([kvKeys.connection("web", "hook")]);
    expect(third.kept).toEqual([kvKeys.destination("hook")]);
    expect((await stored(kvKeys.destination("hook")))?.maxRequestsPerSecond).toBeUndefined();
    expect((await stored(kvKeys.connection("web", "hook")))?.filter).toEqual({ field: { path: "type", equals: "track" } });
    // And the next file change of the connection follows too: the mark moved with it.
    expect((await applyWorkspaceFile(kv, workspace())).written).toEqual([kvKeys.connection("web", "hook")]);
  });

  it("keeps a record deleted through the API deleted, and creates a record new in the file", async () => {
    await applyWorkspaceFile(kv, workspace());
    await kv.delete(kvKeys.connection("web", "hook"));
    const applied = await applyWorkspaceFile(kv, workspace({ extraDestination: true }));
    expect(applied.kept).toEqual([kvKeys.connection("web", "hook")]);
    expect(applied.written).toEqual([kvKeys.destination("other")]);
    expect(await stored(kvKeys.connection("web", "hook"))).toBeUndefined();
  });

  it("takes a record back under the file once it holds the file's value again", async () => {
    await applyWorkspaceFile(kv, workspace());
    const original = await stored(kvKeys.destination("hook"));
    await kv.put(kvKeys.destination("hook"), JSON.stringify({ ...original, enabled: false }));
    await kv.put(kvKeys.destination("hook"), JSON.stringify(original));
    expect((await applyWorkspaceFile(kv, workspace())).unchanged).toContain(kvKeys.destination("hook"));
    expect((await applyWorkspaceFile(kv, workspace({ hook: { enabled: false } }))).written).toEqual([kvKeys.destination("hook")]);
  });

  it("keeps a record stored without a mark (by an older version or the API) that differs from the file", async () => {
    await kv.put(kvKeys.destination("hook"), JSON.stringify({ ...workspace().destinations[0], enabled: false }));
    const applied = await applyWorkspaceFile(kv, workspace());
    expect(applied.kept).toEqual([kvKeys.destination("hook")]);
  });

  it("two replicas applying the same file at once store each record once", async () => {
    const other = await connect({ servers: nats.url });
    try {
      const otherKv = await openBucket(other);
      const [a, b] = await Promise.all([applyWorkspaceFile(kv, workspace()), applyWorkspaceFile(otherKv, workspace())]);
      for (const key of [kvKeys.source("web"), kvKeys.destination("hook"), kvKeys.connection("web", "hook")]) {
        expect(await revisions(key)).toHaveLength(1);
        expect([a.written.includes(key), b.written.includes(key)].filter(Boolean)).toHaveLength(1);
      }
      // A changed file applied by both at once: one compare-and-set wins, the other finds it done.
      const changed = workspace({ hook: { maxRequestsPerSecond: 7 } });
      await Promise.all([applyWorkspaceFile(kv, changed), applyWorkspaceFile(otherKv, changed)]);
      expect(await revisions(kvKeys.destination("hook"))).toHaveLength(2);
      expect((await stored(kvKeys.destination("hook")))?.maxRequestsPerSecond).toBe(7);
    } finally {
      await other.close();
    }
  });

  it("the marks are no records: the view and the API lists ignore them", async () => {
    await applyWorkspaceFile(kv, workspace());
    const view = await WorkspaceView.open(kv, logger);
    try {
      expect(view.destinationIds()).toEqual(["hook"]);
      expect(view.sourceIds()).toEqual(["web"]);
    } finally {
      view.close();
    }
    const api = configService({ kv, logger, masker: await loadMasker(kv) });
    expect((await api.listDestinations({}, metadata)).destinations.map((d) => d.id)).toEqual(["hook"]);
    expect((await api.listConnections({ sourceId: "" }, metadata)).connections).toHaveLength(1);
  });
});

describe("SWITCHYARD_CONFIG_SOURCE=file: the workspace file is the whole truth", () => {
  it("overwrites changes and deletes records the file does not hold", async () => {
    await applyWorkspaceFile(kv, workspace({ extraDestination: true }), { source: "file" });
    await kv.put(kvKeys.destination("hook"), JSON.stringify({ ...(await stored(kvKeys.destination("hook"))), enabled: false }));
    await kv.put(kvKeys.connection("web", "other"), JSON.stringify({ sourceId: "web", destinationId: "other" }));

    const applied = await applyWorkspaceFile(kv, workspace(), { source: "file" });
    expect(applied.written).toEqual([kvKeys.destination("hook")]);
    expect(applied.deleted?.sort()).toEqual([kvKeys.connection("web", "other"), kvKeys.destination("other")]);
    expect((await stored(kvKeys.destination("hook")))?.enabled).toBe(true);
    expect(await stored(kvKeys.destination("other"))).toBeUndefined();
    expect(await stored(kvKeys.source("web"))).toBeDefined();
  });

  it("ConfigService refuses every write with FAILED_PRECONDITION naming the setting, and still reads", async () => {
    await applyWorkspaceFile(kv, workspace(), { source: "file" });
    const api = configService({ kv, logger, masker: await loadMasker(kv), configSource: "file" });
    expect((await api.listDestinations({}, metadata)).destinations).toHaveLength(1);
    const refused = await api.deleteDestination({ id: "hook" }, metadata).then(
      () => undefined,
      (error: { code?: string; message: string }) => error,
    );
    expect(refused?.code).toBe("FAILED_PRECONDITION");
    expect(refused?.message).toBe(READ_ONLY_MESSAGE);
    expect(READ_ONLY_MESSAGE).toContain("SWITCHYARD_CONFIG_SOURCE=file");
    await expect(api.applyWorkspace({ workspaceJson: "{}" }, metadata)).rejects.toThrow(READ_ONLY_MESSAGE);
    expect(await stored(kvKeys.destination("hook"))).toBeDefined();
  });

  it("without a workspace file is a configuration error naming both settings", () => {
    let caught: unknown;
    try {
      checkConfigSource("file", undefined);
    } catch (error) {
      caught = error;
    }
    expect(isConfigError(caught)).toBe(true);
    expect((caught as Error).message).toMatch(/SWITCHYARD_CONFIG_SOURCE=file.*SWITCHYARD_WORKSPACE_FILE/);
    expect(() => checkConfigSource("api", undefined)).not.toThrow();
  });
});
