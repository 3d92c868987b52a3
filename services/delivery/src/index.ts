export { deliveryEnvSchema, loadDeliveryConfig } from "./config.js";
export type { DeliveryConfig } from "./config.js";
export { startDelivery } from "./service.js";
export type { DeliveryHandle } from "./service.js";
export { webhookBody } from "@switchyard/wire";
export { webhookSignature } from "./outbound/signature.js";
