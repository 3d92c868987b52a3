import { DeliverPolicy, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import type { BusNames } from "@switchyard/bus";
import { DeliveryAttempt } from "@switchyard/contracts";
import type { Logger } from "@switchyard/platform";
import { countBatchCalls } from "@switchyard/wire";
import type { WorkspaceView } from "@switchyard/workspace";
import { CountsByKey, HOUR_MS } from "./rolling-counts.js";
import type { DestinationOverview, LastFailure, OverviewSnapshot, SourceOverview } from "./view-types.js";

/** A destination's delivery counters as DeliveryService.GetDeliveryStats reports them (totals since it first counted). */
export interface DeliveryCounters {
  delivered: number;
  failedAttempts: number;
  deadLettered: number;
}

/** How often the delivery counters and the dead-letter counts are read. */
export const SAMPLE_EVERY_MS = 5_000;
/** The window that decides whether a destination is failing now. */
export const FAILING_WINDOW_MS = 5 * 60_000;
/** Below this share of successful requests within FAILING_WINDOW_MS (with failures in it), a destination is failing. */
export const FAILING_SUCCESS_RATE = 0.5;
/** Most distinct failed calls remembered per source; past it the source's success rate is a bound. */
const MAX_FAILED_CALLS_PER_SOURCE = 200_000;

interface Sample {
  at: number;
  counters: Map<string, DeliveryCounters>;
}

/**
 * The overview's figures, kept by the console itself from the bus:
 *
 *  - calls per source: the calls stream, read from one hour back with an ordered consumer, then
 *    followed live (each batch's calls are counted from its bytes, not decoded);
 *  - failed attempts and dead letters per destination, failed calls per source, the latest
 *    failure: the delivery log, read the same way;
 *  - delivered calls per destination: successes are not on the bus, only in delivery's counters,
 *    so DeliveryService.GetDeliveryStats is read every few seconds and differenced; that window
 *    starts when the console first read them (up to an hour);
 *  - dead letters waiting: the dead-letter stream's message count per subject.
 *
 * Everything is in memory, in fixed 10-second buckets; nothing is written anywhere.
 */
export class Overview {
  private readonly calls = new CountsByKey();
  private readonly failedAttempts = new CountsByKey();
  private readonly deadLettered = new CountsByKey();
  private readonly failedCalls = new Map<string, Map<string, number>>();
  private readonly lastFailures = new Map<string, LastFailure>();
  private samples: Sample[] = [];
  private deadLetters = new Map<string, number>();
  private countersFresh = false;
  private callsCaughtUp = false;
  private logCaughtUp = false;
  private stopped = false;
  private readonly running = new Set<ConsumerMessages>();
  private timer: NodeJS.Timeout | undefined;
  private readonly followers: Promise<void>[] = [];

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      names: BusNames;
      workspace: WorkspaceView;
      /** Reads delivery's counters; undefined when delivery cannot be reached. */
      readCounters: () => Promise<Map<string, DeliveryCounters> | undefined>;
      logger: Logger;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Starts reading the last hour and following the bus. */
  start(): void {
    const { names } = this.deps;
    const since = this.now() - HOUR_MS;
    const callsPrefix = `${names.callsSubject("")}`;
    this.followers.push(
      this.follow(
        names.callsStream,
        names.callsSubjects,
        since,
        (message) => this.countBatch(message, callsPrefix),
        () => (this.callsCaughtUp = true),
      ),
      this.follow(
        names.deliveryLogStream,
        names.deliveryLogSubjects,
        since,
        (message) => this.countLogEntry(message),
        () => (this.logCaughtUp = true),
      ),
    );
    const sample = () => void this.sample().catch((error: unknown) => this.deps.logger.debug({ err: error }, "overview: sampling failed"));
    sample();
    this.timer = setInterval(sample, SAMPLE_EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const messages of this.running) await messages.close().catch(() => undefined);
    await Promise.all(this.followers);
  }

  /** Reads the counters and dead-letter counts now (also done every SAMPLE_EVERY_MS). */
  async sample(): Promise<void> {
    const at = this.now();
    const counters = await this.deps.readCounters().catch(() => undefined);
    this.countersFresh = counters !== undefined;
    if (counters) {
      this.samples.push({ at, counters });
      // Keep the newest sample at least an hour old, as the base of the hour's window.
      const hourAgo = at - HOUR_MS;
      while (this.samples.length > 1 && this.samples[1]!.at <= hourAgo) this.samples.shift();
    }
    try {
      const { names } = this.deps;
      const info = await this.deps.jsm.streams.info(names.deadStream, { subjects_filter: names.deadSubjects });
      const prefix = names.deadSubject("");
      const counts = new Map<string, number>();
      for (const [subject, count] of Object.entries(info.state.subjects ?? {})) counts.set(subject.slice(prefix.length), count);
      this.deadLetters = counts;
    } catch (error) {
      this.deps.logger.debug({ err: error }, "overview: dead-letter counts unavailable");
    }
  }

  snapshot(): OverviewSnapshot {
    const now = this.now();
    const { workspace } = this.deps;
    const hourAgo = now - HOUR_MS;

    const sources = workspace
      .sourceIds()
      .sort()
      .map((id): SourceOverview => {
        const callsLastHour = this.calls.sumSince(id, hourAgo, now);
        const failed = this.failedCalls.get(id);
        let failedCallsLastHour = 0;
        if (failed) {
          for (const [messageId, at] of failed) {
            if (at < hourAgo) failed.delete(messageId);
            else failedCallsLastHour++;
          }
        }
        return {
          id,
          name: workspace.source(id)?.name ?? "",
          destinations: workspace.webhookDestinationsOf(id).length,
          callsLastHour,
          callsPerSecond: callsLastHour / (HOUR_MS / 1000),
          callsPerSecondLastMinute: this.calls.sumSince(id, now - 60_000, now) / 60,
          failedCallsLastHour,
          successRate: callsLastHour > 0 ? Math.max(0, 1 - failedCallsLastHour / callsLastHour) : null,
          failedCallsCapped: (failed?.size ?? 0) >= MAX_FAILED_CALLS_PER_SOURCE,
        };
      });

    const destinations = workspace
      .destinationIds()
      .sort()
      .map((id): DestinationOverview => {
        const destination = workspace.destination(id);
        const hour = this.window(id, HOUR_MS, now);
        const recent = this.window(id, FAILING_WINDOW_MS, now);
        const enabled = destination?.enabled ?? false;
        const recentRequests = recent.delivered + recent.failedAttempts;
        return {
          id,
          name: destination?.name ?? "",
          enabled,
          windowSeconds: Math.round(hour.windowMs / 1000),
          delivered: hour.delivered,
          failedAttempts: hour.failedAttempts,
          deadLettered: hour.deadLettered,
          requestsPerSecond: hour.windowMs > 0 ? (hour.delivered + hour.failedAttempts) / (hour.windowMs / 1000) : 0,
          successRate: hour.delivered + hour.failedAttempts > 0 ? hour.delivered / (hour.delivered + hour.failedAttempts) : null,
          failing: enabled && recent.failedAttempts > 0 && recent.delivered / recentRequests < FAILING_SUCCESS_RATE,
          lastFailure: this.lastFailures.get(id) ?? null,
          deadLetters: this.deadLetters.get(id) ?? 0,
        };
      });

    return {
      generatedAt: new Date(now).toISOString(),
      caughtUp: this.callsCaughtUp && this.logCaughtUp,
      deliveryCountersFresh: this.countersFresh,
      sources,
      destinations,
      failingDestinations: destinations.filter((d) => d.failing).map((d) => d.id),
      deadLetters: [...this.deadLetters.values()].reduce((sum, count) => sum + count, 0),
    };
  }

  /**
   * A destination's figures over the last `lengthMs`, or less when the counters have not been
   * read that long: delivered from the counters, failures from the delivery log over the same span.
   */
  private window(
    id: string,
    lengthMs: number,
    now: number,
  ): { windowMs: number; delivered: number; failedAttempts: number; deadLettered: number } {
    const latest = this.samples.at(-1);
    // Until the counters were read twice there is no span to difference over.
    if (!latest || this.samples.length < 2) return { windowMs: 0, delivered: 0, failedAttempts: 0, deadLettered: 0 };
    let base = this.samples[0]!;
    for (const sample of this.samples) {
      if (sample.at <= now - lengthMs) base = sample;
      else break;
    }
    if (base === latest) return { windowMs: 0, delivered: 0, failedAttempts: 0, deadLettered: 0 };
    const delivered = Math.max(0, (latest.counters.get(id)?.delivered ?? 0) - (base.counters.get(id)?.delivered ?? 0));
    return {
      windowMs: now - base.at,
      delivered,
      // To the log's 10-second buckets: failures up to 10 s before the base sample may count too.
      failedAttempts: this.failedAttempts.sumSince(id, base.at, now),
      deadLettered: this.deadLettered.sumSince(id, base.at, now),
    };
  }

  private countBatch(message: JsMsg, prefix: string): void {
    if (!message.subject.startsWith(prefix)) return;
    const sourceId = message.subject.slice(prefix.length);
    // A damaged message counts with the calls read before the damage (delivery poisons it).
    const count = countBatchCalls(message.data);
    this.calls.add(sourceId, message.time.getTime(), count);
  }

  private countLogEntry(message: JsMsg): void {
    let entry: DeliveryAttempt;
    try {
      entry = DeliveryAttempt.decode(message.data);
    } catch {
      return;
    }
    const at = entry.at?.getTime() ?? message.time.getTime();
    if (entry.outcome === "dead_lettered") {
      this.deadLettered.add(entry.destinationId, at);
      return;
    }
    this.failedAttempts.add(entry.destinationId, at);
    if (entry.sourceId && entry.messageId) {
      let failed = this.failedCalls.get(entry.sourceId);
      if (!failed) this.failedCalls.set(entry.sourceId, (failed = new Map()));
      if (failed.has(entry.messageId) || failed.size < MAX_FAILED_CALLS_PER_SOURCE) failed.set(entry.messageId, at);
    }
    const previous = this.lastFailures.get(entry.destinationId);
    if (!previous || Date.parse(previous.at) <= at) {
      this.lastFailures.set(entry.destinationId, {
        at: new Date(at).toISOString(),
        url: entry.url,
        status: entry.status,
        error: entry.error,
        outcome: entry.outcome,
      });
    }
  }

  /**
   * Reads a stream from `sinceMs` with an ordered consumer and keeps following it; after a
   * failure (the stream not made yet, NATS away) it starts again after the last message seen.
   */
  private async follow(
    stream: string,
    subjects: string,
    sinceMs: number,
    handle: (message: JsMsg) => void,
    caughtUp: () => void,
  ): Promise<void> {
    let nextSequence = 0;
    while (!this.stopped) {
      try {
        const consumer = await this.deps.js.consumers.get(stream, {
          filter_subjects: subjects,
          ...(nextSequence > 0
            ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: nextSequence }
            : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(sinceMs).toISOString() }),
        });
        if ((await consumer.info(true)).num_pending === 0) caughtUp();
        const messages = await consumer.consume();
        this.running.add(messages);
        try {
          if (this.stopped) break;
          for await (const message of messages) {
            handle(message);
            nextSequence = message.seq + 1;
            if (message.info.pending === 0) caughtUp();
          }
        } finally {
          this.running.delete(messages);
        }
      } catch (error) {
        if (this.stopped) break;
        this.deps.logger.debug({ err: error, stream }, "overview: reading the stream failed; trying again");
        await new Promise((resolve) => setTimeout(resolve, 2_000).unref());
      }
    }
  }
}
