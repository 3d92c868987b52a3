import { isConfigError } from "./errors.js";
import { createLogger, type Logger } from "./logger.js";
import { exitOnSignals } from "./shutdown.js";

/**
 * The main() of every service: parse the environment, create the logger,
 * start, and stop cleanly on SIGTERM/SIGINT. A bad setting exits 1 with the
 * message naming the variable.
 */
export function runService<Config extends { LOG_LEVEL: string }>(
  service: string,
  loadConfig: () => Config,
  start: (config: Config, logger: Logger) => Promise<{ stop(): Promise<void> }>,
): void {
  const main = async () => {
    const config = loadConfig();
    const logger = createLogger({ service, level: config.LOG_LEVEL });
    const handle = await start(config, logger);
    exitOnSignals(() => handle.stop(), logger);
  };
  main().catch((error: unknown) => {
    // Config errors name the variable; print them plainly, without a stack.
    console.error(isConfigError(error) ? error.message : error);
    process.exit(1);
  });
}
