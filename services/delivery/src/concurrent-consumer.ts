import type { ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "@switchyard/platform";

export interface ConcurrentConsumerOptions {
  /** Messages handled at the same time at most. */
  concurrency: number;
  /** While a message is being handled, tell JetStream so this often, so its ack wait never runs out. */
  heartbeatMs: number;
  /** Redelivery delay after the handler failed unexpectedly (e.g. NATS was unreachable). */
  failureDelayMs: number;
}

/**
 * Handles the messages of a pull consumer concurrently, up to a limit. A
 * handler acks or naks its message itself; a handler that throws gets its
 * message redelivered after a delay, so nothing is lost to a passing failure.
 */
export class ConcurrentConsumer {
  private readonly inFlight = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly messages: ConsumerMessages,
    private readonly handle: (message: JsMsg) => Promise<void>,
    private readonly options: ConcurrentConsumerOptions,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  /** Stops taking messages and waits for those being handled. */
  async stop(): Promise<void> {
    this.messages.stop();
    await this.loop;
    await Promise.all(this.inFlight);
  }

  private async run(): Promise<void> {
    for await (const message of this.messages) {
      while (this.inFlight.size >= this.options.concurrency) await Promise.race(this.inFlight);
      const task = this.handleOne(message).finally(() => this.inFlight.delete(task));
      this.inFlight.add(task);
    }
  }

  private async handleOne(message: JsMsg): Promise<void> {
    const heartbeat = setInterval(() => message.working(), this.options.heartbeatMs);
    try {
      await this.handle(message);
    } catch (error) {
      this.logger.warn({ err: error, subject: message.subject, seq: message.seq }, "handling failed; the message will be redelivered");
      message.nak(this.options.failureDelayMs);
    } finally {
      clearInterval(heartbeat);
    }
  }
}
