import { Counter, METRIC_PREFIX, childrenByLabel, type Registry } from "@switchyard/platform";
import type { SyncKind } from "./state-store.js";

/** What audience-sync emits: identify calls for audience and trait changes, delete calls for deletion requests. */
const CHANGE_KINDS = ["audience", "trait", "deletion"] as const;
type ChangeKind = (typeof CHANGE_KINDS)[number];
const SYNC_KINDS = ["audience", "trait"] as const satisfies readonly SyncKind[];
const SYNC_RESULTS = ["applied", "already_applied", "failed"] as const;
type SyncResult = (typeof SYNC_RESULTS)[number];

type CounterChild = ReturnType<Counter["labels"]>;

/** audience-sync's metrics (docs/operations.md lists them). */
export class AudienceMetrics {
  private readonly changes: Record<ChangeKind, CounterChild>;
  private readonly syncs: Record<SyncKind, Record<SyncResult, CounterChild>>;

  constructor(registry: Registry) {
    const changes = new Counter({
      name: `${METRIC_PREFIX}audience_changes_emitted_total`,
      help: "Calls published onto the calls stream: identify calls for audience and trait changes, delete calls for deletion requests",
      labelNames: ["kind"],
      registers: [registry],
    });
    const syncs = new Counter({
      name: `${METRIC_PREFIX}audience_syncs_total`,
      help: "Audience and computed-trait syncs, by result (already_applied: the sync id was seen before and emitted nothing)",
      labelNames: ["kind", "result"],
      registers: [registry],
    });
    this.changes = childrenByLabel(CHANGE_KINDS, (kind) => changes.labels(kind));
    this.syncs = childrenByLabel(SYNC_KINDS, (kind) => childrenByLabel(SYNC_RESULTS, (result) => syncs.labels(kind, result)));
  }

  emitted(kind: ChangeKind, count: number): void {
    this.changes[kind].inc(count);
  }

  sync(kind: SyncKind, result: SyncResult): void {
    this.syncs[kind][result].inc();
  }
}
