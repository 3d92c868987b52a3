export { loadConsoleConfig, consoleEnvSchema, DEFAULT_HTTP_PORT, DEFAULT_OPS_PORT } from "./config.js";
export type { ConsoleConfig } from "./config.js";
export { startConsole } from "./service.js";
export type { ConsoleHandle } from "./service.js";
export { CSRF_HEADER } from "./http/console-server.js";
