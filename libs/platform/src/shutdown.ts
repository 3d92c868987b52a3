import type { Logger } from "pino";

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits 0 (1 if stopping failed).
 * A second signal while stopping exits at once.
 */
export function exitOnSignals(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal while stopping; exiting now");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, "stopping");
    stop().then(
      () => {
        logger.info("stopped");
        logger.flush();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, "failed to stop cleanly");
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
