import type { Consumer, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "@switchyard/platform";

export interface ConcurrentConsumerOptions {
  /** Messages handled at the same time at most. */
  concurrency: number;
  /** While a message is being handled, tell JetStream so this often, so its ack wait never runs out. */
  heartbeatMs: number;
  /**
   * Redelivery delay after the handler failed unexpectedly (e.g. NATS was
   * unreachable); it doubles with each delivery of the same message, up to maxFailureDelayMs.
   */
  failureDelayMs: number;
  maxFailureDelayMs: number;
  /**
   * Failed handlings after which a message is given to `setAside` instead of
   * being redelivered again: nothing comes back without bound. Counted by
   * each process (a retry task's delivery count also counts its parked
   * waits, so JetStream's count cannot tell), so with N replicas a message is
   * handled at most N × this many times.
   */
  maxFailures: number;
  /** Takes a message out of its stream for good (and acks it); throws when it could not. */
  setAside: (message: JsMsg, error: unknown) => Promise<void>;
}

/** How long one pull waits for messages before it is renewed (an idle consumer asks again this often). */
const FETCH_EXPIRES_MS = 5_000;
/** Failure counts kept at most: only messages that failed and wait for redelivery have one. */
const MAX_TRACKED_FAILURES = 100_000;

/**
 * Handles the messages of a pull consumer concurrently, up to a limit. A
 * handler acks or naks its message itself; a handler that throws gets its
 * message redelivered after a growing delay, so nothing is lost to a passing
 * failure, and after maxFailures it is set aside (the poison stream), so a
 * message that fails every time cannot loop.
 *
 * It pulls only as many messages as it has free slots, and starts each one's
 * handler (and its ack-wait heartbeat) as it arrives. A consumer that pulled
 * ahead would hold messages that nothing heartbeats while every slot is busy;
 * when handlers outlast the ack wait (slow receivers), JetStream redelivered
 * those and they were delivered twice.
 */
export class ConcurrentConsumer {
  private readonly inFlight = new Set<Promise<void>>();
  /** Failed handlings by stream sequence, oldest first. */
  private readonly failures = new Map<number, number>();
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
        await new Promise((resolve) => setTimeout(resolve, this.options.failureDelayMs));
      } finally {
        this.current = undefined;
      }
    }
  }

  private async handleOne(message: JsMsg): Promise<void> {
    const heartbeat = setInterval(() => message.working(), this.options.heartbeatMs);
    try {
      await this.handle(message);
      this.failures.delete(message.seq);
    } catch (error) {
      await this.failed(message, error);
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async failed(message: JsMsg, error: unknown): Promise<void> {
    const failures = (this.failures.get(message.seq) ?? 0) + 1;
    this.failures.delete(message.seq);
    if (failures >= this.options.maxFailures) {
      try {
        await this.options.setAside(message, error);
        return;
      } catch (setAsideError) {
        // The bus itself is failing: keep the message, and try again on its next delivery.
        this.logger.warn({ err: setAsideError, subject: message.subject, seq: message.seq }, "could not set a failing message aside");
      }
    } else {
      this.logger.warn(
        { err: error, subject: message.subject, seq: message.seq, failures },
        "handling failed; the message will be redelivered",
      );
    }
    this.failures.set(message.seq, failures);
    if (this.failures.size > MAX_TRACKED_FAILURES) this.failures.delete(this.failures.keys().next().value!);
    message.nak(failureDelay(failures, this.options));
  }
}

/** The redelivery delay after a message's `failures`-th failed handling. */
export function failureDelay(failures: number, options: Pick<ConcurrentConsumerOptions, "failureDelayMs" | "maxFailureDelayMs">): number {
  const doublings = Math.min(Math.max(failures - 1, 0), 30);
  return Math.min(options.failureDelayMs * 2 ** doublings, options.maxFailureDelayMs);
}
