import { jetstream, jetstreamManager, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm } from "@nats-io/obj";
import { connect } from "@nats-io/transport-node";
import { loadAudienceSyncConfig, startAudienceSync } from "@switchyard/audience-sync";
import { busNames, ensureBucketReplicas } from "@switchyard/bus";
import { loadDeliveryConfig, startDelivery } from "@switchyard/delivery";
import { loadInsightsConfig, startInsights } from "@switchyard/insights";
import { createLogger, kvStream, objectStoreStream } from "@switchyard/platform";
import { LOOPBACK_CIDRS, NatsCluster, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

/**
 * KV buckets and object stores follow SWITCHYARD_STREAM_REPLICAS like the streams do: buckets
 * made with one replica on a three-node cluster have three once the services that open them
 * start with SWITCHYARD_STREAM_REPLICAS=3, their other settings and their contents unchanged.
 */

let cluster: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  cluster = await NatsCluster.start({ size: 3 });
  nc = await connect({ servers: cluster.servers });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
  await cluster?.dispose();
});

describe("buckets made with one replica", () => {
  it("have three after the services start with SWITCHYARD_STREAM_REPLICAS=3", async () => {
    const namespace = uniqueNamespace();
    const names = busNames(namespace);
    const js = jetstream(nc);
    const kvm = new Kvm(js);
    // As an older version made them: one replica each.
    const config = await kvm.create(names.configBucket, { history: 5, replicas: 1 });
    await config.put("kept", "the configuration bucket's contents");
    await kvm.create(names.audienceStateBucket, { history: 1, replicas: 1 });
    const objects = await new Objm(js).create(names.audienceStateObjects, { replicas: 1 });
    await objects.putBlob({ name: "kept" }, new TextEncoder().encode("an object"));
    await kvm.create(names.schemaBucket, { history: 1, replicas: 1 });
    await kvm.create(names.usageBucket, { history: 1, replicas: 1, ttl: 3_600_000 });
    await kvm.create(names.deliveryStatsBucket, { history: 1, replicas: 1 });
    await kvm.create(names.rateLimitBucket, { history: 1, replicas: 1, ttl: 600_000 });
    const streams = [
      kvStream(names.configBucket),
      kvStream(names.audienceStateBucket),
      objectStoreStream(names.audienceStateObjects),
      kvStream(names.schemaBucket),
      kvStream(names.usageBucket),
      kvStream(names.deliveryStatsBucket),
      kvStream(names.rateLimitBucket),
    ];
    const before = new Map<string, StreamInfo>();
    for (const stream of streams) {
      const info = await jsm.streams.info(stream);
      expect(info.config.num_replicas, stream).toBe(1);
      before.set(stream, info);
    }

    const common = {
      NATS_URL: cluster.urls,
      SWITCHYARD_NAMESPACE: namespace,
      SWITCHYARD_STREAM_REPLICAS: "3",
      HOST: "127.0.0.1",
      LOG_LEVEL: "silent",
    };
    const logger = createLogger({ service: "test", level: "silent" });
    const running = [
      await startAudienceSync(loadAudienceSyncConfig({ ...common, AUDIENCE_GRPC_PORT: "0", AUDIENCE_OPS_PORT: "0" }), logger),
      await startInsights(loadInsightsConfig({ ...common, INSIGHTS_GRPC_PORT: "0", INSIGHTS_OPS_PORT: "0" }), logger),
      await startDelivery(
        loadDeliveryConfig({ ...common, DELIVERY_GRPC_PORT: "0", DELIVERY_OPS_PORT: "0", DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS }),
        logger,
      ),
    ];
    try {
      for (const stream of streams) {
        const info = await jsm.streams.info(stream);
        expect(info.config.num_replicas, stream).toBe(3);
        // Nothing else changed: every other setting is what the bucket was made with.
        expect({ ...info.config, num_replicas: 1 }, stream).toEqual(before.get(stream)!.config);
        // Its data reaches the two new peers.
        await waitFor(`${stream} on three nodes`, async () => {
          const replicas = (await jsm.streams.info(stream)).cluster?.replicas ?? [];
          return replicas.length === 2 && replicas.every((peer) => peer.current);
        });
      }
      const entry = await (await kvm.open(names.configBucket)).get("kept");
      expect(entry?.string()).toBe("the configuration bucket's contents");
      const object = await (await new Objm(js).open(names.audienceStateObjects)).getBlob("kept");
      expect(new TextDecoder().decode(object!)).toBe("an object");
    } finally {
      for (const service of running.reverse()) await service.stop();
    }
  });
});

describe("ensureBucketReplicas", () => {
  it("updates nothing when the replica count is already the one asked for", async () => {
    const namespace = uniqueNamespace();
    const stream = kvStream(busNames(namespace).configBucket);
    await new Kvm(jetstream(nc)).create(busNames(namespace).configBucket, { history: 5, replicas: 3 });
    const update = vi.spyOn(jsm.streams, "update");
    try {
      await ensureBucketReplicas(jsm, stream, 3);
      expect(update).not.toHaveBeenCalled();
      // And back down, for a cluster that shrinks.
      await ensureBucketReplicas(jsm, stream, 1);
      expect(update).toHaveBeenCalledTimes(1);
      expect((await jsm.streams.info(stream)).config.num_replicas).toBe(1);
    } finally {
      update.mockRestore();
    }
  });
});
