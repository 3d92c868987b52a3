import { applyOldGenerationFlags, runService } from "@switchyard/platform";
import { loadIngestConfig } from "./config.js";
import { startIngest } from "./service.js";

applyOldGenerationFlags();

runService(
  "ingest",
  () => loadIngestConfig(),
  startIngest,
  (config) => ({ host: config.HOST, port: config.INGEST_OPS_PORT }),
);
