import { credentials, Metadata, type ChannelOptions, type ServiceError as GrpcError } from "@grpc/grpc-js";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import {
  IngestServiceClient,
  type IngestBatchRequest,
  type IngestBatchResponse,
  type IngestCallRequest,
  type IngestCallResponse,
} from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { busNames, type BusNames } from "@switchyard/bus";
import { createLogger, type Logger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace, writeWorkspaceFile } from "@switchyard/testkit";
import { loadIngestConfig, startIngest, type IngestConfig, type IngestHandle } from "../src/index.js";

export const WRITE_KEY = "wk_test_ingest_0123456789";
export const OTHER_WRITE_KEY = "wk_test_other_0123456789";

export interface IngestFixture {
  nats: NatsServer;
  names: BusNames;
  ingest: IngestHandle;
  /** The test's own connection, for reading what ingest published. */
  nc: NatsConnection;
  grpc: GrpcIngestClient;
  httpUrl: string;
  /** Stops ingest (as on SIGTERM), leaving nothing listening on its ports. */
  stopIngest(): Promise<void>;
  /** Starts ingest again on the same ports, namespace and workspace (replaces `ingest`). */
  restartIngest(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * A real nats-server, a workspace file with two sources (and `sources`, as in a workspace file),
 * and ingest started in this process (`env` adds settings).
 */
export async function startIngestFixture(
  options: { env?: Record<string, string>; sources?: unknown[]; logLines?: string[] } = {},
): Promise<IngestFixture> {
  const nats = await NatsServer.start();
  const workspaceFile = await writeWorkspaceFile({
    sources: [
      { id: "web", name: "Web backend", writeKeys: [WRITE_KEY] },
      { id: "mobile", writeKeys: [OTHER_WRITE_KEY] },
      ...(options.sources ?? []),
    ],
  });
  const namespace = uniqueNamespace();
  const logLines = options.logLines;
  const logger = logLines
    ? createLogger({ service: "ingest", level: "trace", destination: { write: (line: string) => void logLines.push(line) } })
    : silentIngestLogger();
  const { ingest, config } = await startIngestInProcess({
    natsUrl: nats.url,
    namespace,
    workspaceFile: workspaceFile.path,
    env: { INGEST_PUBLISH_TIMEOUT_MS: "2000", ...options.env },
    logger,
  });
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const grpc = new GrpcIngestClient(`127.0.0.1:${ingest.grpcPort}`);
  const samePorts = { ...config, INGEST_GRPC_PORT: ingest.grpcPort, INGEST_HTTP_PORT: ingest.httpPort };
  const fixture: IngestFixture = {
    nats,
    names: busNames(namespace),
    ingest,
    nc,
    grpc,
    httpUrl: `http://127.0.0.1:${ingest.httpPort}`,
    stopIngest: () => fixture.ingest.stop(),
    restartIngest: async () => {
      fixture.ingest = await startIngest(samePorts, logger);
    },
    dispose: async () => {
      grpc.close();
      await nc.close();
      await fixture.ingest.stop().catch(() => {});
      await nats.dispose();
      await workspaceFile.remove();
    },
  };
  return fixture;
}

function silentIngestLogger(): Logger {
  return createLogger({ service: "ingest", level: "silent" });
}

/**
 * Ingest in this process on `natsUrl` and `namespace`, on loopback, every port chosen by the
 * system, logging nothing unless given a logger (`env` adds or replaces settings).
 */
export async function startIngestInProcess(options: {
  natsUrl: string;
  namespace: string;
  workspaceFile?: string;
  env?: Record<string, string>;
  logger?: Logger;
}): Promise<{ ingest: IngestHandle; config: IngestConfig }> {
  const config = loadIngestConfig({
    NATS_URL: options.natsUrl,
    SWITCHYARD_NAMESPACE: options.namespace,
    ...(options.workspaceFile === undefined ? {} : { SWITCHYARD_WORKSPACE_FILE: options.workspaceFile }),
    INGEST_GRPC_PORT: "0",
    INGEST_OPS_PORT: "0",
    INGEST_HTTP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    ...options.env,
  });
  return { ingest: await startIngest(config, options.logger ?? silentIngestLogger()), config };
}

/**
 * Promise wrapper over the generated grpc-js client, sending the write key as Basic auth
 * (WRITE_KEY unless given; null sends none).
 */
export class GrpcIngestClient {
  private readonly client: IngestServiceClient;

  constructor(target: string, options: ChannelOptions = {}) {
    this.client = new IngestServiceClient(target, credentials.createInsecure(), options);
  }

  ingestBatch(request: Partial<IngestBatchRequest>, writeKey: string | null = WRITE_KEY): Promise<IngestBatchResponse> {
    return new Promise((resolve, reject) =>
      this.client.ingestBatch(
        { batchId: "", calls: [], ...request },
        authMetadata(writeKey),
        { deadline: Date.now() + 10_000 },
        (error, response) => (error ? reject(error) : resolve(response)),
      ),
    );
  }

  ingestCall(request: IngestCallRequest, writeKey: string | null = WRITE_KEY): Promise<IngestCallResponse> {
    return new Promise((resolve, reject) =>
      this.client.ingestCall(request, authMetadata(writeKey), { deadline: Date.now() + 10_000 }, (error, response) =>
        error ? reject(error) : resolve(response),
      ),
    );
  }

  close(): void {
    this.client.close();
  }
}

function authMetadata(writeKey: string | null): Metadata {
  const metadata = new Metadata();
  if (writeKey !== null) metadata.set("authorization", basicAuthorization(writeKey));
  return metadata;
}

export function isGrpcError(error: unknown): error is GrpcError {
  return error instanceof Error && "code" in error && typeof (error as GrpcError).code === "number";
}
