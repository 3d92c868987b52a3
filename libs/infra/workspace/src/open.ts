import type { JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import type { BusNames } from "@switchyard/bus";
import { ConfigError } from "@switchyard/platform";
import { applyWorkspaceFile, readWorkspaceFile, type ConfigSource } from "./apply-file.js";
import { openConfigBucket } from "./bucket.js";
import { WorkspaceView } from "./view.js";

/**
 * What every service does at start-up: open the configuration bucket, apply the workspace file
 * when one is given (seeding it, or as the whole truth with `configSource` "file"; see
 * applyWorkspaceFile), and follow it live.
 */
export async function openWorkspace(options: {
  js: JetStreamClient;
  names: BusNames;
  replicas: number;
  workspaceFile: string | undefined;
  configSource?: ConfigSource | undefined;
  logger: Logger;
}): Promise<{ kv: KV; workspace: WorkspaceView }> {
  const source = options.configSource ?? "api";
  checkConfigSource(source, options.workspaceFile);
  const kv = await openConfigBucket(options.js, options.names, options.replicas);
  if (options.workspaceFile) {
    const file = await readWorkspaceFile(options.workspaceFile);
    const applied = await applyWorkspaceFile(kv, file, { source, logger: options.logger });
    options.logger.info(
      {
        configSource: source,
        written: applied.written.length,
        unchanged: applied.unchanged.length,
        kept: applied.kept?.length ?? 0,
        deleted: applied.deleted?.length ?? 0,
      },
      "workspace file applied",
    );
  }
  return { kv, workspace: await WorkspaceView.open(kv, options.logger) };
}

/** "file" mode needs a file: without one every service would start with nothing to own. */
export function checkConfigSource(source: ConfigSource, workspaceFile: string | undefined): void {
  if (source === "file" && !workspaceFile)
    throw new ConfigError("SWITCHYARD_CONFIG_SOURCE=file needs SWITCHYARD_WORKSPACE_FILE: the workspace file is the source of truth");
}
