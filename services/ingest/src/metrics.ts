import { ChildCache, Counter, Histogram, METRIC_PREFIX, childrenByLabel, type Registry } from "@switchyard/platform";

export const TRANSPORTS = ["grpc", "http"] as const;
export type Transport = (typeof TRANSPORTS)[number];

/** Publish latency: from a local JetStream's quick confirmation to a replicated one's, up to the 5 s timeout. */
const PUBLISH_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

type CounterChild = ReturnType<Counter["labels"]>;
type HistogramChild = ReturnType<Histogram["labels"]>;

/**
 * Ingest's metrics (docs/operations.md lists them). Calls are counted once
 * each: accepted or blocked (their source blocks them) when JetStream
 * confirmed them, rejected with the validation rule they broke, or with
 * "unavailable" when JetStream did not confirm.
 * Requests refused as a whole (bad write key, unreadable body...) are counted
 * separately, since their calls were never read.
 */
export class IngestMetrics {
  private readonly accepted: Record<Transport, CounterChild>;
  private readonly blocked: Record<Transport, CounterChild>;
  private readonly rejected: Record<Transport, ChildCache<CounterChild>>;
  private readonly refusedRequests: Record<Transport, ChildCache<CounterChild>>;
  private readonly duplicates: Record<Transport, CounterChild>;
  private readonly publishOk: HistogramChild;
  private readonly publishFailed: HistogramChild;
  private readonly usageReportsFailed: Counter;

  constructor(registry: Registry) {
    const accepted = new Counter({
      name: `${METRIC_PREFIX}ingest_calls_accepted_total`,
      help: "Calls stored in the calls stream (JetStream confirmed), re-sent duplicates included",
      labelNames: ["transport"],
      registers: [registry],
    });
    const blocked = new Counter({
      name: `${METRIC_PREFIX}ingest_calls_blocked_total`,
      help: "Valid calls their source blocks, answered as accepted and stored in the filtered stream (JetStream confirmed)",
      labelNames: ["transport"],
      registers: [registry],
    });
    const rejected = new Counter({
      name: `${METRIC_PREFIX}ingest_calls_rejected_total`,
      help: "Calls refused: reason is the validation rule broken, or unavailable when JetStream did not confirm",
      labelNames: ["transport", "reason"],
      registers: [registry],
    });
    const refused = new Counter({
      name: `${METRIC_PREFIX}ingest_requests_rejected_total`,
      help: "Requests refused as a whole (HTTP error code or gRPC status, lowercase)",
      labelNames: ["transport", "reason"],
      registers: [registry],
    });
    const duplicates = new Counter({
      name: `${METRIC_PREFIX}ingest_duplicate_batches_total`,
      help: "Batches JetStream already held (re-sent within the duplicate window) and stored once",
      labelNames: ["transport"],
      registers: [registry],
    });
    const publish = new Histogram({
      name: `${METRIC_PREFIX}ingest_publish_duration_seconds`,
      help: "Time from publishing a batch to JetStream's acknowledgement (or the failure)",
      labelNames: ["outcome"],
      buckets: PUBLISH_BUCKETS,
      registers: [registry],
    });

    this.accepted = childrenByLabel(TRANSPORTS, (t) => accepted.labels(t));
    this.blocked = childrenByLabel(TRANSPORTS, (t) => blocked.labels(t));
    this.duplicates = childrenByLabel(TRANSPORTS, (t) => duplicates.labels(t));
    this.rejected = childrenByLabel(TRANSPORTS, (t) => new ChildCache((reason) => rejected.labels(t, reason)));
    this.refusedRequests = childrenByLabel(TRANSPORTS, (t) => new ChildCache((reason) => refused.labels(t, reason)));
    this.publishOk = publish.labels("ok");
    this.publishFailed = publish.labels("failed");
    this.usageReportsFailed = new Counter({
      name: `${METRIC_PREFIX}ingest_usage_reports_failed_total`,
      help: "Reports of refused calls to usage that JetStream did not confirm (the requests were answered as usual)",
      registers: [registry],
    });
  }

  callsAccepted(transport: Transport, count: number, duplicate: boolean): void {
    this.accepted[transport].inc(count);
    if (duplicate) this.duplicates[transport].inc();
  }

  callsBlocked(transport: Transport, count: number): void {
    this.blocked[transport].inc(count);
  }

  usageReportFailed(): void {
    this.usageReportsFailed.inc();
  }

  callsRejected(transport: Transport, reason: string, count = 1): void {
    this.rejected[transport].get(reason).inc(count);
  }

  requestRejected(transport: Transport, reason: string): void {
    this.refusedRequests[transport].get(reason).inc();
  }

  published(seconds: number, ok: boolean): void {
    (ok ? this.publishOk : this.publishFailed).observe(seconds);
  }
}
