import cluster from "node:cluster";
import { createLogger, type Logger } from "./logger.js";
import { exitOnSignals } from "./shutdown.js";
import { startupErrorLine } from "./startup-errors.js";
import { superviseWorkers } from "./worker-cluster.js";

/**
 * The main() of every service: parse the environment, create the logger,
 * start, and stop cleanly on SIGTERM/SIGINT. A bad setting, a port in use or a
 * NATS server without JetStream exits 1 with one line naming what to change.
 *
 * With SWITCHYARD_WORKERS > 1 this process only supervises that many workers
 * (worker-cluster.ts), each of which runs `start` on the shared ports; it
 * serves the ops endpoint at `opsAddress` for all of them.
 */
export function runService<Config extends { LOG_LEVEL: string; SWITCHYARD_WORKERS: number }>(
  service: string,
  loadConfig: () => Config,
  start: (config: Config, logger: Logger) => Promise<{ stop(): Promise<void> }>,
  opsAddress?: (config: Config) => { host: string; port: number },
): void {
  let loaded: Config | undefined;
  const main = async () => {
    const config = loadConfig();
    loaded = config;
    const logger = createLogger({ service, level: config.LOG_LEVEL });
    if (config.SWITCHYARD_WORKERS > 1 && cluster.isPrimary) {
      superviseWorkers({ count: config.SWITCHYARD_WORKERS, logger, ...(opsAddress ? { ops: opsAddress(config) } : {}) });
      return;
    }
    const handle = await start(config, logger);
    exitOnSignals(() => handle.stop(), logger, { repeatsExit: cluster.isPrimary });
  };
  main().catch((error: unknown) => {
    // Errors an operator fixes with a setting are one plain line, without a stack.
    console.error(startupErrorLine(service, error, loaded as Record<string, unknown> | undefined) ?? error);
    process.exit(1);
  });
}
