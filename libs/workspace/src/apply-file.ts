import { readFile } from "node:fs/promises";
import type { KV } from "@nats-io/kv";
import { ConfigError } from "@switchyard/platform";
import { hashWriteKey } from "./write-keys.js";
import { isMaxPayloadError } from "./bucket.js";
import { kvKeys } from "./kv-keys.js";
import { describeIssues, workspaceFileSchema, type SourceRecord, type WorkspaceFile } from "./schema.js";

/** Reads and checks the workspace file; a ConfigError names the file and every field that breaks a rule. */
export async function readWorkspaceFile(path: string): Promise<WorkspaceFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new ConfigError(`SWITCHYARD_WORKSPACE_FILE: cannot read ${path}`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`SWITCHYARD_WORKSPACE_FILE: ${path} is not valid JSON`, { cause: error });
  }
  const parsed = workspaceFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(`SWITCHYARD_WORKSPACE_FILE: ${path} is invalid:\n  ${describeIssues(parsed.error).join("\n  ")}`);
  }
  return parsed.data;
}

/** The KV records a workspace file stands for, keyed by KV key. */
export function workspaceRecords(file: WorkspaceFile): Map<string, unknown> {
  const records = new Map<string, unknown>();
  for (const source of file.sources) {
    const record: SourceRecord = {
      id: source.id,
      ...(source.name === undefined ? {} : { name: source.name }),
      writeKeyHashes: source.writeKeys.map((key) => (typeof key === "string" ? hashWriteKey(key) : key.hash)),
      ...(source.allowedOrigins === undefined ? {} : { allowedOrigins: source.allowedOrigins }),
      ...(source.blocked === undefined ? {} : { blocked: source.blocked }),
    };
    records.set(kvKeys.source(source.id), record);
  }
  for (const destination of file.destinations) records.set(kvKeys.destination(destination.id), destination);
  for (const connection of file.connections) records.set(kvKeys.connection(connection.sourceId, connection.destinationId), connection);
  return records;
}

/**
 * Seeds the bucket from a workspace file. Idempotent: records already holding
 * the same value are left alone, so every replica can apply the file at start-up.
 * Records that are not in the file are kept (the configuration API owns them).
 */
export async function applyWorkspaceFile(kv: KV, file: WorkspaceFile): Promise<{ written: string[]; unchanged: string[] }> {
  const written: string[] = [];
  const unchanged: string[] = [];
  for (const [key, record] of workspaceRecords(file)) {
    const value = JSON.stringify(record);
    const current = await kv.get(key);
    if (current && current.operation === "PUT" && current.string() === value) {
      unchanged.push(key);
      continue;
    }
    try {
      await kv.put(key, value);
    } catch (error) {
      // The schema keeps records below NATS's default max payload; a server set lower still gets a clear error.
      if (!isMaxPayloadError(error)) throw error;
      throw new ConfigError(`${key}: takes ${Buffer.byteLength(value)} bytes as stored, more than the bus's max payload`, { cause: error });
    }
    written.push(key);
  }
  return { written, unchanged };
}
