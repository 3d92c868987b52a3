import type { JetStreamClient } from "@nats-io/jetstream";
import type { BusNames } from "@switchyard/bus";
import type { insightsApi } from "@switchyard/contracts";
import { ServiceError, type AsyncService } from "@switchyard/platform";
import { sourceBlocks, type WorkspaceView } from "@switchyard/workspace";
import { readLatestValues } from "./kv-scan.js";
import {
  DESTINATION_OUTCOMES,
  HOURS_KEPT,
  isRecordId,
  parseDestinationCounter,
  recentCount,
  SCHEMA_FILTERED,
  SCHEMA_TOTAL,
  utcDay,
  type DestinationOutcome,
  type SchemaRecord,
  type UsageRecord,
} from "./records.js";

/** GetUsage without days: the last 30 days up to today. */
const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

export interface InsightsApiDeps {
  js: JetStreamClient;
  names: BusNames;
  workspace: WorkspaceView;
  nameLimit: number;
  /** The current time (tests pass their own). */
  now?: () => number;
}

/**
 * switchyard.v1.InsightsService: each source's schema and usage per day, read from the KV
 * records the counting writes (so any replica answers the same, and answers survive restarts).
 * Whether an entry is blocked comes from the live workspace, at the time of the request. Serve
 * it with `auth: "admin"`.
 */
export function insightsService(deps: InsightsApiDeps): AsyncService<insightsApi.InsightsServiceServer> {
  const now = deps.now ?? Date.now;
  return {
    getSourceSchema: async (request) => {
      const sourceId = request.sourceId;
      if (sourceId === "") throw new ServiceError("INVALID_ARGUMENT", "source_id: required");
      if (!isRecordId(sourceId)) throw new ServiceError("INVALID_ARGUMENT", "source_id: must be 1-64 letters, digits, _ or -");
      const records = await readLatestValues<SchemaRecord>(deps.js, deps.names.schemaBucket, `schema.${sourceId}.>`);
      const source = deps.workspace.source(sourceId);
      if (records.length === 0 && !source) throw new ServiceError("NOT_FOUND", `source_id: no source "${sourceId}"`);
      const nowMs = now();
      const entries = records.map(({ value }) => value);
      entries.sort((a, b) => b.lastSeen - a.lastSeen || a.type.localeCompare(b.type) || a.name.localeCompare(b.name));
      const updatedAt = entries.reduce((latest, entry) => Math.max(latest, entry.updatedAt), 0);
      return {
        sourceId,
        nameLimit: deps.nameLimit,
        updatedAt: updatedAt > 0 ? new Date(updatedAt) : undefined,
        entries: entries.map((entry) => ({
          type: entry.type,
          name: entry.name,
          overflow: entry.overflow,
          count24h: recentCount(entry, 24, nowMs),
          count7d: recentCount(entry, HOURS_KEPT, nowMs),
          countTotal: entry.counts[SCHEMA_TOTAL] ?? 0,
          filteredTotal: entry.counts[SCHEMA_FILTERED] ?? 0,
          firstSeen: new Date(entry.firstSeen),
          lastSeen: new Date(entry.lastSeen),
          keys: entry.keys.map(([key, types]) => ({ key, types })),
          blocked:
            source !== undefined &&
            (entry.overflow
              ? sourceBlocks(source, entry.type, undefined)
              : sourceBlocks(source, entry.type, entry.type === "track" ? entry.name : undefined)),
        })),
      };
    },

    getUsage: async (request) => {
      const sourceId = request.sourceId;
      if (sourceId !== "" && !isRecordId(sourceId))
        throw new ServiceError("INVALID_ARGUMENT", "source_id: must be 1-64 letters, digits, _ or -");
      const { fromDay, toDay } = dayRange(request.fromDay, request.toDay, now());
      const records = await readLatestValues<UsageRecord>(deps.js, deps.names.usageBucket, sourceId === "" ? ">" : `*.${sourceId}`);
      const days = records
        .map(({ value }) => value)
        .filter((record) => record.day >= fromDay && record.day <= toDay)
        .map(sourceUsage);
      days.sort((a, b) => a.day.localeCompare(b.day) || a.sourceId.localeCompare(b.sourceId));
      return { days };
    },
  };
}

/** The days asked for, checked; defaults: the last DEFAULT_DAYS days up to `to_day`, or up to today. */
function dayRange(from: string, to: string, nowMs: number): { fromDay: string; toDay: string } {
  checkDay("from_day", from);
  checkDay("to_day", to);
  const toDay = to || (from && from > utcDay(nowMs) ? from : utcDay(nowMs));
  const fromDay = from || utcDay(Date.parse(toDay) - (DEFAULT_DAYS - 1) * DAY_MS);
  if (fromDay > toDay) throw new ServiceError("INVALID_ARGUMENT", `from_day: must not be after to_day (${fromDay} > ${toDay})`);
  return { fromDay, toDay };
}

function checkDay(field: string, day: string): void {
  if (day === "") return;
  const millis = Date.parse(`${day}T00:00:00Z`);
  if (!DAY.test(day) || Number.isNaN(millis) || utcDay(millis) !== day) {
    throw new ServiceError("INVALID_ARGUMENT", `${field}: must be a day as YYYY-MM-DD, got "${day}"`);
  }
}

function sourceUsage(record: UsageRecord): insightsApi.SourceUsage {
  const destinations = new Map<string, Record<DestinationOutcome, number>>();
  for (const [counter, count] of Object.entries(record.counts)) {
    const parsed = parseDestinationCounter(counter);
    if (!parsed) continue;
    let outcomes = destinations.get(parsed.destinationId);
    if (!outcomes) {
      outcomes = Object.fromEntries(DESTINATION_OUTCOMES.map((outcome) => [outcome, 0])) as Record<DestinationOutcome, number>;
      destinations.set(parsed.destinationId, outcomes);
    }
    outcomes[parsed.outcome] += count;
  }
  return {
    sourceId: record.sourceId,
    day: record.day,
    accepted: record.counts.accepted ?? 0,
    filtered: record.counts.filtered ?? 0,
    rejected: record.counts.rejected ?? 0,
    destinations: [...destinations]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([destinationId, outcomes]) => ({
        destinationId,
        delivered: outcomes.delivered,
        filtered: outcomes.filtered,
        failed: outcomes.failed,
        deadLettered: outcomes.dead_lettered,
      })),
  };
}
