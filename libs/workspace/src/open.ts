import type { JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import type { BusNames } from "@switchyard/bus";
import { applyWorkspaceFile, readWorkspaceFile } from "./apply-file.js";
import { openConfigBucket } from "./bucket.js";
import { WorkspaceView } from "./view.js";

/**
 * What every service does at start-up: open the configuration bucket, seed it
 * from the workspace file when one is given (idempotently), and follow it live.
 */
export async function openWorkspace(options: {
  js: JetStreamClient;
  names: BusNames;
  replicas: number;
  workspaceFile: string | undefined;
  logger: Logger;
}): Promise<{ kv: KV; workspace: WorkspaceView }> {
  const kv = await openConfigBucket(options.js, options.names, options.replicas);
  if (options.workspaceFile) {
    const applied = await applyWorkspaceFile(kv, await readWorkspaceFile(options.workspaceFile));
    options.logger.info({ written: applied.written.length, unchanged: applied.unchanged.length }, "workspace file applied");
  }
  return { kv, workspace: await WorkspaceView.open(kv, options.logger) };
}
