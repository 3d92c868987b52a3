import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, Metadata, type ChannelOptions } from "@grpc/grpc-js";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import {
  IngestServiceClient,
  type IngestBatchRequest,
  type IngestBatchResponse,
  type IngestCallRequest,
  type IngestCallResponse,
} from "@switchyard/contracts";
import { loadDeliveryConfig, startDelivery, type DeliveryHandle } from "@switchyard/delivery";
import { loadIngestConfig, startIngest, type IngestHandle } from "@switchyard/ingest";
import { basicAuthorization } from "@switchyard/workspace";
import { busNames, type BusNames, CALLS_CONSUMER } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import { LOOPBACK_CIDRS, NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";

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
  grpc: IngestClient;
  /** Base URL of ingest's Segment-compatible HTTP API. */
  httpUrl: string;
  /** Resolves when delivery has handled every published batch and no retry is waiting. */
  settled(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startStack(options: { workspace: unknown; deliveryEnv?: Record<string, string> }): Promise<Stack> {
  const nats = await NatsServer.start();
  const dir = await mkdtemp(join(tmpdir(), "switchyard-e2e-"));
  const workspaceFile = join(dir, "workspace.json");
  await writeFile(workspaceFile, JSON.stringify(options.workspace));
  const namespace = uniqueNamespace();
  const names = busNames(namespace);
  const common = {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    SWITCHYARD_WORKSPACE_FILE: workspaceFile,
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
  };
  const ingest = await startIngest(
    loadIngestConfig({ ...common, INGEST_GRPC_PORT: "0", INGEST_OPS_PORT: "0", INGEST_HTTP_PORT: "0" }),
    createLogger({ service: "ingest", level: "silent" }),
  );
  const delivery = await startDelivery(
    loadDeliveryConfig({
      ...common,
      DELIVERY_GRPC_PORT: "0",
      DELIVERY_OPS_PORT: "0",
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
      ...options.deliveryEnv,
    }),
    createLogger({ service: "delivery", level: "silent" }),
  );
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const jsm = await jetstreamManager(nc);
  const grpc = new IngestClient(`127.0.0.1:${ingest.grpcPort}`);

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
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Promise wrapper over the generated IngestService client; the write key goes as HTTP Basic in `authorization`. */
export class IngestClient {
  private readonly client: IngestServiceClient;

  constructor(target: string, options: ChannelOptions = {}) {
    this.client = new IngestServiceClient(target, credentials.createInsecure(), options);
  }

  ingestBatch(request: Partial<IngestBatchRequest>, writeKey: string): Promise<IngestBatchResponse> {
    return new Promise((resolve, reject) =>
      this.client.ingestBatch(
        { batchId: "", calls: [], ...request },
        authorization(writeKey),
        { deadline: Date.now() + 10_000 },
        (error, response) => (error ? reject(error) : resolve(response)),
      ),
    );
  }

  ingestCall(request: IngestCallRequest, writeKey: string): Promise<IngestCallResponse> {
    return new Promise((resolve, reject) =>
      this.client.ingestCall(request, authorization(writeKey), { deadline: Date.now() + 10_000 }, (error, response) =>
        error ? reject(error) : resolve(response),
      ),
    );
  }

  close(): void {
    this.client.close();
  }
}

function authorization(writeKey: string): Metadata {
  const metadata = new Metadata();
  metadata.set("authorization", basicAuthorization(writeKey));
  return metadata;
}
