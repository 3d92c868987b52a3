export { insightsEnvSchema, loadInsightsConfig } from "./config.js";
export type { InsightsConfig } from "./config.js";
export { startInsights, USAGE_MAX_AGE_MS } from "./service.js";
export type { InsightsHandle } from "./service.js";
