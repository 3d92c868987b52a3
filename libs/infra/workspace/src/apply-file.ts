import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { KV, KvEntry } from "@nats-io/kv";
import type { Logger } from "pino";
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

/** Who owns the configuration (SWITCHYARD_CONFIG_SOURCE). */
export type ConfigSource = "api" | "file";

/** What applying a workspace file did, by KV key. */
export interface AppliedWorkspace {
  written: string[];
  unchanged: string[];
  /** Records kept as they are because they were changed or deleted through the API ("api" mode). */
  kept?: string[];
  /** Records the file does not hold, removed ("file" mode). */
  deleted?: string[];
}

/** The record kinds a workspace file holds; in "file" mode, every record of these kinds is the file's. */
const FILE_KINDS = ["source", "destination", "connection"] as const;

/** Tries of one record when another replica writes it at the same moment; each lost race reads again. */
const MAX_TRIES = 5;

/**
 * Applies a workspace file at start-up, as `source` says:
 *
 * - "api": the file seeds. Next to each record it stores a mark, the SHA-256 of what it last
 *   wrote (kvKeys.seeded). A missing record without a mark is created; a record still holding
 *   what the file last wrote follows the file; a record changed or deleted through the API since
 *   (its digest no longer the mark) is kept as it is.
 * - "file": the file is the whole truth: its records are written and every other source,
 *   destination and connection is deleted.
 *
 * Writes are create or compare-and-set, so replicas applying the same file at once store each
 * record once and lose no write made meanwhile.
 */
export async function applyWorkspaceFile(
  kv: KV,
  file: WorkspaceFile,
  options: { source?: ConfigSource; logger?: Logger } = {},
): Promise<AppliedWorkspace> {
  const source = options.source ?? "api";
  const applied: Required<AppliedWorkspace> = { written: [], unchanged: [], kept: [], deleted: [] };
  const records = workspaceRecords(file);
  for (const [key, record] of records) {
    const outcome = await applyRecord(kv, key, JSON.stringify(record), source);
    if (outcome === "kept" || outcome === "kept deleted") {
      const what = outcome === "kept" ? "changed" : "deleted";
      options.logger?.info({ key }, `${outcome} ${key}: ${what} through the API since the file seeded it`);
      applied.kept.push(key);
    } else {
      applied[outcome].push(key);
    }
  }
  if (source === "file") {
    for (const kind of FILE_KINDS) {
      for await (const key of await kv.keys(`${kind}.>`)) {
        if (records.has(key)) continue;
        const entry = await kv.get(key);
        if (!entry || entry.operation !== "PUT") continue;
        await kv.delete(key);
        await kv.delete(kvKeys.seeded(key));
        applied.deleted.push(key);
      }
    }
  }
  return {
    written: applied.written,
    unchanged: applied.unchanged,
    ...(applied.kept.length > 0 ? { kept: applied.kept } : {}),
    ...(applied.deleted.length > 0 ? { deleted: applied.deleted } : {}),
  };
}

/**
 * Stores a workspace's records as the configuration API's ApplyWorkspace does: each record
 * that differs is overwritten, nothing else is touched, and no mark is set, so the workspace
 * file counts them as changed through the API.
 */
export async function putWorkspaceRecords(kv: KV, file: WorkspaceFile): Promise<{ written: string[]; unchanged: string[] }> {
  const written: string[] = [];
  const unchanged: string[] = [];
  for (const [key, record] of workspaceRecords(file)) {
    const value = JSON.stringify(record);
    const current = await kv.get(key);
    if (current && current.operation === "PUT" && current.string() === value) {
      unchanged.push(key);
      continue;
    }
    await storing(key, value, () => kv.put(key, value));
    written.push(key);
  }
  return { written, unchanged };
}

async function applyRecord(
  kv: KV,
  key: string,
  value: string,
  source: ConfigSource,
): Promise<"written" | "unchanged" | "kept" | "kept deleted"> {
  const digest = sha256(value);
  const markKey = kvKeys.seeded(key);
  for (let tries = 1; ; tries++) {
    const current = await kv.get(key);
    const mark = await kv.get(markKey);
    const markValue = mark && mark.operation === "PUT" ? mark.string() : undefined;
    const present = current !== null && current.operation === "PUT";
    try {
      if (present && current.string() === value) {
        if (markValue !== digest) await putMark(kv, markKey, digest, mark);
        return "unchanged";
      }
      if (source === "api") {
        // A mark without a record: deleted through the API. A record not holding what the file last wrote: changed through it.
        if (markValue !== undefined && !present) return "kept deleted";
        if (present && (markValue === undefined || sha256(current.string()) !== markValue)) return "kept";
      }
      await storing(key, value, () => (present ? kv.update(key, value, current.revision) : kv.create(key, value)));
      await putMark(kv, markKey, digest, mark);
      return "written";
    } catch (error) {
      // Another replica wrote the record between the read and the write: read it again.
      if (tries >= MAX_TRIES || !isWrongLastSequence(error)) throw error;
    }
  }
}

/** Writes a mark; a replica that wrote the same mark first leaves nothing to do. */
async function putMark(kv: KV, markKey: string, digest: string, previous: KvEntry | null): Promise<void> {
  try {
    if (previous && previous.operation === "PUT") await kv.update(markKey, digest, previous.revision);
    else await kv.create(markKey, digest);
  } catch (error) {
    if (!isWrongLastSequence(error)) throw error;
    const now = await kv.get(markKey);
    if (!now || now.operation !== "PUT" || now.string() !== digest) throw error;
  }
}

async function storing(key: string, value: string, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    // The schema keeps records below NATS's default max payload; a server set lower still gets a clear error.
    if (!isMaxPayloadError(error)) throw error;
    throw new ConfigError(`${key}: takes ${Buffer.byteLength(value)} bytes as stored, more than the bus's max payload`, { cause: error });
  }
}

/** Whether a create or compare-and-set lost to a write made since the read. */
function isWrongLastSequence(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (current.name === "JetStreamApiError" && (code === 10071 || code === 10164)) return true;
    if (/wrong last sequence/i.test(current.message)) return true;
  }
  return false;
}

function sha256(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}
