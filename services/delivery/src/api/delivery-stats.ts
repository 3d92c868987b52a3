import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerInfo,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { nanos } from "@nats-io/nats-core";
import type { BusNames } from "@switchyard/bus";
import { insightsApi } from "@switchyard/contracts";
import type { Logger } from "@switchyard/platform";

/** Durable consumer on the usage stream's delivery reports, shared by every delivery replica. */
export const STATS_CONSUMER = "delivery-stats";

export interface Counts {
  delivered: number;
  failedAttempts: number;
  deadLettered: number;
}

/**
 * A destination's record in the stats bucket. `folded`: every report of the destination at or
 * below this usage-stream sequence is in the counts; `recent`: sequences above it that are in
 * the counts too. A record written before reports were folded has neither: its counts are those
 * counted before the consumer was created (it starts at the reports stored after that), so it
 * reads as folded up to 0.
 */
interface StatsRecord extends Counts {
  folded?: number;
  recent?: number[];
}

/** Reports folded in one write per destination, at most. */
const MAX_BATCH = 256;
/** Destinations written at once. */
const WRITE_CONCURRENCY = 16;
/** Tries of one compare-and-set before the reports are sent back (nak) for later. */
const MAX_TRIES = 20;
/** A report that could not be folded comes back after this, doubling with each redelivery, up to the maximum. */
const RETRY_DELAY_MS = 1_000;
const MAX_RETRY_DELAY_MS = 30_000;
/**
 * How long each pull waits. It also paces nats.js's recovery after a reconnect: it retries the
 * consumer's info at this interval while JetStream elects new leaders, and its idle heartbeat (half
 * of it) notices a pull lost with a server; the default (30 s) would leave the stats that far behind
 * after a NATS node is lost.
 */
const PULL_EXPIRES_MS = 5_000;
/** The consumer's ack floor is asked at most this often (it only lets records forget `recent`). */
const ACK_FLOOR_EVERY_MS = 1_000;

/** What the folder needs of its durable consumer (the nats.js Consumer has it). */
export interface StatsConsumer {
  consume(options: { max_messages: number; expires: number }): Promise<AsyncIterable<JsMsg> & { close(): Promise<void | Error> }>;
  info(cached?: boolean): Promise<ConsumerInfo>;
}

/**
 * Creates the stats consumer unless it exists. It starts at the reports stored after it is
 * created: counts from before are in the records already (see StatsRecord).
 * `max_ack_pending` bounds both the reports held unfolded and a record's `recent` list.
 */
export async function ensureStatsConsumer(jsm: JetStreamManager, names: BusNames, options: { ackWaitMs?: number } = {}): Promise<void> {
  const config = {
    durable_name: STATS_CONSUMER,
    filter_subject: names.deliveryUsageSubject(">"),
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(options.ackWaitMs ?? 30_000),
    max_ack_pending: 1_000,
    max_deliver: -1,
  };
  try {
    await jsm.consumers.info(names.usageStream, STATS_CONSUMER);
    await jsm.consumers.update(names.usageStream, STATS_CONSUMER, {
      ack_wait: config.ack_wait,
      max_ack_pending: config.max_ack_pending,
      max_deliver: config.max_deliver,
    });
  } catch (error) {
    if (!(error instanceof Error) || !/consumer not found/i.test(error.message)) throw error;
    await jsm.consumers.add(names.usageStream, { ...config, deliver_policy: DeliverPolicy.New });
  }
}

/**
 * Delivery counts per destination, folded from the DeliveryOutcomes reports delivery publishes
 * (with a dedup id) before it acks a handled message: a report is in the usage stream exactly
 * once for every message handled, whatever crashed, so counts folded from it are exact.
 *
 * Replicas share the consumer, so reports of one destination are folded by several replicas and
 * out of order (a report redelivered after its ack wait comes after newer ones). A plain "highest
 * sequence folded" would then skip reports wrongly; a record instead lists the sequences it holds
 * above its watermark, and moves the watermark to the consumer's ack floor, below which every
 * report has been acked and so folded (a report is acked only once its record is written). A
 * report a record holds is skipped: redelivered after a crash, it is never counted twice.
 * Records are written with compare-and-set on their revision. Reads lag the reports by about a
 * second.
 */
export class DeliveryStats {
  private readonly queue: JsMsg[] = [];
  private consumer: StatsConsumer | undefined;
  private messages: (AsyncIterable<JsMsg> & { close(): Promise<void | Error> }) | undefined;
  private reading: Promise<void> = Promise.resolve();
  private folding: Promise<void> = Promise.resolve();
  /** Set while foldQueued runs; cleared in the same step that finds the queue empty, so no report is left waiting. */
  private busy = false;
  private stopped = false;
  private ackFloor = 0;
  private ackFloorAt = 0;

  constructor(
    private readonly kv: KV,
    private readonly logger: Logger,
  ) {}

  /** Starts folding the consumer's reports (it may be shared with other replicas). */
  async start(consumer: StatsConsumer): Promise<void> {
    this.consumer = consumer;
    this.messages = await consumer.consume({ max_messages: MAX_BATCH, expires: PULL_EXPIRES_MS });
    this.reading = this.read(this.messages);
  }

  /** The records: per destination, or every destination. */
  async counts(destinationId?: string): Promise<Map<string, Counts>> {
    const result = new Map<string, Counts>();
    const keys = destinationId ? [statsKey(destinationId)] : await collect(await this.kv.keys("destination.*"));
    for (const key of keys) {
      const entry = await this.kv.get(key);
      if (entry && entry.operation === "PUT") {
        const { delivered, failedAttempts, deadLettered } = entry.json<StatsRecord>();
        result.set(key.slice("destination.".length), { delivered, failedAttempts, deadLettered });
      }
    }
    return result;
  }

