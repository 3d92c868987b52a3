import { runService } from "@switchyard/platform";
import { loadConsoleConfig } from "./config.js";
import { startConsole } from "./service.js";

runService(
  "console",
  () => loadConsoleConfig(),
  startConsole,
  (config) => ({ host: config.HOST, port: config.CONSOLE_OPS_PORT }),
);
