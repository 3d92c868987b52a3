import { DeliverPolicy, type Consumer, type ConsumerMessages, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { BUS_MESSAGE_TYPE_HEADER } from "@switchyard/bus";
import type { Logger } from "@switchyard/platform";
import type { StreamMessage } from "./counting.js";

export interface StreamReaderOptions {
  js: JetStreamClient;
  stream: string;
  afterSequence: number;
  handle: (message: StreamMessage) => void | Promise<void>;
  /** Told after each message: its sequence, and how many are left to read. */
  position: (sequence: number, pending: number) => void;
  /** Once caught up, how long to wait before reading again; 0 follows the stream's tail. */
  pauseMs: number;
  logger: Logger;
}

/**
 * Reads one stream in order from just after `afterSequence`, handing each message to `handle`
 * and waiting when it returns a promise. Reading goes in rounds: an ordered consumer (no durable
 * state on the server: where to resume is insights' own checkpoint) reads until nothing is left,
 * is closed, and the next one starts `pauseMs` later from the next sequence. Rounds are cheaper
 * for nats-server than following the tail: its file store keeps everything written to a block
 * in memory while the block has been read within the last few seconds, and a reader at the tail
 * reads every block as it is written, which makes nats-server grow a fresh buffer for each block.
 * A round that fails (nats-server gone, say) is retried from the next sequence, so
 * nothing is skipped or read twice.
 */
/** One round of reading: its consumer and what it delivers. */
interface Round {
  consumer: Consumer;
  messages: ConsumerMessages;
}

export class StreamReader {
  private round: Round | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private done: Promise<void> = Promise.resolve();

  private constructor(private readonly options: StreamReaderOptions) {}

  /** Starts reading; throws when the first consumer cannot be created (as a start-up error). */
  static async start(options: StreamReaderOptions): Promise<StreamReader> {
    const reader = new StreamReader(options);
    const first = await reader.open(options.afterSequence);
    reader.done = reader.run(first);
    return reader;
  }

  /** Stops reading; resolves once the message being handled is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.round?.messages.close();
    await this.done;
  }

  private async open(afterSequence: number): Promise<Round> {
    const consumer = await this.options.js.consumers.get(
      this.options.stream,
      afterSequence > 0
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSequence + 1 }
        : { deliver_policy: DeliverPolicy.All },
    );
    return { consumer, messages: await consumer.consume() };
  }

  /** Ends a round and deletes its consumer (an idle one would stay minutes: see withOrderedConsumer). */
  private async end(round: Round): Promise<void> {
    await round.messages.close().catch(() => undefined);
    await round.consumer.delete().catch(() => undefined);
  }

  /**
   * Ends a round that opened as the reader stopped, and so was never read. Its close() resolves
   * only once its messages are read (nats.js queues the stop behind them), so they are read here,
   * none handled: they are read again from the checkpoint at the next start. Awaiting close()
   * alone can wait forever.
   */
  private async discard(round: Round): Promise<void> {
    const closed = round.messages.close();
    try {
      for await (const message of round.messages) void message;
    } catch {
      // Stopping: how the round ended does not matter.
    }
    await closed;
    await round.consumer.delete().catch(() => undefined);
  }

  private async run(first: Round): Promise<void> {
    const { stream, handle, position, pauseMs, logger } = this.options;
    let after = this.options.afterSequence;
    let round: Round | undefined = first;
    while (!this.stopped) {
      if (round) {
        this.round = round;
        try {
          for await (const message of round.messages) {
            const handled = handle(toStreamMessage(message));
            if (handled) await handled;
            after = message.seq;
            position(message.seq, message.info.pending);
            if (this.stopped || (pauseMs > 0 && message.info.pending === 0)) break;
          }
        } catch (error) {
          logger.warn({ err: error, stream, after }, "reading a stream failed; reading again from the next message");
        }
        await this.end(round);
      }
      await this.pause(round ? pauseMs : Math.max(pauseMs, 1_000));
      if (this.stopped) break;
      try {
        round = await this.open(after);
        if (this.stopped) await this.discard(round);
      } catch (error) {
        logger.warn({ err: error, stream, after }, "could not start reading a stream; trying again");
        round = undefined;
      }
    }
  }

  private pause(ms: number): Promise<void> {
    if (ms <= 0 || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

function toStreamMessage(message: JsMsg): StreamMessage {
  return {
    seq: message.seq,
    subject: message.subject,
    data: message.data,
    storedAtMs: Math.floor(message.info.timestampNanos / 1e6),
    type: message.headers?.get(BUS_MESSAGE_TYPE_HEADER) || undefined,
  };
}
