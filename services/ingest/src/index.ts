export { loadIngestConfig, ingestEnvSchema } from "./config.js";
export type { IngestConfig } from "./config.js";
export { startIngest } from "./service.js";
export type { IngestHandle } from "./service.js";
