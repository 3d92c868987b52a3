import { createLogger, exitOnSignals, isConfigError } from "@switchyard/platform";
import { loadIngestConfig } from "./config.js";
import { startIngest } from "./service.js";

async function main(): Promise<void> {
  const config = loadIngestConfig();
  const logger = createLogger({ service: "ingest", level: config.LOG_LEVEL });
  const ingest = await startIngest(config, logger);
  exitOnSignals(() => ingest.stop(), logger);
}

main().catch((error: unknown) => {
  // Config errors name the variable; print them plainly, without a stack.
  console.error(isConfigError(error) ? error.message : error);
  process.exit(1);
});
