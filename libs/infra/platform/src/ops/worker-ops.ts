import cluster, { type Worker } from "node:cluster";
import { randomUUID } from "node:crypto";
import { AggregatorRegistry, type Registry } from "prom-client";
import type { Readiness, ReadinessReport } from "./readiness.js";

/**
 * The ops endpoint under SWITCHYARD_WORKERS > 1. Workers share the API ports,
 * but an ops port shared the same way would answer each scrape from whichever
 * worker got the connection: counters would jump between workers' values. So
 * the supervisor alone serves the ops port and asks every worker over IPC:
 * /metrics sums the workers' metrics (prom-client's AggregatorRegistry), and
 * /readyz is ready only when every expected worker runs and reports ready.
 */

const READY_REQUEST = "switchyard:readyz";
const READY_REPLY = "switchyard:readyz-reply";
/** A worker that does not answer in time counts as unready (it may be stuck or starting). */
const WORKER_ANSWER_TIMEOUT_MS = 3_000;

interface ReadyRequest {
  type: typeof READY_REQUEST;
  id: string;
}
interface ReadyReply {
  type: typeof READY_REPLY;
  id: string;
  report: ReadinessReport;
}

/** In a worker: serve the supervisor's metric and readiness requests. Returns a function that stops answering readiness. */
export function answerSupervisor(registry: Registry, readiness: Readiness): () => void {
  new AggregatorRegistry(); // installs prom-client's worker-side listener
  AggregatorRegistry.setRegistries([registry]);
  const onMessage = (message: unknown) => {
    if (!isMessage<ReadyRequest>(message, READY_REQUEST)) return;
    void readiness.check().then((report) => process.send?.({ type: READY_REPLY, id: message.id, report } satisfies ReadyReply));
  };
  process.on("message", onMessage);
  return () => process.off("message", onMessage);
}

/** In the supervisor: the ops answers, gathered from the workers. */
export function supervisorOps(expectedWorkers: number): {
  readiness(): Promise<ReadinessReport>;
  metrics(): Promise<string>;
  contentType: string;
} {
  const aggregator = new AggregatorRegistry();
  return {
    contentType: aggregator.contentType,
    metrics: () => aggregator.clusterMetrics(),
    readiness: async () => {
      const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker?.isConnected() === true);
      const checks = await Promise.all(
        workers.map(async (worker) => {
          const report = await askWorker(worker);
          return { name: `worker ${worker.process.pid}`, ok: report.ready, ...(report.reason ? { reason: report.reason } : {}) };
        }),
      );
      if (workers.length < expectedWorkers) {
        checks.unshift({ name: "workers", ok: false, reason: `${workers.length} of ${expectedWorkers} running` });
      }
      const failed = checks.find((check) => !check.ok);
      return failed ? { ready: false, reason: `${failed.name}: ${failed.reason ?? "unready"}`, checks } : { ready: true, checks };
    },
  };
}

function askWorker(worker: Worker): Promise<ReadinessReport> {
  const id = randomUUID();
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish({ ready: false, reason: "did not answer", checks: [] }), WORKER_ANSWER_TIMEOUT_MS);
    const onMessage = (message: unknown) => {
      if (isMessage<ReadyReply>(message, READY_REPLY) && message.id === id) finish(message.report);
    };
    const finish = (report: ReadinessReport) => {
      clearTimeout(timer);
      worker.off("message", onMessage);
      resolve(report);
    };
    worker.on("message", onMessage);
    worker.send({ type: READY_REQUEST, id } satisfies ReadyRequest);
  });
}

function isMessage<T extends { type: string }>(message: unknown, type: T["type"]): message is T {
  return typeof message === "object" && message !== null && (message as { type?: unknown }).type === type;
}
