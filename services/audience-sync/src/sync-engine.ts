import type { Call } from "@switchyard/contracts";
import { ServiceError, type Logger, type WorkspaceView } from "@switchyard/platform";
import { deterministicId, type CallEmitter } from "./call-emitter.js";
import { snakeCase } from "./snake-case.js";
import { applyIncrement, diffStates, tee, type Change } from "./state-diff.js";
import type { StateStore, SyncKind } from "./state-store.js";
import { readState, StateWriter, type SnapshotCollector, type StateEntry } from "./trait-state.js";

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
  constructor(private readonly deps: { workspace: WorkspaceView; store: StateStore; emitter: CallEmitter; logger: Logger }) {}

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

  async apply(target: SyncTarget, input: SyncInput): Promise<SyncSummary> {
    const trait = this.checkTarget(target);
    const { kind, sourceId, syncId } = target;
    const previous = await this.deps.store.load(kind, sourceId, trait);
    if (previous.meta?.recentSyncIds.includes(syncId)) {
      return { trait, total: previous.meta.total, emitted: 0, alreadyApplied: true };
    }

    // Checked in full (duplicates) before anything is emitted.
    if (input.mode === "snapshot") input.collector.finish();
    else input.set.finish();
    const oldEntries = () => readState(previous.blob);
    const newEntries: Iterable<StateEntry> =
      input.mode === "snapshot" ? input.collector.entries() : applyIncrement(oldEntries(), input.set.entries(), input.removed);

    const writer = new StateWriter();
    const changes = diffStates(oldEntries(), tee(newEntries, writer), ABSENT_VALUE[kind]);
    const now = new Date();
    const calls = mapIterable(changes, (change) => this.identifyCall(target, trait, change, now));
    const emitted = await this.deps.emitter.emit(sourceId, `${kind}:${deterministicId(trait)}:${syncId}`, calls);
    const blob = writer.finish();
    const total = blob.readUInt32BE(4);
    await this.deps.store.save(kind, sourceId, trait, previous, syncId, blob, total);
    this.deps.logger.info({ kind, sourceId, trait, syncId, total, emitted }, "sync applied");
    return { trait, total, emitted, alreadyApplied: false };
  }

  private identifyCall(target: SyncTarget, trait: string, change: Change, now: Date): Call {
    return {
      messageId: deterministicId(target.kind, target.sourceId, trait, target.syncId, change.userId),
      userId: change.userId,
      anonymousId: "",
      timestamp: now,
      receivedAt: now,
      context: {
        personas: {
          computation_class: target.kind === "audience" ? "audience" : "computed_trait",
          computation_key: trait,
          sync_id: target.syncId,
        },
      },
      integrations: undefined,
      payload: { $case: "identify", value: { traits: { [trait]: JSON.parse(change.value) as unknown } } },
    };
  }
}

function* mapIterable<T, U>(items: Iterable<T>, map: (item: T) => U): Generator<U> {
  for (const item of items) yield map(item);
}
