import type { JetStreamClient } from "@nats-io/jetstream";
import { type AttemptExchange, DeliveryAttempt, type HttpHeader } from "@switchyard/contracts";
import {
  ATTEMPT_LOG_FIRST_AT_HEADER,
  BUS_MESSAGE_TYPE_NAMES,
  busMessageHeaders,
  type BusMessageType,
  type BusNames,
} from "@switchyard/bus";
import type { Logger } from "@switchyard/platform";
import type { UrlAttempt } from "../pipeline/fan-out.js";
import { encodedSize, writeDeliveredAttempt, type DeliveredEntry } from "./delivered-encoder.js";

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
/**
 * Batch publishes awaiting their ack at most. Beyond that the bus is not keeping up: new batches
 * are dropped (and counted) rather than held in memory without bound.
 */
const MAX_IN_FLIGHT = 256;
/** One warning per this long at most about lost entries; the metric counts every one. */
const WARN_EVERY_MS = 10_000;

/** A destination's delivered attempts, already encoded: only bytes are held until the batch is published. */
interface PendingBatch {
  readonly destinationId: string;
  buf: Buffer;
  bytes: number;
  count: number;
  /** When its first (so earliest) attempt was made, Unix ms. */
  firstAtMs: number;
  timer: NodeJS.Timeout | undefined;
}

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
 */
export class DeliveryLog {
  private readonly pending = new Map<string, PendingBatch>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private lastWarnAt = 0;

  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
    private readonly logger: Logger,
    private readonly options: AttemptLogOptions = { batch: 200, lingerMs: 200 },
    /** Counts attempts that could not be recorded (DeliveryMetrics.attemptsNotLogged). */
    private readonly lost: (attempts: number) => void = () => undefined,
  ) {}

  /** A failed attempt or a dead letter; resolves once stored (or given up on: a lost entry never fails the caller). */
  async record(entry: DeliveryAttempt): Promise<void> {
    try {
      await this.js.publish(this.names.deliveryLogSubject(entry.destinationId), DeliveryAttempt.encode(entry).finish(), {
        headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deliveryAttempt),
      });
    } catch (error) {
      // The log is for people; a lost entry must not stop a delivery. The pino line keeps the facts.
      this.lost(1);
      this.logger.warn(
        { err: error, destinationId: entry.destinationId, messageId: entry.messageId },
        "could not record a delivery attempt",
      );
    }
  }

  /**
   * A delivered attempt (2xx), on delivery's hot path: kept by reference and
   * encoded with its destination's others when their batch is published.
   */
  delivered(round: LoggedRound, attempt: UrlAttempt): void {
    const { destinationId } = round;
    // Encoded at once (a few µs): holding the request's objects until the batch goes out would
    // keep them past the young generation's collections, which costs the whole process more.
    const entry: DeliveredEntry = {
      destinationId,
      sourceId: round.sourceId,
      messageId: round.call.messageId,
      attemptNumber: round.attempt,
      atMs: Date.now(),
      attempt,
    };
    const size = encodedSize(entry);
    let batch = this.pending.get(destinationId);
    if (batch && batch.bytes + size > batch.buf.length) {
      this.publish(batch);
      batch = undefined;
    }
    if (!batch) {
      batch = {
        destinationId,
        buf: Buffer.allocUnsafe(Math.max(BATCH_BUFFER_BYTES, size)),
        bytes: 0,
        count: 0,
        firstAtMs: entry.atMs,
        timer: undefined,
      };
      this.pending.set(destinationId, batch);
      const created = batch;
      batch.timer = setTimeout(() => this.publish(created), this.options.lingerMs);
    }
    try {
      batch.bytes = writeDeliveredAttempt(batch.buf, batch.bytes, entry);
      batch.count++;
    } catch (error) {
      this.dropped(1, error, destinationId);
      return;
    }
    if (batch.count >= this.options.batch || batch.bytes >= MAX_BATCH_BYTES) this.publish(batch);
  }

  /** Publishes what is gathered and waits for every publish under way (at shutdown, and in tests). */
  async flush(): Promise<void> {
    for (const batch of [...this.pending.values()]) this.publish(batch);
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private publish(batch: PendingBatch): void {
    if (this.pending.get(batch.destinationId) !== batch) return; // published already (it filled up before its time)
    this.pending.delete(batch.destinationId);
    if (batch.timer) clearTimeout(batch.timer);
    const count = batch.count;
    if (count === 0) return;
    if (this.inFlight.size >= MAX_IN_FLIGHT) {
      this.dropped(count, new Error(`${MAX_IN_FLIGHT} attempt-log publishes are awaiting the bus`), batch.destinationId);
      return;
    }
    const data = batch.buf.subarray(0, batch.bytes);
    const headers = busMessageHeaders(DELIVERED_TYPE);
    headers.set(ATTEMPT_LOG_FIRST_AT_HEADER, String(batch.firstAtMs));
    const published: Promise<unknown> = this.js
      .publish(this.names.deliveredLogSubject(batch.destinationId), data, { headers })
      .then(
        () => undefined,
        (error: unknown) => this.dropped(count, error, batch.destinationId),
      )
      .finally(() => this.inFlight.delete(published));
    this.inFlight.add(published);
  }

  private dropped(attempts: number, error: unknown, destinationId: string): void {
    this.lost(attempts);
    const now = Date.now();
    if (now - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = now;
    this.logger.warn({ err: error, destinationId, attempts }, "could not record delivered attempts in the attempt log");
  }
}

const DELIVERED_TYPE: BusMessageType = BUS_MESSAGE_TYPE_NAMES.deliveryAttempts;

/** What one request sent and got back, credentials masked (see EntryRequest); undefined when no request was made. */
export function exchangeOf(attempt: UrlAttempt): AttemptExchange | undefined {
  const request = attempt.request;
  if (!request) return undefined;
  const { headers } = request;
  const masked = request.entry.loggedHeaders;
  const requestHeaders: HttpHeader[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    requestHeaders.push({ name: headers[i]!, value: i + 1 < masked.length ? masked[i + 1]! : headers[i + 1]! });
  }
  const responseHeaders: HttpHeader[] = [];
  const raw = attempt.responseHeaders;
  if (raw) {
    for (let i = 0; i + 1 < raw.length; i += 2) responseHeaders.push({ name: raw[i]!.toString(), value: raw[i + 1]!.toString() });
  }
  return {
    method: "POST",
    url: request.entry.loggedUrl,
    requestHeaders,
    requestBody: request.body,
    responseHeaders,
    responseBody: attempt.responseBody ?? EMPTY,
    responseBodyTruncated: attempt.responseBodyTruncated ?? false,
  };
}

const EMPTY = Buffer.alloc(0);
