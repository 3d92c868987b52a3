import cluster from "node:cluster";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { collectDefaultMetrics, Registry } from "prom-client";
import { Readiness, type ReadinessReport } from "./readiness.js";
import { answerSupervisor, supervisorOps } from "./worker-ops.js";

/**
 * The operations endpoint every service serves on its own port, apart from
 * its API ports so that probes and scrapers never queue behind API traffic
 * and the port can stay private (with SWITCHYARD_WORKERS > 1 the supervisor
 * serves it for all workers: worker-ops.ts):
 *   GET /healthz  200 while the process runs (liveness)
 *   GET /readyz   200 when connected to NATS with every needed stream present, else 503 with the reason (JSON)
 *   GET /metrics  Prometheus text format
 */
export interface OpsServer {
  readonly port: number;
  /** The service's metrics registry (with Node's default process metrics). */
  readonly registry: Registry;
  readonly readiness: Readiness;
  /** Reports unready, then closes the port. */
  stop(): Promise<void>;
}

/** What the ops endpoint answers with: this process's own state, or (supervisor) its workers'. */
interface OpsAnswers {
  readiness(): Promise<ReadinessReport>;
  metrics(): Promise<string>;
  contentType: string;
}

export interface OpsServerOptions {
  host: string;
  port: number;
  logger: Logger;
  /** SWITCHYARD_READINESS_GRACE_MS: see ReadinessOptions.graceMs. */
  readinessGraceMs?: number | undefined;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const readiness = new Readiness(options.readinessGraceMs === undefined ? {} : { graceMs: options.readinessGraceMs });

  if (cluster.isWorker) {
    // The supervisor serves the port and asks this worker (worker-ops.ts).
    const detach = answerSupervisor(registry, readiness);
    return {
      port: options.port,
      registry,
      readiness,
      stop: async () => {
        readiness.shutdown();
        detach();
      },
    };
  }

  const close = await listenOps(options, {
    readiness: () => readiness.check(),
    metrics: () => registry.metrics(),
    contentType: registry.contentType,
  });
  return {
    port: close.port,
    registry,
    readiness,
    stop: async () => {
      readiness.shutdown();
      await close.close();
    },
  };
}

/** The supervisor's ops endpoint under SWITCHYARD_WORKERS > 1: answers gathered from `workers` workers. */
export async function startSupervisorOpsServer(options: {
  host: string;
  port: number;
  workers: number;
  logger: Logger;
}): Promise<{ port: number; close(): Promise<void> }> {
  return listenOps(options, supervisorOps(options.workers));
}

async function listenOps(
  options: { host: string; port: number; logger: Logger },
  answers: OpsAnswers,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    route(request, response, answers).catch((error: unknown) => {
      options.logger.error({ err: error, path: request.url }, "ops endpoint failed");
      if (!response.headersSent) sendJson(response, 500, { status: "error", reason: "internal error" });
      else response.destroy();
    });
  });
  // A probe opens a fresh connection each time; do not keep idle ones around.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  options.logger.info({ opsPort: port }, "ops endpoint listening (/healthz, /readyz, /metrics)");
  return {
    port,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

async function route(request: IncomingMessage, response: ServerResponse, answers: OpsAnswers): Promise<void> {
  request.resume();
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.setHeader("Allow", "GET, HEAD");
    return sendJson(response, 405, { status: "error", reason: "only GET and HEAD are allowed" });
  }
  switch (request.url?.split("?")[0]) {
    case "/healthz":
      return sendJson(response, 200, { status: "ok" });
    case "/readyz": {
      const report = await answers.readiness();
      return sendJson(response, report.ready ? 200 : 503, { status: report.ready ? "ready" : "unready", ...report });
    }
    case "/metrics": {
      const text = await answers.metrics();
      response.writeHead(200, { "Content-Type": answers.contentType, "Content-Length": Buffer.byteLength(text) });
      response.end(text);
      return;
    }
    default:
      return sendJson(response, 404, { status: "error", reason: "no such endpoint; use /healthz, /readyz or /metrics" });
  }
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  response.end(text);
}

/**
 * Starts the ops server, then the service with it. The ops server comes first
 * so that liveness answers (and readiness says "starting") while the service
 * is still reaching NATS; it is closed again if the service fails to start.
 */
export async function withOpsServer<Handle>(options: OpsServerOptions, start: (ops: OpsServer) => Promise<Handle>): Promise<Handle> {
  const ops = await startOpsServer(options);
  try {
    return await start(ops);
  } catch (error) {
    await ops.stop();
    throw error;
  }
}
