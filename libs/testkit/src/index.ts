export { readCallBatches, uniqueNamespace } from "./bus.js";
export type { StoredBatch } from "./bus.js";
export { freePort } from "./free-port.js";
export { NatsServer } from "./nats-server.js";
export { ServiceProcess } from "./service-process.js";
export type { NatsServerOptions } from "./nats-server.js";
export { waitFor } from "./wait-for.js";
export { WebhookReceiver } from "./webhook-receiver.js";
export type { ReceivedRequest, Responder, ResponsePlan } from "./webhook-receiver.js";
