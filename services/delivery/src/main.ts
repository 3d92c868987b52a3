import { runService } from "@switchyard/platform";
import { applyDeliveryV8Flags, loadDeliveryConfig } from "./config.js";
import { startDelivery } from "./service.js";

applyDeliveryV8Flags();

runService(
  "delivery",
  () => loadDeliveryConfig(),
  startDelivery,
  (config) => ({ host: config.HOST, port: config.DELIVERY_OPS_PORT }),
);
