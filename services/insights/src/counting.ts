import { BUS_MESSAGE_TYPE_NAMES, type BusNames } from "@switchyard/bus";
import { insightsApi } from "@switchyard/contracts";
import type { Logger } from "@switchyard/platform";
import { BatchFacts, readBatchFacts } from "@switchyard/wire";
import type { KvRecords } from "./kv-records.js";
import type { InsightsMetrics } from "./metrics.js";
import type { NameIndex } from "./name-index.js";
import { STREAMS, type StreamIndex, type StreamName } from "./pending-counts.js";
import {
  checkpointKey,
  DESTINATION_OUTCOMES,
  destinationCounter,
  isNamedType,
  isRecordId,
  isSchemaType,
  schemaKey,
  utcDay,
  type CheckpointRecord,
  type PendingSchemaEntry,
  type PendingUsageDay,
  type SchemaRecord,
  type UsageRecord,
} from "./records.js";
import { Tally } from "./tally.js";

export const CALLS: StreamIndex = 0;
export const FILTERED: StreamIndex = 1;
export const USAGE: StreamIndex = 2;

/** Records written at once during a flush. */
const WRITE_CONCURRENCY = 16;
const DAY_MS = 86_400_000;

/** A stream message as counting needs it. */
export interface StreamMessage {
  seq: number;
  subject: string;
  data: Uint8Array;
  /** When JetStream stored it, Unix ms: the time of a call or report that carries none. */
  storedAtMs: number;
  /** The Switchyard-Type header, when present. */
  type: string | undefined;
}

export interface CountingOptions {
  names: BusNames;
  nameIndex: NameIndex;
  schemaRecords: KvRecords<SchemaRecord>;
  usageRecords: KvRecords<UsageRecord>;
  checkpoints: KvRecords<CheckpointRecord>;
  /** Counts held in memory before reading pauses for a flush. */
  maxPending: number;
  /** Wait between flushes that could not write everything, while reading is paused. */
  retryDelayMs: number;
  metrics: InsightsMetrics;
  logger: Logger;
}

/**
 * Counts calls and usage reports into schema entries and usage days, and writes them to KV
 * (flush). Messages are handled one at a time per stream, in order; a message's counts are
 * tallied in one synchronous step, so a flush never sees half a message. Records hold per stream
 * the highest sequence they took counts from, and a checkpoint per stream is written only once
 * every count up to it is in the records: reading resumes there after a restart, and a record
 * leaves out what it already holds, so no message is counted twice (see PendingCounts.applyTo).
 */
export class Counting {
  private live = new Tally();
  /** The last sequence handled completely, per stream. */
  private readonly handled = [0, 0, 0];
  /** The checkpoint last written (or read at start), per stream. */
  private readonly checkpointed = [0, 0, 0];
  private readonly facts = [new BatchFacts(), new BatchFacts()];
  private flushing: Promise<void> = Promise.resolve();
  private flushQueued = false;
  /** Set once the service stops (see stop). */
  private stopping = false;
  /** The last UTC day computed, to spare a Date per call. */
  private dayStart = Number.NaN;
  private dayText = "";

  constructor(private readonly options: CountingOptions) {}

  /** Where each stream's reading resumes: the checkpoints stored (0: the stream's start). */
  async readCheckpoints(): Promise<Record<StreamName, number>> {
    for (const [index, stream] of STREAMS.entries()) {
      const record = await this.options.checkpoints.get(checkpointKey(stream));
      this.checkpointed[index] = this.handled[index] = record?.sequence ?? 0;
    }
    return { calls: this.checkpointed[0]!, filtered: this.checkpointed[1]!, usage: this.checkpointed[2]! };
  }

  /** The last sequence handled of a stream. */
  handledSequence(stream: StreamIndex): number {
    return this.handled[stream]!;
  }

  /**
   * Counts a CallBatch of the calls or filtered stream. Returns a promise only when it must wait
   * first (a source's name index to load, or a flush to make room).
   */
  handleBatch(stream: typeof CALLS | typeof FILTERED, message: StreamMessage): void | Promise<void> {
    const { metrics, logger } = this.options;
    let facts: BatchFacts;
    try {
      facts = readBatchFacts(message.data, this.facts[stream]);
    } catch (error) {
      metrics.skipped(STREAMS[stream], "undecodable");
      logger.warn({ err: error, stream: STREAMS[stream], sequence: message.seq }, "skipping a message that is not a CallBatch");
      this.handled[stream] = message.seq;
      return;
    }
    const sourceId = isRecordId(facts.sourceId) ? facts.sourceId : message.subject.slice(message.subject.lastIndexOf(".") + 1);
    if (!isRecordId(sourceId)) {
      metrics.skipped(STREAMS[stream], "invalid_source");
      this.handled[stream] = message.seq;
      return;
    }
    if (!this.options.nameIndex.isLoaded(sourceId) || this.mustFlushFirst(sourceId)) {
      return this.prepare(sourceId).then(() => this.countBatch(stream, message, facts, sourceId));
    }
    this.countBatch(stream, message, facts, sourceId);
  }

