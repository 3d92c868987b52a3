import type { JetStreamClient } from "@nats-io/jetstream";
import { DeliveryAttempt } from "@switchyard/contracts";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, type BusNames } from "@switchyard/bus";
import type { Logger } from "@switchyard/platform";
import type { UrlAttempt } from "../kinds/index.js";

/** What one delivered attempt is, as the log takes it (exported with the log for its benchmark). */
export type { UrlAttempt };
import { AttemptIndex } from "./attempt-index.js";
import { encodedSize, pushLastSummary, writeDeliveredAttempt, type DeliveredEntry } from "@switchyard/wire";
/** What one request sent and got back as the log records it, credentials masked (exported with the log for its benchmark). */
export { exchangeOf } from "@switchyard/wire";
import { GatheredMessages, type Gathered } from "./gathered-messages.js";

export interface AttemptLogOptions {
  /** Delivered attempts of one destination per message at most (DELIVERY_ATTEMPT_LOG_BATCH). */
  batch: number;
  /** How long the first delivered attempt of a batch waits for more (DELIVERY_ATTEMPT_LOG_LINGER_MS). */
  lingerMs: number;
}

/** Where a delivered attempt came from: the round's call and destination. */
export interface LoggedRound {
  readonly destinationId: string;
  readonly sourceId: string;
  readonly attempt: number;
  readonly call: { readonly messageId: string };
}

/** A batch message stays well under NATS's 1 MB default max payload, whatever the bodies. */
const MAX_BATCH_BYTES = 512 * 1024;
/** A batch's first buffer; a batch that outgrows it is published, and the next starts anew. */
const BATCH_BUFFER_BYTES = 256 * 1024;
/** One warning per this long at most about lost entries; the metric counts every one. */
const WARN_EVERY_MS = 10_000;

/**
 * The attempt log's writer: every request made to a destination's URLs, with
 * what was sent and what came back (credentials masked).
 *
 * Failed attempts and dead letters go to `<ns>.deliverylog.<destination>`, one
 * DeliveryAttempt per message, as operators subscribe to them. Delivered
 * attempts, far more numerous, go to their own stream, many to a message
 * (DeliveryAttempts on `<ns>.deliveredlog.<destination>`), so they cannot push
 * failures out. They are gathered per destination and published without
 * being waited for: recording never delays a delivery, and an entry that
 * cannot be recorded is logged and counted, never retried into the way.
 *
 * Once stored, each attempt is indexed (AttemptIndex), which is what pages of
 * the log read.
 */
export class DeliveryLog {
  private readonly batches: GatheredMessages;
  private readonly index: AttemptIndex;
  private lastWarnAt = 0;

  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
    private readonly logger: Logger,
    options: AttemptLogOptions = { batch: 200, lingerMs: 200 },
    /** Counts attempts that could not be recorded (DeliveryMetrics.attemptsNotLogged). */
    private readonly lost: (attempts: number) => void = () => undefined,
  ) {
    const common = { lingerMs: options.lingerMs, maxEntries: options.batch };
    this.batches = new GatheredMessages(js, {
      ...common,
      subject: names.deliveredLogSubject,
      maxBytes: MAX_BATCH_BYTES,
      bufferBytes: BATCH_BUFFER_BYTES,
      // The destination's index entries wait for the batch's (see AttemptIndex).
      started: (destinationId) => this.index.hold(destinationId),
      stored: (batch, seq) => this.indexBatch(batch, seq),
      lost: (batch, error) => {
        if (batch.count > 0) this.dropped(batch.count, error, batch.destinationId);
        this.index.release(batch.destinationId, batch.lastAtMs);
      },
    });
    this.index = new AttemptIndex(js, names, options.lingerMs, (entries, error, destinationId) =>
      this.dropped(entries, error, destinationId),
    );
  }

  /** A failed attempt or a dead letter; resolves once stored (or given up on: a lost entry never fails the caller). */
  async record(entry: DeliveryAttempt): Promise<void> {
    const { destinationId } = entry;
    const indexed = this.index.reserve(destinationId, entry.at?.getTime() ?? Date.now());
    try {
      const stored = await this.js.publish(this.names.deliveryLogSubject(destinationId), DeliveryAttempt.encode(entry).finish(), {
        headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deliveryAttempt),
      });
      const summary = DeliveryAttempt.encode({ ...entry, attemptId: "", exchange: undefined }).finish();
      this.index.fill(destinationId, indexed, summary, `f.${stored.seq}`);
    } catch (error) {
      this.index.drop(destinationId, indexed);
      // The log is for people; a lost entry must not stop a delivery. The pino line keeps the facts.
      this.lost(1);
      this.logger.warn(
        { err: error, destinationId: entry.destinationId, messageId: entry.messageId },
        "could not record a delivery attempt",
      );
    }
  }

  /**
   * A delivered attempt (2xx), on delivery's hot path: encoded at once into
   * its destination's batch, published with the batch.
   */
  delivered(round: LoggedRound, attempt: UrlAttempt): void {
    const { destinationId } = round;
    // Encoded at once: holding the request's objects until the batch goes out would
    // keep them past the young generation's collections, which costs the whole process more.
    const entry: DeliveredEntry = {
      destinationId,
      sourceId: round.sourceId,
      // A batch's request is logged once, under its first call (its calls' ids are in it).
      messageId: attempt.batch ? (attempt.batch.messageIds[0] ?? "") : round.call.messageId,
      attemptNumber: round.attempt,
      atMs: Date.now(),
      attempt,
    };
    const batch = this.batches.room(destinationId, encodedSize(entry), entry.atMs);
    try {
      batch.bytes = writeDeliveredAttempt(batch.buf, batch.bytes, entry);
    } catch (error) {
      this.dropped(1, error, destinationId);
      return;
    }
    pushLastSummary(batch.marks);
    batch.marks.push(entry.atMs);
    this.batches.added(batch);
  }

  /** Publishes what is gathered and waits for every publish under way (at shutdown, and in tests). */
  async flush(): Promise<void> {
    await this.batches.flush();
    await this.index.flush();
  }

  /** Indexes a stored batch's attempts at once (they have waited their linger already), with the failures held for them. */
  private indexBatch(batch: Gathered, seq: number): void {
    const { marks, buf, destinationId } = batch;
    for (let i = 0; i < marks.length; i += 3) {
      this.index.add(destinationId, buf.subarray(marks[i], marks[i + 1]), `d.${seq}.${i / 3}`, marks[i + 2]!);
    }
    this.index.release(destinationId, batch.lastAtMs);
  }

  private dropped(attempts: number, error: unknown, destinationId: string): void {
    this.lost(attempts);
    const now = Date.now();
    if (now - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = now;
    this.logger.warn({ err: error, destinationId, attempts }, "could not record delivered attempts in the attempt log");
  }
}
