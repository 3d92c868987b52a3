import type { Consumer, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "@switchyard/platform";
import type { HandlingFailures } from "./handling-failures.js";

export interface ConcurrentConsumerOptions {
  /** Messages handled at the same time at most. */
  concurrency: number;
  /** While a message is being handled, tell JetStream so this often, so its ack wait never runs out. */
  heartbeatMs: number;
  /** What becomes of a message whose handler throws: redelivered later, or set aside for good. */
  failures: HandlingFailures;
}

/** How long one pull waits for messages before it is renewed (an idle consumer asks again this often). */
const FETCH_EXPIRES_MS = 5_000;
/** Wait before pulling again after a pull failed (NATS unreachable, the consumer gone for a moment). */
const PULL_RETRY_MS = 1_000;

/**
 * Handles the messages of a pull consumer concurrently, up to a limit. A
 * handler acks or naks its message itself; a handler that throws leaves its
 * message to HandlingFailures (redelivered later, or set aside for good).
 *
 * It pulls only as many messages as it has free slots, and starts each one's
 * handler (and its ack-wait heartbeat) as it arrives. A consumer that pulled
 * ahead would hold messages that nothing heartbeats while every slot is busy;
 * when handlers outlast the ack wait (slow receivers), JetStream redelivered
 * those and they were delivered twice.
 */
export class ConcurrentConsumer {
  private readonly inFlight = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;
  private current: ConsumerMessages | undefined;
  private stopping = false;

  private constructor(
    private readonly consumer: Consumer,
    private readonly handle: (message: JsMsg) => Promise<void>,
    private readonly options: ConcurrentConsumerOptions,
    private readonly logger: Logger,
  ) {}

  static start(
    consumer: Consumer,
    handle: (message: JsMsg) => Promise<void>,
    options: ConcurrentConsumerOptions,
    logger: Logger,
  ): ConcurrentConsumer {
    const concurrent = new ConcurrentConsumer(consumer, handle, options, logger);
    concurrent.loop = concurrent.run();
    return concurrent;
  }

  /** Stops taking messages and waits for those being handled. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.current?.stop();
    await this.loop;
    await Promise.all(this.inFlight);
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      while (this.inFlight.size >= this.options.concurrency) await Promise.race(this.inFlight);
      if (this.stopping) break;
      try {
        this.current = await this.consumer.fetch({
          max_messages: this.options.concurrency - this.inFlight.size,
          expires: FETCH_EXPIRES_MS,
        });
        for await (const message of this.current) {
          const task = this.handleOne(message).finally(() => this.inFlight.delete(task));
          this.inFlight.add(task);
        }
      } catch (error) {
        // NATS unreachable, the consumer gone for a moment: ask again shortly.
        if (this.stopping) break;
        this.logger.warn({ err: error }, "pulling messages failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, PULL_RETRY_MS));
      } finally {
        this.current = undefined;
      }
    }
  }

  private async handleOne(message: JsMsg): Promise<void> {
    const heartbeat = setInterval(() => message.working(), this.options.heartbeatMs);
    try {
      await this.handle(message);
    } catch (error) {
      await this.options.failures.failed(message, error);
    } finally {
      clearInterval(heartbeat);
    }
  }
}
