import { createHash } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { ObjectStore } from "@nats-io/obj";
import { ServiceError } from "@switchyard/platform";

export type SyncKind = "audience" | "trait";

/** What is remembered about one audience or trait besides its members. */
export interface StateMeta {
  /** Object holding the current state blob ("" before the first sync). */
  object: string;
  total: number;
  /** The latest sync ids applied, newest last, so a repeated sync is recognised. */
  recentSyncIds: string[];
  updatedAt: string;
}

export interface LoadedState {
  meta: StateMeta | undefined;
  revision: number;
  blob: Uint8Array | undefined;
}

const RECENT_SYNC_IDS = 100;

/**
 * Audience and trait state in JetStream: the member blob in an object store
 * (one object per applied sync), and a small KV record pointing at the
 * current object. The record is replaced with compare-and-set, so two syncs
 * of the same audience at the same time cannot both win.
 */
export class StateStore {
  constructor(
    private readonly metaKv: KV,
    private readonly objects: ObjectStore,
  ) {}

  async load(kind: SyncKind, sourceId: string, trait: string): Promise<LoadedState> {
    const entry = await this.metaKv.get(metaKey(kind, sourceId, trait));
    if (!entry || entry.operation !== "PUT") return { meta: undefined, revision: 0, blob: undefined };
    const meta = entry.json<StateMeta>();
    const blob = meta.object ? ((await this.objects.getBlob(meta.object)) ?? undefined) : undefined;
    if (meta.object && !blob) throw new Error(`audience state object ${meta.object} is missing`);
    return { meta, revision: entry.revision, blob };
  }

  /** Stores the new state and makes it current, unless another sync changed it since `previous` was loaded. */
  async save(
    kind: SyncKind,
    sourceId: string,
    trait: string,
    previous: LoadedState,
    syncId: string,
    blob: Buffer,
    total: number,
  ): Promise<void> {
    const key = metaKey(kind, sourceId, trait);
    const object = `${key}.${digest(syncId)}`;
    await this.objects.putBlob({ name: object }, blob);
    const meta: StateMeta = {
      object,
      total,
      recentSyncIds: [...(previous.meta?.recentSyncIds ?? []), syncId].slice(-RECENT_SYNC_IDS),
      updatedAt: new Date().toISOString(),
    };
    try {
      if (previous.revision === 0) await this.metaKv.create(key, JSON.stringify(meta));
      else await this.metaKv.update(key, JSON.stringify(meta), previous.revision);
    } catch (error) {
      await this.objects.delete(object).catch(() => undefined);
      throw new ServiceError("FAILED_PRECONDITION", "another sync of this audience finished first; retry this sync", { cause: error });
    }
    if (previous.meta?.object && previous.meta.object !== object) await this.objects.delete(previous.meta.object).catch(() => undefined);
  }
}

/** KV keys and object names stay within NATS's allowed characters whatever the source and trait are called. */
function metaKey(kind: SyncKind, sourceId: string, trait: string): string {
  return `${kind}.${sourceId}.${digest(trait)}`;
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 32);
}
