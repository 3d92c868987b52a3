import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { loadAudienceSyncConfig, startAudienceSync } from "@switchyard/audience-sync";
import { busNames } from "@switchyard/bus";
import { loadDeliveryConfig, startDelivery } from "@switchyard/delivery";
import { loadIngestConfig, startIngest } from "@switchyard/ingest";
import { loadInsightsConfig, startInsights } from "@switchyard/insights";
import { createLogger } from "@switchyard/platform";
import { NatsCluster, uniqueNamespace, writeWorkspaceFile, type WorkspaceFile } from "@switchyard/testkit";
import { hashWriteKey, kvKeys, openConfigBucket } from "@switchyard/workspace";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ADMIN_TOKEN, AdminClients, configService } from "@switchyard/testkit/fixtures/delivery";

/**
 * Configuration made through ConfigService survives restarts of every service: the workspace
 * file each one applies at start seeds and never overwrites a record changed through the API.
 * With SWITCHYARD_CONFIG_SOURCE=file, ConfigService refuses writes instead.
 */

type Service = "ingest" | "delivery" | "insights" | "audience-sync";
interface Running {
  grpcPort: number;
  stop(): Promise<void>;
}

const secret = () => `whsec_${randomBytes(32).toString("base64")}`;
const workspace = {
  sources: [{ id: "web", writeKeys: ["wk_web_file_0123456789"] }],
  destinations: [
    {
      id: "hook",
      settings: { webhooks: [{ url: "https://example.com/hook" }], standardWebhooks: { signingSecret: secret() } },
    },
  ],
  connections: [{ sourceId: "web", destinationId: "hook" }],
};

/** A three-node cluster with three replicas of everything, as the configuration is kept in production. */
let nats: NatsCluster;
let nc: NatsConnection;
let kv: KV;
let file: WorkspaceFile;
const namespace = uniqueNamespace();
const running = new Map<Service, Running>();
let admin: AdminClients | undefined;
const api = configService(() => admin!);

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    NATS_URL: nats.urls,
    SWITCHYARD_STREAM_REPLICAS: "3",
    SWITCHYARD_NAMESPACE: namespace,
    SWITCHYARD_WORKSPACE_FILE: file.path,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    ...extra,
  };
}

async function start(service: Service, extra: Record<string, string> = {}): Promise<Running> {
  const logger = createLogger({ service, level: "silent" });
  const e = env(extra);
  switch (service) {
    case "ingest":
      return startIngest(loadIngestConfig({ ...e, INGEST_GRPC_PORT: "0", INGEST_HTTP_PORT: "0", INGEST_OPS_PORT: "0" }), logger);
    case "delivery":
      return startDelivery(loadDeliveryConfig({ ...e, DELIVERY_GRPC_PORT: "0", DELIVERY_OPS_PORT: "0" }), logger);
    case "insights":
      return startInsights(loadInsightsConfig({ ...e, INSIGHTS_GRPC_PORT: "0", INSIGHTS_OPS_PORT: "0" }), logger);
    case "audience-sync":
      return startAudienceSync(loadAudienceSyncConfig({ ...e, AUDIENCE_GRPC_PORT: "0", AUDIENCE_OPS_PORT: "0" }), logger);
  }
}

async function restart(service: Service): Promise<void> {
  await running.get(service)?.stop();
  const handle = await start(service);
  running.set(service, handle);
  if (service === "delivery") {
    admin?.close();
    admin = new AdminClients(`127.0.0.1:${handle.grpcPort}`);
  }
}

beforeAll(async () => {
  nats = await NatsCluster.start({ size: 3 });
  nc = await connect({ servers: nats.servers });
  file = await writeWorkspaceFile(workspace);
  for (const service of ["ingest", "delivery", "insights", "audience-sync"] as const) await restart(service);
  kv = await openConfigBucket(jetstream(nc), busNames(namespace), 3);
});

afterAll(async () => {
  admin?.close();
  for (const handle of running.values()) await handle.stop().catch(() => {});
  await nc?.close();
  await nats?.dispose();
  await file?.remove();
});

const stored = async (key: string) => (await kv.get(key))?.json<any>();

it("changes made through ConfigService survive a restart of every service, one by one", async () => {
  const { destination } = await api.getDestination({ id: "hook" });
  await api.putDestination({ destination: { ...destination!, enabled: false, maxRequestsPerSecond: 25 } });
  const filter = { filter: { $case: "field" as const, value: { path: "type", test: { $case: "equals" as const, value: "track" } } } };
  await api.connect({ sourceId: "web", destinationId: "hook", filter });
  const { writeKey } = await api.rotateWriteKey({ sourceId: "web", graceSeconds: 0 });
  const { signingSecret } = await api.rotateSigningSecret({ destinationId: "hook", graceSeconds: 0 });
  const expected = async () => {
    const hook = (await api.getDestination({ id: "hook" })).destination!;
    expect(hook.enabled).toBe(false);
    expect(hook.maxRequestsPerSecond).toBe(25);
    const [connection] = (await api.listConnections({ sourceId: "web" })).connections;
    expect(connection?.filter).toEqual(filter);
    expect((await stored(kvKeys.source("web"))).writeKeyHashes).toEqual([hashWriteKey(writeKey)]);
    expect((await stored(kvKeys.destination("hook"))).settings.standardWebhooks.signingSecret).toBe(signingSecret);
  };
  await expected();

  for (const service of ["ingest", "delivery", "insights", "audience-sync"] as const) {
    await restart(service);
    await expected();
  }
});

it("with SWITCHYARD_CONFIG_SOURCE=file, ConfigService refuses writes with FAILED_PRECONDITION naming the setting", async () => {
  const owned = await start("delivery", { SWITCHYARD_NAMESPACE: uniqueNamespace(), SWITCHYARD_CONFIG_SOURCE: "file" });
  const clients = new AdminClients(`127.0.0.1:${owned.grpcPort}`);
  try {
    const fileApi = configService(() => clients);
    expect((await fileApi.listDestinations({})).destinations.map((d) => d.id)).toEqual(["hook"]);
    const refused = await fileApi.deleteDestination({ id: "hook" }).then(
      () => undefined,
      (error: { code: number; details: string }) => error,
    );
    expect(refused?.code).toBe(9); // FAILED_PRECONDITION
    expect(refused?.details).toContain("SWITCHYARD_CONFIG_SOURCE=file");
    expect((await fileApi.listDestinations({})).destinations).toHaveLength(1);
  } finally {
    clients.close();
    await owned.stop();
  }
});

it("SWITCHYARD_CONFIG_SOURCE=file without SWITCHYARD_WORKSPACE_FILE stops a service at start, naming both", async () => {
  const { SWITCHYARD_WORKSPACE_FILE: _file, ...withoutFile } = env({ SWITCHYARD_CONFIG_SOURCE: "file" });
  const config = loadDeliveryConfig({ ...withoutFile, DELIVERY_GRPC_PORT: "0", DELIVERY_OPS_PORT: "0" });
  await expect(startDelivery(config, createLogger({ service: "delivery", level: "silent" }))).rejects.toThrow(
    /SWITCHYARD_CONFIG_SOURCE=file needs SWITCHYARD_WORKSPACE_FILE/,
  );
});
