import { runService } from "@switchyard/platform";
import { loadAudienceSyncConfig } from "./config.js";
import { startAudienceSync } from "./service.js";

runService("audience-sync", () => loadAudienceSyncConfig(), startAudienceSync);
