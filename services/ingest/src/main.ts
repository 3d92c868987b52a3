import { runService } from "@switchyard/platform";
import { loadIngestConfig } from "./config.js";
import { startIngest } from "./service.js";

runService(
  "ingest",
  () => loadIngestConfig(),
  startIngest,
  (config) => ({ host: config.HOST, port: config.INGEST_OPS_PORT }),
);
