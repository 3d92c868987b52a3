import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { BatchPublisher, ensureIntakeStreams } from "@switchyard/bus";
import type { Logger } from "@switchyard/platform";
import { startServiceRuntime } from "@switchyard/runtime";
import { CallAcceptor } from "./acceptor.js";
import { httpLimitsOf, rateLimitOf, type IngestConfig } from "./config.js";
import { ingestServiceDefinition } from "./grpc-definition.js";
import { ingestGrpcService } from "./grpc-service.js";
import { createHttpApi } from "./http-api.js";
import { IngestMetrics } from "./metrics.js";
import { IngestRateLimiter } from "./rate-limit.js";
import { RejectedCallsReporter } from "./rejected-reports.js";

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
  const runtime = await startServiceRuntime({
    name: "ingest",
    config,
    logger,
    ports: { grpc: config.INGEST_GRPC_PORT, ops: config.INGEST_OPS_PORT },
    // Blocked calls and usage reports have streams of their own, ready before the first request.
    ensureStreams: (jsm, names) =>
      ensureIntakeStreams(jsm, names, {
        duplicateWindowMs: config.SWITCHYARD_DUPLICATE_WINDOW_MS,
        maxAgeMs: config.SWITCHYARD_CALLS_MAX_AGE_MS,
        replicas: config.SWITCHYARD_STREAM_REPLICAS,
      }),
    start: async ({ ops, bus, js, names, workspace, tls }) => {
      const metrics = new IngestMetrics(ops.registry);
      const timeoutMs = config.INGEST_PUBLISH_TIMEOUT_MS;
      const publisher = new BatchPublisher({ bus, js, names, timeoutMs, metrics });
      const reporter = new RejectedCallsReporter({ bus, js, names, logger, metrics, timeoutMs });
      const rateLimit = rateLimitOf(config);
      const acceptor = new CallAcceptor(publisher, metrics, logger, rateLimit ? new IngestRateLimiter(rateLimit) : undefined, reporter);
      const http = createHttpApi(
        {
          workspace,
          acceptor,
          metrics,
          logger,
          ...(config.INGEST_PUBLIC_URL === undefined ? {} : { publicUrl: config.INGEST_PUBLIC_URL }),
        },
        httpLimitsOf(config),
        tls,
      );
      const httpPort = await listen(http, config.HOST, config.INGEST_HTTP_PORT);
      return {
        grpc: [
          {
            name: "switchyard.v1.IngestService",
            definition: ingestServiceDefinition,
            implementation: ingestGrpcService({ workspace, acceptor, metrics }),
            // Write keys are checked by the handlers; the service counts its own refusals, and its hot path carries nothing more.
            auth: "handler",
            metrics: false,
          },
        ],
        readiness: { streams: [names.filteredStream, names.usageStream] },
        readyLog: { httpPort, tls: tls !== undefined },
        stopAccepting: () => {
          const closed = new Promise<void>((resolve) => http.close(() => resolve()));
          http.closeIdleConnections();
          return closed;
        },
        finish: async () => {
          await Promise.all([publisher.idle(), reporter.idle()]);
        },
        own: { httpPort },
      };
    },
  });
  return {
    grpcPort: runtime.grpcPort,
    httpPort: runtime.own.httpPort,
    opsPort: runtime.opsPort,
    stop: () => runtime.stop(),
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
