import type { JetStreamClient } from "@nats-io/jetstream";
import { AttemptLogPublisher } from "./attempt-log-publisher.js";

/** One destination's entries gathered for one message. */
export interface Gathered {
  readonly destinationId: string;
  readonly buf: Buffer;
  /** Bytes written into `buf`: the writer moves it past each entry. */
  bytes: number;
  count: number;
  /** The earliest and latest entries' times, Unix ms (the first is the message's Switchyard-First-At). */
  firstAtMs: number;
  lastAtMs: number;
  /** For the writer's own use: where in `buf` each entry lies, say. */
  readonly marks: number[];
  timer: NodeJS.Timeout | undefined;
}

export interface GatherOptions {
  subject: (destinationId: string) => string;
  /** How long a destination's first entry waits for more. */
  lingerMs: number;
  /** Entries a message holds at most. */
  maxEntries: number;
  /** A message goes out once its entries reach this many bytes. */
  maxBytes: number;
  /** A message's buffer; an entry that does not fit starts the next message. */
  bufferBytes: number;
  /** A message was started: exactly one of `stored` and `lost` follows. */
  started?: (destinationId: string) => void;
  /** A message was stored, at `seq`. */
  stored: (message: Gathered, seq: number) => void;
  /** A message could not be stored (or had no entry): its entries are counted as lost, not retried. */
  lost: (message: Gathered, error: unknown) => void;
}

/**
 * Attempt-log messages gathered per destination (switchyard.v1.DeliveryAttempts, with
 * Switchyard-First-At): entries are written into the destination's buffer, which is published after
 * the linger, or once full, and never waited for, so writing an entry never delays a delivery.
 * Each message started ends in exactly one of `stored` and `lost`.
 */
export class GatheredMessages {
  private readonly pending = new Map<string, Gathered>();
  private readonly publisher: AttemptLogPublisher;

  constructor(
    js: JetStreamClient,
    private readonly options: GatherOptions,
  ) {
    this.publisher = new AttemptLogPublisher(js);
  }

  /** The destination's message with room for an entry of `size` bytes (a full one is published first). */
  room(destinationId: string, size: number, atMs: number): Gathered {
    let message = this.pending.get(destinationId);
    if (message && message.bytes + size > message.buf.length) {
      this.publish(destinationId);
      message = undefined;
    }
    if (!message) {
      message = {
        destinationId,
        buf: Buffer.allocUnsafe(Math.max(this.options.bufferBytes, size)),
        bytes: 0,
        count: 0,
        firstAtMs: atMs,
        lastAtMs: atMs,
        marks: [],
        timer: setTimeout(() => this.publish(destinationId), this.options.lingerMs),
      };
      this.pending.set(destinationId, message);
      this.options.started?.(destinationId);
    }
    message.firstAtMs = Math.min(message.firstAtMs, atMs);
    message.lastAtMs = Math.max(message.lastAtMs, atMs);
    return message;
  }

  /** Counts the entry just written into `message`; a full message goes out. */
  added(message: Gathered): void {
    message.count++;
    if (message.count >= this.options.maxEntries || message.bytes >= this.options.maxBytes) this.publish(message.destinationId);
  }

  /** Publishes everything gathered and waits for every publish under way (at shutdown, and in tests). */
  async flush(): Promise<void> {
    for (const destinationId of [...this.pending.keys()]) this.publish(destinationId);
    await this.publisher.settled();
  }

  private publish(destinationId: string): void {
    const message = this.pending.get(destinationId);
    if (!message) return;
    this.pending.delete(destinationId);
    clearTimeout(message.timer);
    if (message.count === 0) return this.options.lost(message, undefined);
    this.publisher.publish(
      this.options.subject(destinationId),
      message.buf.subarray(0, message.bytes),
      message.firstAtMs,
      (seq) => this.options.stored(message, seq),
      (error) => this.options.lost(message, error),
    );
  }
}
