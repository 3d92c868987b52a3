import type { Logger } from "pino";

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits 0 (1 if stopping failed).
 *
 * A second signal while stopping exits at once (a second Ctrl-C means "now"),
 * unless `repeatsExit` is false: a cluster worker can get the same stop request
 * twice, from a signal sent to the whole process group (Ctrl-C, systemd) and
 * from its primary passing it on, and must not cut its drain short for that.
 */
export function exitOnSignals(stop: () => Promise<void>, logger: Logger, options: { repeatsExit?: boolean } = {}): void {
  const { repeatsExit = true } = options;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (!repeatsExit) return;
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
