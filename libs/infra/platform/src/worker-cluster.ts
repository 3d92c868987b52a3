import cluster, { type Worker } from "node:cluster";
import type { Logger } from "pino";
import { startSupervisorOpsServer } from "./ops/ops-server.js";

/** A worker that dies sooner than this after its start counts as a crash loop and is restarted with back-off. */
const HEALTHY_UPTIME_MS = 10_000;
const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * The primary process of a service run with SWITCHYARD_WORKERS > 1.
 *
 * Why: JavaScript in one Node process runs on one core, and ingest's per-call
 * work (decoding, checking and re-encoding calls) is CPU-bound. node:cluster
 * lets `count` worker processes share the service's listening ports: the
 * primary accepts each connection and hands it to a worker, round-robin, so a
 * gRPC channel or HTTP keep-alive connection stays on one worker. Workers hold
 * no state that others need (the bus holds it), exactly like replicas.
 *
 * The primary runs no service code. It restarts a worker that dies (with
 * back-off when one keeps dying at start-up), passes SIGTERM/SIGINT on as
 * SIGTERM so every worker drains, and exits once all have exited: 0 when all
 * stopped cleanly, 1 otherwise. If the primary itself is killed, Node makes
 * the workers exit as soon as their IPC channel closes, so none is orphaned.
 */
export function superviseWorkers(options: { count: number; logger: Logger; ops?: { host: string; port: number } }): void {
  const { count, logger } = options;
  if (options.ops) {
    // Workers do not open the ops port; this process answers for all of them (ops/worker-ops.ts).
    startSupervisorOpsServer({ ...options.ops, workers: count, logger }).catch((error: unknown) => {
      logger.error({ err: error }, "cannot open the ops port; stopping");
      logger.flush();
      process.exit(1);
    });
  }
  let stopping = false;
  let failedStop = false;
  let restartDelayMs = FIRST_RESTART_DELAY_MS;
  const startedAt = new Map<Worker, number>();

  const fork = () => {
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
  };

  cluster.on("exit", (worker, code, signal) => {
    const uptimeMs = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    if (stopping) {
      if (code !== 0) failedStop = true;
      if (startedAt.size === 0) {
        logger.info({ failedStop }, "all workers stopped");
        logger.flush();
        process.exit(failedStop ? 1 : 0);
      }
      return;
    }
    restartDelayMs = uptimeMs >= HEALTHY_UPTIME_MS ? FIRST_RESTART_DELAY_MS : Math.min(restartDelayMs * 2, MAX_RESTART_DELAY_MS);
    logger.error({ pid: worker.process.pid, code, signal, restartInMs: restartDelayMs }, "worker died; restarting it");
    setTimeout(() => {
      if (!stopping) fork();
    }, restartDelayMs);
  });

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal while stopping; killing the workers now");
      for (const worker of startedAt.keys()) worker.process.kill("SIGKILL");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, workers: startedAt.size }, "stopping the workers");
    if (startedAt.size === 0) process.exit(0);
    for (const worker of startedAt.keys()) worker.process.kill("SIGTERM");
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  logger.info({ workers: count }, "starting workers");
  for (let i = 0; i < count; i++) fork();
}
