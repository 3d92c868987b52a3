import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { loadDeliveryConfig, startDelivery, type DeliveryHandle } from "@switchyard/delivery";
import type { IngestHandle } from "@switchyard/ingest";
import { busNames, type BusNames } from "@switchyard/bus";
import { CALLS_CONSUMER } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import { LOOPBACK_CIDRS, NatsServer, uniqueNamespace, waitFor, writeWorkspaceFile } from "@switchyard/testkit";
import { GrpcIngestClient, startIngestInProcess } from "@switchyard/testkit/fixtures/ingest";

/** The ingest gRPC client, with the write key given to each call. */
export { GrpcIngestClient as IngestClient };

/**
 * The whole pipeline in this process: a real nats-server, ingest and delivery
 * on one namespace, both seeded from the same workspace file.
 */
export interface Stack {
  nats: NatsServer;
  names: BusNames;
  /** The test's own NATS connection, for looking at streams and consumers. */
  nc: NatsConnection;
  jsm: JetStreamManager;
  ingest: IngestHandle;
  delivery: DeliveryHandle;
  grpc: GrpcIngestClient;
  /** Base URL of ingest's Segment-compatible HTTP API. */
  httpUrl: string;
  /** Resolves when delivery has handled every published batch and no retry is waiting. */
  settled(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startStack(options: { workspace: unknown; deliveryEnv?: Record<string, string> }): Promise<Stack> {
  const nats = await NatsServer.start();
  const workspaceFile = await writeWorkspaceFile(options.workspace);
  const namespace = uniqueNamespace();
  const names = busNames(namespace);
  const { ingest } = await startIngestInProcess({ natsUrl: nats.url, namespace, workspaceFile: workspaceFile.path });
  const delivery = await startDelivery(
    loadDeliveryConfig({
      NATS_URL: nats.url,
      SWITCHYARD_NAMESPACE: namespace,
      SWITCHYARD_WORKSPACE_FILE: workspaceFile.path,
      HOST: "127.0.0.1",
      LOG_LEVEL: "silent",
      DELIVERY_GRPC_PORT: "0",
      DELIVERY_OPS_PORT: "0",
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
      ...options.deliveryEnv,
    }),
    createLogger({ service: "delivery", level: "silent" }),
  );
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const jsm = await jetstreamManager(nc);
  const grpc = new GrpcIngestClient(`127.0.0.1:${ingest.grpcPort}`);

  return {
    nats,
    names,
    nc,
    jsm,
    ingest,
    delivery,
    grpc,
    httpUrl: `http://127.0.0.1:${ingest.httpPort}`,
    settled: async () => {
      await waitFor("delivery to settle", async () => {
        const stream = await jsm.streams.info(names.callsStream);
        const consumer = await jsm.consumers.info(names.callsStream, CALLS_CONSUMER);
        const retry = await jsm.streams.info(names.retryStream);
        return consumer.ack_floor.stream_seq === stream.state.last_seq && consumer.num_ack_pending === 0 && retry.state.messages === 0;
      });
    },
    dispose: async () => {
      grpc.close();
      await ingest.stop().catch(() => {});
      await delivery.stop().catch(() => {});
      await nc.close();
      await nats.dispose();
      await workspaceFile.remove();
    },
  };
}
