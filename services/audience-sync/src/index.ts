export { audienceSyncEnvSchema, loadAudienceSyncConfig } from "./config.js";
export type { AudienceSyncConfig } from "./config.js";
export { startAudienceSync } from "./service.js";
export type { AudienceSyncHandle } from "./service.js";
export { snakeCase } from "./snake-case.js";
