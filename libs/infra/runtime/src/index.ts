export { startServiceRuntime } from "./service-runtime.js";
export type { RuntimeConfig, RuntimeParts, ServiceParts, ServiceRuntime, ServiceRuntimeOptions } from "./service-runtime.js";
