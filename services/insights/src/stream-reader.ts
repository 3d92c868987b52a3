import { DeliverPolicy, type ConsumerMessages, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { BUS_MESSAGE_TYPE_HEADER } from "@switchyard/bus";
import type { Logger } from "@switchyard/platform";
import type { StreamMessage } from "./counting.js";

/**
 * Reads one stream in order from just after `afterSequence` with an ordered consumer (no
 * durable state on the server: where to resume is insights' own checkpoint), handing each
 * message to `handle` and waiting when it returns a promise. Ordered consumers are recreated by
 * the client after a disconnect, from the next sequence, so nothing is skipped or repeated.
 */
export class StreamReader {
  private constructor(
    private readonly messages: ConsumerMessages,
    private readonly done: Promise<void>,
    private readonly state: { stopped: boolean },
  ) {}

  static async start(options: {
    js: JetStreamClient;
    stream: string;
    afterSequence: number;
    handle: (message: StreamMessage) => void | Promise<void>;
    /** Told after each message: its sequence, and how many are left to read. */
    position: (sequence: number, pending: number) => void;
    logger: Logger;
  }): Promise<StreamReader> {
    const { js, stream, afterSequence, handle, position, logger } = options;
    const consumer = await js.consumers.get(
      stream,
      afterSequence > 0
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSequence + 1 }
        : { deliver_policy: DeliverPolicy.All },
    );
    const messages = await consumer.consume();
    const state = { stopped: false };
    const done = (async () => {
      for await (const message of messages) {
        const handled = handle(toStreamMessage(message));
        if (handled) await handled;
        position(message.seq, message.info.pending);
        if (state.stopped) break;
      }
    })().catch((error: unknown) => logger.error({ err: error, stream }, "reading a stream stopped"));
    return new StreamReader(messages, done, state);
  }

  /** Stops reading; resolves once the message being handled is done. */
  async stop(): Promise<void> {
    this.state.stopped = true;
    await this.messages.close();
    await this.done;
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
