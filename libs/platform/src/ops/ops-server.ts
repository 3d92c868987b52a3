import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { collectDefaultMetrics, Registry } from "prom-client";
import { Readiness } from "./readiness.js";

/**
 * The operations endpoint every service serves on its own port, apart from
 * its API ports so that probes and scrapers never queue behind API traffic
 * and the port can stay private:
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

export async function startOpsServer(options: { host: string; port: number; logger: Logger }): Promise<OpsServer> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const readiness = new Readiness();

  const server = createServer((request, response) => {
    route(request, response, registry, readiness).catch((error: unknown) => {
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
    registry,
    readiness,
    stop: async () => {
      readiness.shutdown();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

async function route(request: IncomingMessage, response: ServerResponse, registry: Registry, readiness: Readiness): Promise<void> {
  request.resume();
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.setHeader("Allow", "GET, HEAD");
    return sendJson(response, 405, { status: "error", reason: "only GET and HEAD are allowed" });
  }
  switch (request.url?.split("?")[0]) {
    case "/healthz":
      return sendJson(response, 200, { status: "ok" });
    case "/readyz": {
      const report = await readiness.check();
      return sendJson(response, report.ready ? 200 : 503, { status: report.ready ? "ready" : "unready", ...report });
    }
    case "/metrics": {
      const text = await registry.metrics();
      response.writeHead(200, { "Content-Type": registry.contentType, "Content-Length": Buffer.byteLength(text) });
      response.end(request.method === "HEAD" ? undefined : text);
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
export async function withOpsServer<Handle>(
  options: { host: string; port: number; logger: Logger },
  start: (ops: OpsServer) => Promise<Handle>,
): Promise<Handle> {
  const ops = await startOpsServer(options);
  try {
    return await start(ops);
  } catch (error) {
    await ops.stop();
    throw error;
  }
}
