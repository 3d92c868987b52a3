import { createRequire } from "node:module";
import { credentials, loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { loadAudienceSyncConfig, startAudienceSync } from "@switchyard/audience-sync";
import { loadDeliveryConfig, startDelivery } from "@switchyard/delivery";
import { loadIngestConfig, startIngest } from "@switchyard/ingest";
import { loadInsightsConfig, startInsights } from "@switchyard/insights";
import { busNames } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";

/**
 * The ops endpoints of the four services against a real nats-server that the
 * test stops and starts again: /healthz stays up, /readyz and gRPC health
 * follow the NATS link, and a missing stream makes a service unready.
 */

const healthProto = createRequire(import.meta.url)("grpc-health-check").protoPath as string;
const Health = (
  (loadPackageDefinition(protoLoader.loadSync(healthProto, { enums: String })) as GrpcObject).grpc as GrpcObject & {
    health: { v1: { Health: ServiceClientConstructor } };
  }
).health.v1.Health;

interface Running {
  name: string;
  opsPort: number;
  grpcPort: number;
  stop(): Promise<void>;
}

let nats: NatsServer;
let services: Running[];
const namespace = uniqueNamespace();
const names = busNames(namespace);

beforeAll(async () => {
  nats = await NatsServer.start();
  const common = { NATS_URL: nats.url, SWITCHYARD_NAMESPACE: namespace, HOST: "127.0.0.1", LOG_LEVEL: "silent" };
  const logger = (service: string) => createLogger({ service, level: "silent" });
  const ingest = await startIngest(
    loadIngestConfig({ ...common, INGEST_GRPC_PORT: "0", INGEST_HTTP_PORT: "0", INGEST_OPS_PORT: "0" }),
    logger("ingest"),
  );
  const delivery = await startDelivery(
    loadDeliveryConfig({ ...common, DELIVERY_GRPC_PORT: "0", DELIVERY_OPS_PORT: "0" }),
    logger("delivery"),
  );
  const audience = await startAudienceSync(
    loadAudienceSyncConfig({ ...common, AUDIENCE_GRPC_PORT: "0", AUDIENCE_OPS_PORT: "0" }),
    logger("audience-sync"),
  );
  const insights = await startInsights(
    loadInsightsConfig({ ...common, INSIGHTS_GRPC_PORT: "0", INSIGHTS_OPS_PORT: "0" }),
    logger("insights"),
  );
  services = [
    { name: "ingest", ...pick(ingest) },
    { name: "delivery", ...pick(delivery) },
    { name: "audience-sync", ...pick(audience) },
    { name: "insights", ...pick(insights) },
  ];
});

afterAll(async () => {
  for (const service of services ?? []) await service.stop().catch(() => {});
  await nats?.dispose();
});

function pick(handle: { opsPort: number; grpcPort: number; stop(): Promise<void> }) {
  return { opsPort: handle.opsPort, grpcPort: handle.grpcPort, stop: () => handle.stop() };
}

async function get(service: Running, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`http://127.0.0.1:${service.opsPort}${path}`);
  return { status: response.status, body: await response.json() };
}

function grpcHealth(service: Running): Promise<string> {
  const client = new Health(`127.0.0.1:${service.grpcPort}`, credentials.createInsecure()) as any;
  return new Promise<string>((resolve, reject) =>
    client.check({ service: "" }, { deadline: Date.now() + 5_000 }, (error: Error | null, response: { status: string }) =>
      error ? reject(error) : resolve(response.status),
    ),
  ).finally(() => client.close());
}

async function allReady(expected: boolean): Promise<void> {
  for (const service of services) {
    await waitFor(
      `${service.name} /readyz ${expected ? "200" : "503"}`,
      async () => (await get(service, "/readyz")).status === (expected ? 200 : 503),
    );
    await waitFor(
      `${service.name} gRPC health ${expected ? "SERVING" : "NOT_SERVING"}`,
      async () => (await grpcHealth(service)) === (expected ? "SERVING" : "NOT_SERVING"),
    );
  }
}

it("is live and ready with NATS up, lists what it checked, and serves the other paths as documented", async () => {
  for (const service of services) {
    expect(await get(service, "/healthz"), service.name).toEqual({ status: 200, body: { status: "ok" } });
    const ready = await get(service, "/readyz");
    expect(ready.status, service.name).toBe(200);
    expect(ready.body.status).toBe("ready");
    expect(ready.body.checks.map((check: { name: string }) => check.name)).toContain(`stream ${names.callsStream}`);
    expect(ready.body.checks.every((check: { ok: boolean }) => check.ok)).toBe(true);
    expect(await grpcHealth(service)).toBe("SERVING");
    expect((await get(service, "/nowhere")).status).toBe(404);
  }
  const delivery = (await get(services[1]!, "/readyz")).body;
  expect(delivery.checks.map((check: { name: string }) => check.name)).toEqual(
    expect.arrayContaining([
      `stream ${names.retryStream}`,
      `stream KV_${names.configBucket}`,
      `consumer ${names.retryStream}/delivery-retry`,
    ]),
  );
});

it("turns unready (503 with the reason, gRPC NOT_SERVING) while NATS is down, stays live, and is ready again when NATS returns", async () => {
  await nats.stop();
  await allReady(false);
  for (const service of services) {
    const unready = await get(service, "/readyz");
    expect(unready.body).toMatchObject({ status: "unready", ready: false, reason: "nats: not connected to NATS" });
    expect((await get(service, "/healthz")).status).toBe(200);
  }

  await nats.start();
  await allReady(true);
});

it("is unready while a stream it needs is missing", async () => {
  const nc = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(names.deadStream);
    const delivery = services[1]!;
    const unready = await waitFor("delivery to notice the missing stream", async () => {
      const answer = await get(delivery, "/readyz");
      return answer.status === 503 ? answer.body : undefined;
    });
    expect(unready.reason).toBe(`stream ${names.deadStream}: missing`);
    // Ingest does not need that stream.
    expect((await get(services[0]!, "/readyz")).status).toBe(200);
  } finally {
    await nc.close();
  }
});
