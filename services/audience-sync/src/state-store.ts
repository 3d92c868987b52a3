import { createHash, randomBytes } from "node:crypto";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { ObjectStore } from "@nats-io/obj";
import { ServiceError } from "@switchyard/platform";
import type { CommittedStateCache } from "./committed-state-cache.js";

export type SyncKind = "audience" | "trait";

/** What is remembered about one audience or trait besides its members. */
export interface StateMeta {
  /** Object holding the current state blob ("" before the first sync). */
  object: string;
  total: number;
  /** The latest sync ids applied, newest last, so a repeated sync is recognised. */
  recentSyncIds: string[];
  updatedAt: string;
  /** The name the last sync gave (absent in records stored before it was kept). */
  name?: string;
  /** The last applied sync: how it came and what it emitted (absent in records stored before it was kept). */
  lastSync?: { mode: SyncMode; emitted: number };
}

export type SyncMode = "snapshot" | "increment";

/** One stored audience or trait, as ListAudiences shows it. */
export interface StoredAudience {
  kind: SyncKind;
  sourceId: string;
  meta: StateMeta;
}

export interface LoadedState {
  meta: StateMeta | undefined;
  revision: number;
  blob: Buffer | undefined;
}

const RECENT_SYNC_IDS = 100;
/**
 * State objects are stored in chunks of up to 1 MiB (NATS's default maximum
 * payload; the object store lowers it to the server's): each chunk is one
 * acknowledged publish, and the default 128 KiB takes eight times as many.
 */
const OBJECT_CHUNK_BYTES = 1024 * 1024;

/**
 * Audience and trait state in JetStream: the member blob in an object store
 * (one object per applied sync), and a small KV record pointing at the
 * current object. The record is replaced with compare-and-set, so two syncs
 * of the same audience at the same time cannot both win.
 */
export class StateStore {
  private readonly background = new Set<Promise<void>>();

  constructor(
    private readonly metaKv: KV,
    private readonly objects: ObjectStore,
    private readonly committed: CommittedStateCache,
  ) {}

  /**
   * The current state. `prefetched` (loaded earlier, say while a snapshot
   * streamed in) is taken as it is when the record has not changed since.
   */
  async load(kind: SyncKind, sourceId: string, trait: string, prefetched?: LoadedState): Promise<LoadedState> {
    const key = metaKey(kind, sourceId, trait);
    const entry = await this.metaKv.get(key);
    if (!entry || entry.operation !== "PUT") return { meta: undefined, revision: 0, blob: undefined };
    if (prefetched && prefetched.revision === entry.revision) return prefetched;
    const meta = entry.json<StateMeta>();
    if (!meta.object) return { meta, revision: entry.revision, blob: undefined };
    const blob = this.committed.get(key, entry.revision, meta.object) ?? (await this.read(meta.object));
    if (!blob) throw new Error(`audience state object ${meta.object} is missing`);
    return { meta, revision: entry.revision, blob };
  }

  /**
   * Writes a new state as an object of its own, not yet current; returns the
   * object's name for commit() or discard(). Every attempt gets a name of its
   * own, even a repeat of the same sync running at the same time (a client
   * retrying on another instance): the loser of the two commits then removes
   * only its own object, never the one the winner made current.
   */
  async stage(kind: SyncKind, sourceId: string, trait: string, syncId: string, blob: Buffer): Promise<string> {
    const object = `${metaKey(kind, sourceId, trait)}.${digest(syncId)}.${randomBytes(6).toString("hex")}`;
    await this.objects.putBlob({ name: object, options: { max_chunk_size: OBJECT_CHUNK_BYTES } }, blob);
    return object;
  }

