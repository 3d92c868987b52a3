import { writeFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, Metadata, type ServiceError as GrpcError } from "@grpc/grpc-js";
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
import { createLogger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { loadIngestConfig, startIngest, type IngestHandle } from "../src/index.js";

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
  const dir = await mkdtemp(join(tmpdir(), "switchyard-ws-"));
  const workspaceFile = join(dir, "workspace.json");
  await writeFile(
    workspaceFile,
    JSON.stringify({
      sources: [
        { id: "web", name: "Web backend", writeKeys: [WRITE_KEY] },
        { id: "mobile", writeKeys: [OTHER_WRITE_KEY] },
        ...(options.sources ?? []),
      ],
    }),
  );
  const namespace = uniqueNamespace();
  const config = loadIngestConfig({
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    SWITCHYARD_WORKSPACE_FILE: workspaceFile,
    INGEST_GRPC_PORT: "0",
    INGEST_OPS_PORT: "0",
    INGEST_HTTP_PORT: "0",
    INGEST_PUBLISH_TIMEOUT_MS: "2000",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    ...options.env,
  });
  const logLines = options.logLines;
  const logger = logLines
    ? createLogger({ service: "ingest", level: "trace", destination: { write: (line: string) => void logLines.push(line) } })
    : createLogger({ service: "ingest", level: "silent" });
  const ingest = await startIngest(config, logger);
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
      await rm(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}

/** Promise wrapper over the generated grpc-js client, sending the write key as Basic auth. */
export class GrpcIngestClient {
  private readonly client: IngestServiceClient;

  constructor(target: string) {
    this.client = new IngestServiceClient(target, credentials.createInsecure());
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
