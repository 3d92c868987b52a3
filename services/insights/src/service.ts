import { Kvm } from "@nats-io/kv";
import { ensureBucketReplicas, ensureIntakeStreams } from "@switchyard/bus";
import { insightsApi } from "@switchyard/contracts";
import { kvStream, type Logger } from "@switchyard/platform";
import { startServiceRuntime, type RuntimeParts, type ServiceParts } from "@switchyard/runtime";
import type { InsightsConfig } from "./config.js";
import { CALLS, Counting, FILTERED } from "./counting.js";
import { insightsService } from "./insights-api.js";
import { KvRecords } from "./kv-records.js";
import { InsightsMetrics } from "./metrics.js";
import { NameIndex } from "./name-index.js";
import { StreamReader } from "./stream-reader.js";
import type { CheckpointRecord, NamesRecord, SchemaRecord, UsageRecord } from "./records.js";

/** Usage days are kept at least 90 days: each record lives this long after its last write. */
export const USAGE_MAX_AGE_MS = 100 * 86_400_000;
/** Records whose last value and revision are kept, so steady writes need no read first. */
const CACHED_RECORDS = 20_000;

export interface InsightsHandle {
  readonly grpcPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  /** Stops reading, writes the counts read, drains NATS. */
  stop(): Promise<void>;
}

/**
 * Starts the insights service: the schema and usage buckets, a reader per stream (calls,
 * filtered, usage) from its checkpoint, the flush timer, and InsightsService.
 */
export async function startInsights(config: InsightsConfig, logger: Logger): Promise<InsightsHandle> {
  const runtime = await startServiceRuntime({
    name: "insights",
    config,
    logger,
    ports: { grpc: config.INSIGHTS_GRPC_PORT, ops: config.INSIGHTS_OPS_PORT },
    ensureStreams: (jsm, names) =>
      ensureIntakeStreams(jsm, names, {
        duplicateWindowMs: config.SWITCHYARD_DUPLICATE_WINDOW_MS,
        maxAgeMs: config.SWITCHYARD_CALLS_MAX_AGE_MS,
        replicas: config.SWITCHYARD_STREAM_REPLICAS,
      }),
    start: (parts) => insightsParts(config, logger, parts),
  });
  return { grpcPort: runtime.grpcPort, opsPort: runtime.opsPort, stop: () => runtime.stop() };
}

async function insightsParts(
  config: InsightsConfig,
  logger: Logger,
  { ops, js, jsm, names, workspace, prepare }: RuntimeParts,
): Promise<ServiceParts> {
  const replicas = config.SWITCHYARD_STREAM_REPLICAS;
  const kvm = new Kvm(js);
  const schemaKv = await prepare("the schema bucket", () => kvm.create(names.schemaBucket, { history: 1, replicas }));
  const usageKv = await prepare("the usage bucket", () => kvm.create(names.usageBucket, { history: 1, replicas, ttl: USAGE_MAX_AGE_MS }));
  await prepare(`replicas of ${kvStream(names.schemaBucket)}`, () => ensureBucketReplicas(jsm, kvStream(names.schemaBucket), replicas));
  await prepare(`replicas of ${kvStream(names.usageBucket)}`, () => ensureBucketReplicas(jsm, kvStream(names.usageBucket), replicas));
  const metrics = new InsightsMetrics(ops.registry);
  const nameLimit = config.SWITCHYARD_SCHEMA_NAME_LIMIT;
  const counting = new Counting({
    names,
    nameIndex: new NameIndex(new KvRecords<NamesRecord>(schemaKv, 1_000), nameLimit),
    schemaRecords: new KvRecords<SchemaRecord>(schemaKv, CACHED_RECORDS),
    usageRecords: new KvRecords<UsageRecord>(usageKv, CACHED_RECORDS),
    checkpoints: new KvRecords<CheckpointRecord>(schemaKv, 10),
    maxPending: config.INSIGHTS_MAX_PENDING,
    retryDelayMs: config.INSIGHTS_FLUSH_INTERVAL_MS,
    metrics,
    logger,
  });

  const from = await prepare("the usage checkpoints", () => counting.readCheckpoints());
  const reader = (
    stream: string,
    afterSequence: number,
    label: "calls" | "filtered" | "usage",
    handle: Parameters<typeof StreamReader.start>[0]["handle"],
  ) => {
    metrics.resumedAfter(label, afterSequence);
    return StreamReader.start({
      js,
      stream,
      afterSequence,
      handle,
      position: (sequence, pending) => metrics.position(label, sequence, pending),
      pauseMs: config.INSIGHTS_READ_PAUSE_MS,
      logger,
    });
  };
  const readers = [
    await reader(names.callsStream, from.calls, "calls", (message) => counting.handleBatch(CALLS, message)),
    await reader(names.filteredStream, from.filtered, "filtered", (message) => counting.handleBatch(FILTERED, message)),
    await reader(names.usageStream, from.usage, "usage", (message) => counting.handleUsage(message)),
  ];
  const timer = setInterval(() => void counting.flush(), config.INSIGHTS_FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    grpc: [
      {
        name: "switchyard.v1.InsightsService",
        definition: insightsApi.InsightsServiceService,
        implementation: insightsService({ js, names, workspace, nameLimit }),
        auth: "admin",
      },
    ],
    readiness: {
      streams: [names.filteredStream, names.usageStream, kvStream(names.schemaBucket), kvStream(names.usageBucket)],
    },
    readyLog: { nameLimit, resumedAfter: from },
    finish: async () => {
      counting.stop();
      await Promise.all(readers.map((one) => one.stop()));
      clearInterval(timer);
      await counting.flush();
    },
  };
}
