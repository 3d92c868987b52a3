import { jetstream } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { busNames, type BusNames } from "@switchyard/bus";
import { Metadata } from "@grpc/grpc-js";
import { createLogger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configService } from "../src/index.js";
import { kvKeys, loadMasker, openConfigBucket } from "@switchyard/workspace";

let nats: NatsServer;
let names: BusNames;
const connections: NatsConnection[] = [];

/** The configuration bucket over a connection of its own, as each replica has. */
async function replicaBucket(): Promise<KV> {
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  return openConfigBucket(jetstream(nc), names, 1);
}

beforeEach(async () => {
  nats = await NatsServer.start();
  names = busNames(uniqueNamespace());
});
afterEach(async () => {
  for (const nc of connections.splice(0)) await nc.close();
  await nats.dispose();
});

describe("ConfigService on two replicas", () => {
  it("takes back on one the masks the other read, so a read-modify-write keeps the stored values", async () => {
    const logger = createLogger({ service: "test", level: "silent" });
    const replicas = await Promise.all(
      [0, 1].map(async () => {
        const kv = await replicaBucket();
        return configService({ kv, logger, masker: await loadMasker(kv) });
      }),
    );
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const metadata = new Metadata();
    const webhook = { url: "https://r.example/hook?token=t0k", headers: { Authorization: "Bearer short" } };
    const destination = {
      id: "hook",
      name: "",
      enabled: true,
      webhooks: [webhook],
      sharedSecret: "",
      maxRequestsPerSecond: 0,
      standardWebhooks: undefined,
      kind: undefined,
    };
    await a.putDestination({ destination }, metadata);
    const read = (await a.getDestination({ id: "hook" }, metadata)).destination!;
    expect(read.webhooks[0]!.headers.Authorization).toMatch(/^\[set:hmac:[0-9a-f]{8}\]$/);
    expect(JSON.stringify(read)).not.toContain("Bearer short");
    await b.putDestination({ destination: { ...read, name: "Renamed" } }, metadata);
    const kv = await replicaBucket();
    const stored = JSON.parse((await kv.get(kvKeys.destination("hook")))!.string()) as { name: string; settings: { webhooks: unknown } };
    expect(stored).toMatchObject({ name: "Renamed", settings: { webhooks: [webhook] } });
  });
});
