import { applyOldGenerationFlags, runService } from "@switchyard/platform";
import { loadDeliveryConfig } from "./config.js";
import { startDelivery } from "./service.js";

applyOldGenerationFlags();

runService(
  "delivery",
  () => loadDeliveryConfig(),
  startDelivery,
  (config) => ({ host: config.HOST, port: config.DELIVERY_OPS_PORT }),
);