  /**
   * Makes a staged state current, unless another sync changed the state since
   * `previous` was loaded. `blob` is the staged object's content, kept in
   * memory for the next sync (it must not change afterwards).
   */
  async commit(
    kind: SyncKind,
    sourceId: string,
    trait: string,
    previous: LoadedState,
    syncId: string,
    staged: { object: string; blob: Buffer; total: number },
    summary?: { name: string; mode: SyncMode; emitted: number },
  ): Promise<void> {
    const { object, total } = staged;
    const key = metaKey(kind, sourceId, trait);
    const meta: StateMeta = {
      object,
      total,
      recentSyncIds: [...(previous.meta?.recentSyncIds ?? []), syncId].slice(-RECENT_SYNC_IDS),
      updatedAt: new Date().toISOString(),
      ...(summary ? { name: summary.name, lastSync: { mode: summary.mode, emitted: summary.emitted } } : {}),
    };
    let revision: number;
    try {
      revision =
        previous.revision === 0
          ? await this.metaKv.create(key, JSON.stringify(meta))
          : await this.metaKv.update(key, JSON.stringify(meta), previous.revision);
    } catch (error) {
      if (isRevisionConflict(error)) {
        await this.discard(object);
        throw new ServiceError("FAILED_PRECONDITION", "another sync of this audience finished first; retry this sync", { cause: error });
      }
      // No answer (say the connection dropped): the record may have changed all the same.
      const current = await this.metaKv.get(key).catch(() => undefined);
      if (current?.operation !== "PUT" || current.json<StateMeta>().object !== object) {
        // Not known to be current, so the object stays: discarding one the record points at
        // would lose the audience's state, while an unused one costs only its space.
        throw new ServiceError("UNAVAILABLE", "the new audience state could not be made current; retry this sync", { cause: error });
      }
      revision = current.revision;
    }
    this.committed.set(key, revision, object, staged.blob);
    // The replaced object is removed in the background: the sync is complete without waiting for it.
    if (previous.meta?.object && previous.meta.object !== object) this.inBackground(this.discard(previous.meta.object));
  }

  /**
   * Every stored audience and trait (of one source, when given): the records only, never the
   * member lists, so listing stays cheap however large the audiences are.
   */
  async list(sourceId?: string): Promise<StoredAudience[]> {
    const found: StoredAudience[] = [];
    for (const kind of ["audience", "trait"] as const) {
      const keys = await this.metaKv.keys(sourceId === undefined ? `${kind}.>` : `${kind}.${sourceId}.*`);
      for await (const key of keys) {
        const entry = await this.metaKv.get(key);
        if (!entry || entry.operation !== "PUT") continue;
        // The key is <kind>.<sourceId>.<digest>; source ids hold no dots (their rule is letters, digits, - and _).
        found.push({ kind, sourceId: key.slice(kind.length + 1, key.lastIndexOf(".")), meta: entry.json<StateMeta>() });
      }
    }
    return found;
  }

  /** Resolves once the removals still running in the background are done (call before closing the connection). */
  async settled(): Promise<void> {
    await Promise.all(this.background);
  }

  private inBackground(work: Promise<void>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  /** Removes an object that is not (or no longer) current. Failures are ignored: at worst an unused object stays behind. */
  async discard(object: string): Promise<void> {
    await this.objects.delete(object).catch(() => undefined);
  }

  /**
   * Reads an object whole into one buffer of its recorded size, chunk by
   * chunk (getBlob would gather the chunks and then copy them into a second
   * buffer of the same size). Its digest is checked as it is read.
   */
  private async read(name: string): Promise<Buffer | undefined> {
    const object = await this.objects.get(name);
    if (!object) return undefined;
    const blob = Buffer.allocUnsafe(object.info.size);
    const fill = async () => {
      const reader = object.data.getReader();
      let filled = 0;
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        if (filled + read.value.length > blob.length) {
          await reader.cancel();
          throw new Error(`audience state object ${name} is longer than its recorded size`);
        }
        blob.set(read.value, filled);
        filled += read.value.length;
      }
      if (filled !== blob.length) throw new Error(`audience state object ${name} is shorter than its recorded size`);
    };
    const [error] = await Promise.all([object.error, fill()]);
    if (error) throw error;
    return blob;
  }
}

/** The compare-and-set lost: the record is not at the revision the sync started from. */
function isRevisionConflict(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** KV keys and object names stay within NATS's allowed characters whatever the source and trait are called. */
function metaKey(kind: SyncKind, sourceId: string, trait: string): string {
  return `${kind}.${sourceId}.${digest(trait)}`;
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 32);
}