  /** Stops reading, finishes the fold under way and sends the reports not folded back to the consumer. */
  async close(): Promise<void> {
    this.stopped = true;
    await this.messages?.close();
    await this.reading;
    await this.folding;
    for (const message of this.queue.splice(0)) message.nak();
  }

  private async read(messages: AsyncIterable<JsMsg>): Promise<void> {
    try {
      for await (const message of messages) {
        if (this.stopped) {
          message.nak();
          continue;
        }
        this.queue.push(message);
        if (!this.busy) {
          this.busy = true;
          this.folding = this.foldQueued();
        }
      }
    } catch (error) {
      if (!this.stopped) this.logger.error({ err: error }, "reading delivery reports for the stats stopped");
    }
  }

  /** Folds what is queued, in batches; reports arriving meanwhile make the next batch. */
  private async foldQueued(): Promise<void> {
    try {
      while (this.queue.length > 0 && !this.stopped) await this.fold(this.queue.splice(0, MAX_BATCH));
    } catch (error) {
      this.logger.error({ err: error }, "folding delivery reports failed; they come back after the ack wait");
    } finally {
      this.busy = false;
    }
  }

  private async fold(batch: JsMsg[]): Promise<void> {
    const byDestination = new Map<string, Report[]>();
    for (const message of batch) {
      let report: insightsApi.DeliveryOutcomes;
      try {
        report = insightsApi.DeliveryOutcomes.decode(message.data);
      } catch (error) {
        this.logger.warn(
          { err: error, sequence: message.seq, subject: message.subject },
          "a delivery report cannot be decoded: not counted",
        );
        message.term();
        continue;
      }
      const counts = { delivered: report.delivered, failedAttempts: report.failed, deadLettered: report.deadLettered };
      if (!report.destinationId || (counts.delivered === 0 && counts.failedAttempts === 0 && counts.deadLettered === 0)) {
        message.ack();
        continue;
      }
      const reports = byDestination.get(report.destinationId) ?? [];
      reports.push({ message, counts });
      byDestination.set(report.destinationId, reports);
    }
    if (byDestination.size === 0) return;
    const ackFloor = await this.currentAckFloor();
    const writes = [...byDestination].map(([destinationId, reports]) => async () => {
      try {
        await this.foldInto(destinationId, reports, ackFloor);
      } catch (error) {
        this.logger.warn(
          { err: error, destinationId, reports: reports.length },
          "could not fold delivery reports into the stats; they come back later",
        );
        for (const { message } of reports) message.nak(retryDelay(message));
        return;
      }
      for (const { message } of reports) message.ack();
    });
    await runLimited(writes, WRITE_CONCURRENCY);
  }

  /** Adds the reports the record does not hold yet; throws on anything but another writer coming first. */
  private async foldInto(destinationId: string, reports: Report[], ackFloor: number): Promise<void> {
    const key = statsKey(destinationId);
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const entry = await this.kv.get(key);
      const current: StatsRecord | undefined = entry && entry.operation === "PUT" ? entry.json<StatsRecord>() : undefined;
      const next = folded(current, reports, ackFloor);
      if (next === undefined) return;
      try {
        if (entry) await this.kv.update(key, JSON.stringify(next), entry.revision);
        else await this.kv.create(key, JSON.stringify(next));
        return;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    throw new Error(`could not update ${key}: too many concurrent writers`);
  }

  /** The consumer's ack floor, asked at most once a second; a failed ask keeps the last one (it only delays compaction). */
  private async currentAckFloor(): Promise<number> {
    if (this.consumer && Date.now() - this.ackFloorAt >= ACK_FLOOR_EVERY_MS) {
      this.ackFloorAt = Date.now();
      try {
        this.ackFloor = Math.max(this.ackFloor, (await this.consumer.info()).ack_floor.stream_seq);
      } catch (error) {
        this.logger.debug({ err: error }, "could not read the stats consumer's ack floor");
      }
    }
    return this.ackFloor;
  }
}

interface Report {
  message: JsMsg;
  counts: Counts;
}

/** The record with the reports it lacks added, and forgetting what the ack floor covers; undefined when it has them all. */
function folded(current: StatsRecord | undefined, reports: Report[], ackFloor: number): StatsRecord | undefined {
  const watermark = current?.folded ?? 0;
  const recent = new Set(current?.recent ?? []);
  const next: Counts = {
    delivered: current?.delivered ?? 0,
    failedAttempts: current?.failedAttempts ?? 0,
    deadLettered: current?.deadLettered ?? 0,
  };
  let added = 0;
  for (const { message, counts } of reports) {
    if (message.seq <= watermark || recent.has(message.seq)) continue;
    recent.add(message.seq);
    next.delivered += counts.delivered;
    next.failedAttempts += counts.failedAttempts;
    next.deadLettered += counts.deadLettered;
    added++;
  }
  if (added === 0) return undefined;
  const floor = Math.max(watermark, ackFloor);
  return { ...next, folded: floor, recent: [...recent].filter((seq) => seq > floor).sort((a, b) => a - b) };
}

function retryDelay(message: JsMsg): number {
  return Math.min(RETRY_DELAY_MS * 2 ** Math.min(message.info.deliveryCount - 1, 10), MAX_RETRY_DELAY_MS);
}

/** The compare-and-set failed: the record is not at the revision written against (or was created meanwhile). */
function isConflict(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

async function runLimited(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
}

function statsKey(destinationId: string): string {
  return `destination.${destinationId}`;
}

async function collect(iterator: AsyncIterable<string>): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of iterator) keys.push(key);
  return keys;
}
