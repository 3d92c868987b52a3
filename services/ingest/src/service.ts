import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { BatchPublisher, busNames, ensureCallsStream } from "@switchyard/bus";
import { connectBus, kvStream, loadServerTls, startGrpcServer, withOpsServer, type Logger, type OpsServer } from "@switchyard/platform";
import { openWorkspace } from "@switchyard/workspace";
import { CallAcceptor } from "./acceptor.js";
import { httpLimitsOf, rateLimitOf, type IngestConfig } from "./config.js";
import { ingestServiceDefinition } from "./grpc-definition.js";
import { ingestGrpcService } from "./grpc-service.js";
import { createHttpApi } from "./http-api.js";
import { IngestMetrics } from "./metrics.js";
import { IngestRateLimiter } from "./rate-limit.js";

export interface IngestHandle {
  readonly grpcPort: number;
  readonly httpPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  /** Stops accepting, finishes in-flight publishes, drains NATS. */
  stop(): Promise<void>;
}

/** Starts the ingest service: connects to NATS, prepares stream and config, opens both front doors. */
export async function startIngest(config: IngestConfig, logger: Logger): Promise<IngestHandle> {
  // Read first: a bad certificate setting stops start-up before anything else happens.
  const tls = await loadServerTls(config);
  return withOpsServer({ host: config.HOST, port: config.INGEST_OPS_PORT, logger }, (ops) => startWithOps(config, logger, ops, tls));
}

async function startWithOps(
  config: IngestConfig,
  logger: Logger,
  ops: OpsServer,
  tls: Awaited<ReturnType<typeof loadServerTls>>,
): Promise<IngestHandle> {
  const names = busNames(config.SWITCHYARD_NAMESPACE);
  const metrics = new IngestMetrics(ops.registry);
  const bus = await connectBus({ servers: config.NATS_URL, name: "switchyard-ingest", logger });
  const jsm = await jetstreamManager(bus.nc);
  await ensureCallsStream(jsm, names, {
    duplicateWindowMs: config.SWITCHYARD_DUPLICATE_WINDOW_MS,
    maxAgeMs: config.SWITCHYARD_CALLS_MAX_AGE_MS,
    replicas: config.SWITCHYARD_STREAM_REPLICAS,
  });
  const js = jetstream(bus.nc);
  const { workspace } = await openWorkspace({
    js,
    names,
    replicas: config.SWITCHYARD_STREAM_REPLICAS,
    workspaceFile: config.SWITCHYARD_WORKSPACE_FILE,
    logger,
  });

  const publisher = new BatchPublisher({ bus, js, names, timeoutMs: config.INGEST_PUBLISH_TIMEOUT_MS, metrics });
  const rateLimit = rateLimitOf(config);
  const acceptor = new CallAcceptor(publisher, metrics, logger, rateLimit ? new IngestRateLimiter(rateLimit) : undefined);
  const grpc = await startGrpcServer({
    host: config.HOST,
    port: config.INGEST_GRPC_PORT,
    logger,
    tls,
    services: [
      {
        name: "switchyard.v1.IngestService",
        definition: ingestServiceDefinition,
        implementation: ingestGrpcService({ workspace, acceptor, metrics, logger }),
      },
    ],
  });
  const http = createHttpApi(
    { workspace, acceptor, metrics, logger, ...(config.INGEST_PUBLIC_URL === undefined ? {} : { publicUrl: config.INGEST_PUBLIC_URL }) },
    httpLimitsOf(config),
    tls,
  );
  const httpPort = await listen(http, config.HOST, config.INGEST_HTTP_PORT);
  ops.readiness.onChange((ready) => grpc.setServing(ready));
  await ops.readiness.watch({ bus, streams: [names.callsStream, kvStream(names.configBucket)] });
  logger.info({ grpcPort: grpc.port, httpPort, opsPort: ops.port, namespace: names.namespace, tls: tls !== undefined }, "ingest ready");

  return {
    grpcPort: grpc.port,
    httpPort,
    opsPort: ops.port,
    stop: async () => {
      ops.readiness.shutdown();
      const httpClosed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeIdleConnections();
      await Promise.all([grpc.shutdown(config.SHUTDOWN_GRACE_MS), httpClosed]);
      await publisher.idle();
      workspace.close();
      await bus.drain();
      await ops.stop();
    },
  };
}

async function listen(server: HttpServer, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
