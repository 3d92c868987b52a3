import { Call } from "@switchyard/contracts";
import { deterministicId, headerSafeId, type BatchPublisher } from "@switchyard/bus";
import { ServiceError, type Logger } from "@switchyard/platform";
import { type WorkspaceView } from "@switchyard/workspace";
import type { AudienceMetrics } from "./metrics.js";
import { snakeCase } from "./snake-case.js";
import { applyIncrement, diffStates, type Change } from "./state-diff.js";
import type { LoadedState, StateStore, SyncKind } from "./state-store.js";
import { stateBlob, stateCount, stateRecords, type SnapshotCollector } from "./trait-state.js";

export interface SyncTarget {
  kind: SyncKind;
  sourceId: string;
  name: string;
  syncId: string;
}

export interface SyncSummary {
  trait: string;
  total: number;
  emitted: number;
  alreadyApplied: boolean;
}

/** The whole new state, or what changes. */
export type SyncInput =
  { mode: "snapshot"; collector: SnapshotCollector } | { mode: "increment"; set: SnapshotCollector; removed: ReadonlySet<string> };

/** Audiences: members are true, and a user who leaves becomes false. Traits: a user without a value becomes null. */
const ABSENT_VALUE: Record<SyncKind, string> = { audience: "false", trait: "null" };

/**
 * Applies one sync: checks it, diffs it against the stored state in one pass,
 * publishes an identify call per change, then stores the new state. The
 * calls' message ids and batch ids derive from (audience, user, sync), so a
 * sync that is repeated after a failure does not emit twice; a sync id that
 * was already applied emits nothing.
 */
export class SyncEngine {
  constructor(
    private readonly deps: {
      workspace: WorkspaceView;
      store: StateStore;
      emitter: BatchPublisher;
      metrics: AudienceMetrics;
      logger: Logger;
    },
  ) {}

  /** Checks what a sync names before any of its data is read. Returns the trait key. */
  checkTarget(target: SyncTarget): string {
    if (!this.deps.workspace.source(target.sourceId))
      throw new ServiceError("NOT_FOUND", `header.source_id: unknown source "${target.sourceId}"`);
    if (target.name.trim() === "") throw new ServiceError("INVALID_ARGUMENT", "header.name: must not be empty");
    const trait = snakeCase(target.name);
    if (!trait)
      throw new ServiceError("INVALID_ARGUMENT", `header.name: "${target.name}" has no letters or digits to make a trait name from`);
    if (target.syncId.length < 1 || target.syncId.length > 128)
      throw new ServiceError("INVALID_ARGUMENT", "header.sync_id: must be 1-128 characters");
    return trait;
  }

  /**
   * Starts loading the state a sync will be diffed against, for apply(): a
   * snapshot's old state loads while the snapshot streams in.
   */
  prefetch(target: SyncTarget): Promise<LoadedState> {
    const loading = this.deps.store.load(target.kind, target.sourceId, this.checkTarget(target));
    void loading.catch(() => undefined); // apply() loads again if this failed
    return loading;
  }

  async apply(target: SyncTarget, input: SyncInput, prefetched?: Promise<LoadedState>): Promise<SyncSummary> {
    try {
      const summary = await this.applyOnce(target, input, prefetched);
      this.deps.metrics.sync(target.kind, summary.alreadyApplied ? "already_applied" : "applied");
      return summary;
    } catch (error) {
      this.deps.metrics.sync(target.kind, "failed");
      throw error;
    }
  }

  private async applyOnce(target: SyncTarget, input: SyncInput, prefetched?: Promise<LoadedState>): Promise<SyncSummary> {
    const trait = this.checkTarget(target);
    const { kind, sourceId, syncId } = target;
    const { store, emitter } = this.deps;
    const previous = await store.load(kind, sourceId, trait, await prefetched?.catch(() => undefined));
    if (previous.meta?.recentSyncIds.includes(syncId)) {
      return { trait, total: previous.meta.total, emitted: 0, alreadyApplied: true };
    }

    // Checked in full (duplicates) before anything is emitted.
    let blob: Buffer;
    if (input.mode === "snapshot") {
      blob = input.collector.finish();
    } else {
      const set = input.set.finish();
      blob = stateBlob(() => applyIncrement(stateRecords(previous.blob), stateRecords(set), input.removed), input.set.sharedValue);
    }

    // The new state is written while the calls go out, and made current only
    // once every call is out; if emitting fails, it is removed again.
    const staged = store.stage(kind, sourceId, trait, syncId, blob);
    void staged.catch(() => undefined); // awaited below; this keeps an early failure from counting as unhandled
    let emitted: number;
    try {
      const changes = diffStates(previous.blob, blob, ABSENT_VALUE[kind]);
      const now = new Date();
      const calls = mapIterable(changes, (change) => this.identifyCall(target, trait, change, now));
      // The sync id is the caller's free text; it becomes part of a Nats-Msg-Id header.
      emitted = await emitter.publishCalls(sourceId, `${kind}:${deterministicId(trait)}:${headerSafeId(syncId)}`, calls);
      this.deps.metrics.emitted(kind, emitted);
    } catch (error) {
      await staged.then(
        (object) => store.discard(object),
        () => undefined,
      );
      throw error;
    }
    const total = stateCount(blob);
    await store.commit(
      kind,
      sourceId,
      trait,
      previous,
      syncId,
      { object: await staged, blob, total },
      {
        name: target.name,
        mode: input.mode,
        emitted,
      },
    );
    this.deps.logger.info({ kind, sourceId, trait, syncId, total, emitted }, "sync applied");
    return { trait, total, emitted, alreadyApplied: false };
  }

  /** Every stored audience and trait (of one source, when given), by source, then kind, then name. */
  async list(sourceId?: string): Promise<AudienceListing[]> {
    const stored = await this.deps.store.list(sourceId);
    const listed = stored.map(({ kind, sourceId, meta }) => ({
      sourceId,
      kind,
      name: meta.name ?? "",
      trait: (meta.name && snakeCase(meta.name)) || "",
      total: meta.total,
      lastSync: {
        syncId: meta.recentSyncIds.at(-1) ?? "",
        mode: meta.lastSync?.mode ?? "",
        emitted: meta.lastSync?.emitted ?? 0,
        appliedAt: new Date(meta.updatedAt),
      },
    }));
    return listed.sort((a, b) => compareText(a.sourceId, b.sourceId) || compareText(a.kind, b.kind) || compareText(a.name, b.name));
  }

  private identifyCall(target: SyncTarget, trait: string, change: Change, now: Date): Call {
    return Call.fromPartial({
      messageId: deterministicId(target.kind, target.sourceId, trait, target.syncId, change.userId),
      userId: change.userId,
      timestamp: now,
      receivedAt: now,
      context: {
        personas: {
          computation_class: target.kind === "audience" ? "audience" : "computed_trait",
          computation_key: trait,
          sync_id: target.syncId,
        },
      },
      payload: { $case: "identify", value: { traits: { [trait]: JSON.parse(change.value) as unknown } } },
    });
  }
}

/** One audience or trait as ListAudiences answers it. */
export interface AudienceListing {
  sourceId: string;
  kind: SyncKind;
  name: string;
  trait: string;
  total: number;
  lastSync: { syncId: string; mode: string; emitted: number; appliedAt: Date };
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function* mapIterable<T, U>(items: Iterable<T>, map: (item: T) => U): Generator<U> {
  for (const item of items) yield map(item);
}
