import { readdirSync } from "node:fs";
import { setPriority } from "node:os";
import { runService, type Logger } from "@switchyard/platform";
import { loadInsightsConfig, type InsightsConfig } from "./config.js";
import { startInsights } from "./service.js";

/**
 * Lowers this process's priority (INSIGHTS_NICE): counting can wait, so on a busy machine the
 * CPU goes to ingest and delivery first and insights catches up when there is some to spare.
 * On Linux a niceness belongs to each thread, and V8's helper threads (garbage collection,
 * compiling) already run when this is called, so every thread is changed; threads started later
 * take the niceness of the one that starts them.
 */
function lowerPriority(config: InsightsConfig, logger: Logger): void {
  if (config.INSIGHTS_NICE === 0) return;
  let threads: number[] = [0];
  try {
    threads = readdirSync("/proc/self/task").map(Number);
  } catch {
    // No /proc (not Linux): the niceness applies to the whole process.
  }
  try {
    for (const thread of threads) setPriority(thread, config.INSIGHTS_NICE);
  } catch (error) {
    // Raising the priority (a negative niceness) needs privileges; running at the usual one is fine.
    logger.warn(
      { err: error, nice: config.INSIGHTS_NICE },
      "could not change the process priority (INSIGHTS_NICE); running at the one it has",
    );
  }
}

runService(
  "insights",
  () => loadInsightsConfig(),
  (config, logger) => {
    lowerPriority(config, logger);
    return startInsights(config, logger);
  },
  (config) => ({ host: config.HOST, port: config.INSIGHTS_OPS_PORT }),
);
