import { ChildCache, Counter, Gauge, Histogram, METRIC_PREFIX, childrenByLabel, type Registry } from "@switchyard/platform";
import { STREAMS, type StreamName } from "./pending-counts.js";
import { parseDestinationCounter, USAGE_OUTCOMES, type UsageOutcome } from "./records.js";

type CounterChild = ReturnType<Counter["labels"]>;
type GaugeChild = ReturnType<Gauge["labels"]>;

/** One flush: a few KV round trips, up to seconds when the bucket is slow. */
const FLUSH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The insights service's metrics (docs/operations.md lists them). The usage counters grow by
 * what this process added to the usage records, after the records left out what they already
 * held: summed over replicas they count every call once, whichever replica wrote it. After a
 * restart they start from 0 like any Prometheus counter (rate() and increase() allow for it).
 */
export class InsightsMetrics {
  private readonly usageCalls: ChildCache<CounterChild>;
  private readonly destinationCalls: ChildCache<CounterChild>;
  private readonly messages: Record<StreamName, CounterChild>;
  private readonly calls: Record<StreamName, CounterChild>;
  private readonly skippedMessages: Counter;
  private readonly lag: Record<StreamName, GaugeChild>;
  private readonly readSequence: Record<StreamName, GaugeChild>;
  private readonly flushes: Record<"ok" | "failed", CounterChild>;
  private readonly flushSeconds: Histogram;

  constructor(registry: Registry) {
    const usageCalls = new Counter({
      name: `${METRIC_PREFIX}usage_calls_total`,
      help: "Calls per source by outcome: accepted (valid calls ingest accepted, blocked ones included), filtered (blocked at the source), rejected (refused as invalid); as added to the usage records by this process",
      labelNames: ["source", "outcome"],
      registers: [registry],
    });
    const destinationCalls = new Counter({
      name: `${METRIC_PREFIX}usage_destination_calls_total`,
      help: "Calls per source and destination by outcome: delivered, filtered (the connection's filter did not match), failed (failed requests), dead_lettered; as added to the usage records by this process",
      labelNames: ["source", "destination", "outcome"],
      registers: [registry],
    });
    // Label values are source and destination ids, which the workspace bounds.
    this.usageCalls = new ChildCache((key) => usageCalls.labels(...(key.split("\n") as [string, string])));
    this.destinationCalls = new ChildCache((key) => destinationCalls.labels(...(key.split("\n") as [string, string, string])));
    const messages = new Counter({
      name: `${METRIC_PREFIX}insights_messages_total`,
      help: "Messages read, by stream (calls, filtered, usage)",
      labelNames: ["stream"],
      registers: [registry],
    });
    const calls = new Counter({
      name: `${METRIC_PREFIX}insights_calls_read_total`,
      help: "Calls read from the calls and filtered streams (a message read again after a restart counts again)",
      labelNames: ["stream"],
      registers: [registry],
    });
    this.skippedMessages = new Counter({
      name: `${METRIC_PREFIX}insights_skipped_messages_total`,
      help: "Messages not counted, by stream and reason (undecodable, invalid_source, unknown_type)",
      labelNames: ["stream", "reason"],
      registers: [registry],
    });
    const lag = new Gauge({
      name: `${METRIC_PREFIX}insights_lag_messages`,
      help: "Messages of each stream not yet read (as of the last message read)",
      labelNames: ["stream"],
      registers: [registry],
    });
    const readSequence = new Gauge({
      name: `${METRIC_PREFIX}insights_read_sequence`,
      help: "The stream sequence of the last message read, by stream: the stream's last sequence minus this is how far behind insights is",
      labelNames: ["stream"],
      registers: [registry],
    });
    const flushes = new Counter({
      name: `${METRIC_PREFIX}insights_flushes_total`,
      help: "Writes of the counts read to KV, by result (failed: some records kept their counts for the next one)",
      labelNames: ["result"],
      registers: [registry],
    });
    this.flushSeconds = new Histogram({
      name: `${METRIC_PREFIX}insights_flush_duration_seconds`,
      help: "Time one write of the counts read to KV took",
      buckets: FLUSH_BUCKETS,
      registers: [registry],
    });
    this.messages = childrenByLabel(STREAMS, (stream) => messages.labels(stream));
    this.calls = childrenByLabel(STREAMS, (stream) => calls.labels(stream));
    this.lag = childrenByLabel(STREAMS, (stream) => lag.labels(stream));
    this.readSequence = childrenByLabel(STREAMS, (stream) => readSequence.labels(stream));
    this.flushes = childrenByLabel(["ok", "failed"] as const, (result) => flushes.labels(result));
  }

  read(stream: StreamName, calls: number): void {
    this.messages[stream].inc();
    if (calls > 0) this.calls[stream].inc(calls);
  }

  skipped(stream: StreamName, reason: "undecodable" | "invalid_source" | "unknown_type"): void {
    this.skippedMessages.labels(stream, reason).inc();
    this.messages[stream].inc();
  }

  /** After each message read: its sequence, and how many are left to read. */
  /** Where reading resumes after a start: the gauge then says so before any new message arrives. */
  resumedAfter(stream: StreamName, sequence: number): void {
    this.readSequence[stream].set(sequence);
  }

  position(stream: StreamName, sequence: number, pending: number): void {
    this.readSequence[stream].set(sequence);
    this.lag[stream].set(pending);
  }

  flushed(ok: boolean, seconds: number): void {
    this.flushes[ok ? "ok" : "failed"].inc();
    this.flushSeconds.observe(seconds);
  }

  /** What a write added to a source's usage day, by counter. */
  usageApplied(sourceId: string, added: Map<string, number>): void {
    for (const [counter, amount] of added) {
      if ((USAGE_OUTCOMES as readonly string[]).includes(counter)) {
        this.usageCalls.get(`${sourceId}\n${counter as UsageOutcome}`).inc(amount);
        continue;
      }
      const destination = parseDestinationCounter(counter);
      if (destination) this.destinationCalls.get(`${sourceId}\n${destination.destinationId}\n${destination.outcome}`).inc(amount);
    }
  }
}