  /** Counts a usage report (RejectedCalls or DeliveryOutcomes). */
  handleUsage(message: StreamMessage): void | Promise<void> {
    if (this.live.added >= this.options.maxPending) return this.prepare(undefined).then(() => this.countUsage(message));
    this.countUsage(message);
  }

  /** Writes every count read so far; concurrent calls run one after another (and share a queued one). */
  flush(): Promise<void> {
    if (this.flushQueued) return this.flushing;
    this.flushQueued = true;
    this.flushing = this.flushing.then(async () => {
      this.flushQueued = false;
      try {
        await this.flushOnce();
      } catch (error) {
        this.options.logger.warn({ err: error }, "could not write counts; keeping them for the next flush");
      }
    });
    return this.flushing;
  }

  private mustFlushFirst(sourceId: string): boolean {
    return this.live.added >= this.options.maxPending || this.options.nameIndex.tentativeCount(sourceId) >= this.options.nameIndex.limit;
  }

  /**
   * The service is stopping: a read waiting for room in the tally (see prepare) stops waiting, so
   * that stopping cannot wait on a bus that keeps refusing the counts. The last flush writes what
   * the tally holds; what was not counted is read again at the next start.
   */
  stop(): void {
    this.stopping = true;
  }

  /** Loads the source's name index, and flushes until the tally has room; retries while KV is unreachable, until stop. */
  private async prepare(sourceId: string | undefined): Promise<void> {
    for (;;) {
      if (this.stopping) throw new Error("insights is stopping: the call is read again at the next start");
      try {
        if (sourceId !== undefined && !this.options.nameIndex.isLoaded(sourceId)) await this.options.nameIndex.load(sourceId);
        if (sourceId !== undefined ? !this.mustFlushFirst(sourceId) : this.live.added < this.options.maxPending) return;
        await this.flush();
        if (sourceId !== undefined ? !this.mustFlushFirst(sourceId) : this.live.added < this.options.maxPending) return;
      } catch (error) {
        this.options.logger.warn({ err: error, sourceId }, "could not read a source's name index; trying again");
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.retryDelayMs));
    }
  }

  private countBatch(stream: typeof CALLS | typeof FILTERED, message: StreamMessage, facts: BatchFacts, sourceId: string): void {
    const { nameIndex, metrics } = this.options;
    const tally = this.live;
    const filtered = stream === FILTERED;
    const sequence = message.seq;
    let counted = 0;
    // The batch's calls nearly always share a day: its usage record is looked up once.
    let usageDay = "";
    let usage: PendingUsageDay | undefined;
    for (let index = 0; index < facts.count; index++) {
      const type = facts.types[index];
      if (!isSchemaType(type)) continue;
      let receivedAt = facts.receivedAt[index]!;
      if (Number.isNaN(receivedAt)) receivedAt = Number.isNaN(facts.receivedAtMillis) ? message.storedAtMs : facts.receivedAtMillis;
      const day = this.dayOf(receivedAt);
      if (usage === undefined || day !== usageDay) {
        usageDay = day;
        usage = tally.usageDay(day, sourceId);
      }
      usage.counts.add(stream, sequence, "accepted", 1);
      if (filtered) usage.counts.add(stream, sequence, "filtered", 1);

      const name = isNamedType(type) ? facts.names[index]! : "";
      let entry = tally.entryByName(sourceId, type, name);
      if (!entry) {
        const digest = nameIndex.digest(type, name);
        // Unnamed calls (identify, group, alias, pages and screens without a name) always have their entry.
        const admission = name === "" ? "admitted" : nameIndex.admit(sourceId, type, name, digest);
        entry =
          admission === "overflow"
            ? tally.overflowEntry(sourceId, type)
            : tally.entry(schemaKey(sourceId, type, digest), sourceId, type, name, false, name === "" ? undefined : digest);
      }
      entry.addCall(stream, sequence, receivedAt, filtered);
      entry.addKeys(facts.keys, facts.keyTypes, facts.keyStarts[index]!, facts.keyStarts[index + 1]!);
      counted++;
    }
    tally.added += 4 * counted;
    this.handled[stream] = sequence;
    metrics.read(STREAMS[stream], counted);
  }

  private countUsage(message: StreamMessage): void {
    const { names, metrics, logger } = this.options;
    const sequence = message.seq;
    this.handled[USAGE] = sequence;
    const type =
      message.type ??
      (message.subject.startsWith(`${names.namespace}.usage.rejected.`)
        ? BUS_MESSAGE_TYPE_NAMES.rejectedCalls
        : message.subject.startsWith(`${names.namespace}.usage.delivery.`)
          ? BUS_MESSAGE_TYPE_NAMES.deliveryOutcomes
          : undefined);
    try {
      if (type === BUS_MESSAGE_TYPE_NAMES.rejectedCalls) {
        const report = insightsApi.RejectedCalls.decode(message.data);
        if (!isRecordId(report.sourceId)) return metrics.skipped("usage", "invalid_source");
        const day = this.dayOf(report.receivedAt?.getTime() ?? message.storedAtMs);
        if (report.count > 0) this.live.usageDay(day, report.sourceId).counts.add(USAGE, sequence, "rejected", report.count);
      } else if (type === BUS_MESSAGE_TYPE_NAMES.deliveryOutcomes) {
        const report = insightsApi.DeliveryOutcomes.decode(message.data);
        if (!isRecordId(report.sourceId) || !isRecordId(report.destinationId)) return metrics.skipped("usage", "invalid_source");
        const usage = this.live.usageDay(this.dayOf(report.at?.getTime() ?? message.storedAtMs), report.sourceId);
        const amounts = [report.delivered, report.filtered, report.failed, report.deadLettered];
        DESTINATION_OUTCOMES.forEach((outcome, index) => {
          if (amounts[index]! > 0) usage.counts.add(USAGE, sequence, destinationCounter(report.destinationId, outcome), amounts[index]!);
        });
      } else {
        return metrics.skipped("usage", "unknown_type");
      }
    } catch (error) {
      logger.warn({ err: error, stream: "usage", sequence }, "skipping a usage report that cannot be decoded");
      return metrics.skipped("usage", "undecodable");
    }
    this.live.added += 4;
    metrics.read("usage", 0);
  }

  /** The UTC day of a time, from the last one computed when it falls on the same day. */
  private dayOf(millis: number): string {
    const start = Math.floor(millis / DAY_MS) * DAY_MS;
    if (start !== this.dayStart) {
      this.dayStart = start;
      this.dayText = utcDay(millis);
    }
    return this.dayText;
  }

  private async flushOnce(): Promise<void> {
    const { nameIndex, metrics, logger } = this.options;
    const started = performance.now();
    // Settle the tentative names first, so every entry written is of a name in the index (or an overflow).
    this.live.reroute(await nameIndex.commit());
    const snapshot = this.live;
    const upTo = [...this.handled];
    this.live = new Tally();
    // Names read while the commit ran are still tentative: their counts wait for the next commit.
    snapshot.holdBack(this.live, (entry, digest) => nameIndex.isTentative(entry.sourceId, digest));

    const nowMs = Date.now();
    let failed = 0;
    const writes: (() => Promise<void>)[] = [];
    for (const entry of snapshot.schema.values()) {
      writes.push(async () => {
        try {
          await this.writeSchema(entry, nowMs);
        } catch (error) {
          failed++;
          if (failed === 1) logger.warn({ err: error, key: entry.key }, "could not write a schema entry; keeping its counts");
          this.live.takeBackSchema(entry, snapshot.digestOf(entry.key));
        }
      });
    }
    for (const entry of snapshot.usage.values()) {
      writes.push(async () => {
        try {
          await this.writeUsage(entry, nowMs);
        } catch (error) {
          failed++;
          if (failed === 1) logger.warn({ err: error, key: entry.key }, "could not write a usage day; keeping its counts");
          this.live.takeBackUsage(entry);
        }
      });
    }
    await runLimited(writes, WRITE_CONCURRENCY);
    await this.writeCheckpoints(upTo);
    metrics.flushed(failed === 0, (performance.now() - started) / 1000);
  }

  private async writeSchema(entry: PendingSchemaEntry, nowMs: number): Promise<void> {
    await this.options.schemaRecords.modify(entry.key, (current) => ({ value: entry.applyTo(current, nowMs).record, result: undefined }));
  }

  private async writeUsage(entry: PendingUsageDay, nowMs: number): Promise<void> {
    const added = await this.options.usageRecords.modify(entry.key, (current) => {
      const { record, added } = entry.applyTo(current, nowMs);
      return { value: record, result: added };
    });
    if (added) this.options.metrics.usageApplied(entry.sourceId, added);
  }

  /** Moves each stream's checkpoint to the last message all of whose counts are in the records. */
  private async writeCheckpoints(upTo: number[]): Promise<void> {
    for (const [index, stream] of STREAMS.entries()) {
      const sequence = Math.min(upTo[index]!, this.live.lowestSequence(index as StreamIndex) - 1);
      if (sequence <= this.checkpointed[index]!) continue;
      await this.options.checkpoints.modify(checkpointKey(stream), (current) =>
        current && current.sequence >= sequence ? undefined : { value: { sequence }, result: undefined },
      );
      this.checkpointed[index] = sequence;
    }
  }
}

/** Runs the tasks, at most `limit` at a time. */
async function runLimited(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
}
