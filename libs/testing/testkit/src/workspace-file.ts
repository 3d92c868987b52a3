import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface WorkspaceFile {
  /** The file's path, for SWITCHYARD_WORKSPACE_FILE. */
  path: string;
  /** Deletes the file and its temporary directory. */
  remove(): Promise<void>;
}

/** Writes `workspace` as JSON to workspace.json in a new temporary directory. */
export async function writeWorkspaceFile(workspace: unknown): Promise<WorkspaceFile> {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-ws-"));
  const path = join(dir, "workspace.json");
  await writeFile(path, JSON.stringify(workspace));
  return { path, remove: () => rm(dir, { recursive: true, force: true }) };
}
