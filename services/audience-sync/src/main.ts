import { runService } from "@switchyard/platform";
import { loadAudienceSyncConfig } from "./config.js";
import { startAudienceSync } from "./service.js";

runService(
  "audience-sync",
  () => loadAudienceSyncConfig(),
  startAudienceSync,
  (config) => ({
    host: config.HOST,
    port: config.AUDIENCE_OPS_PORT,
  }),
);
