import { runService } from "@switchyard/platform";
import { loadDeliveryConfig } from "./config.js";
import { startDelivery } from "./service.js";

runService("delivery", () => loadDeliveryConfig(), startDelivery);
