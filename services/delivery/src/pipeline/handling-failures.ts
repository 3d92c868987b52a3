import type { JsMsg } from "@nats-io/jetstream";
import type { Logger } from "@switchyard/platform";

export interface HandlingFailureOptions {
  /** Redelivery delay after a message's first failed handling; it doubles with each further failure. */
  failureDelayMs: number;
  maxFailureDelayMs: number;
  /**
   * Failed handlings after which a message is set aside instead of being
   * redelivered again: nothing comes back without bound. Counted by each
   * process (a retry task's delivery count also counts its parked waits, so
   * JetStream's count cannot tell), so with N replicas a message is handled
   * at most N × this many times.
   */
  maxFailures: number;
}

/** Failure counts kept at most: only messages that failed lately have one. */
const MAX_TRACKED = 100_000;
/**
 * A failure this long after a message's previous one starts its count anew:
 * passing troubles hours apart never add up, while a message that fails
 * every time (redelivered within the 30 s longest delay) keeps counting.
 */
const FAILURE_MEMORY_MS = 10 * 60_000;

/**
 * What happens to a bus message whose handling threw (a bug, or the bus
 * failing for longer than a blip; a failed webhook is not a handling
 * failure): it is redelivered after a growing delay, so a passing failure
 * loses nothing, and after maxFailures it is set aside (the poison stream),
 * so a message that fails every time cannot loop.
 */
export class HandlingFailures {
  /** By stream sequence, oldest first. */
  private readonly recent = new Map<number, { failures: number; lastAt: number }>();

  constructor(
    private readonly options: HandlingFailureOptions,
    /** Takes a message out of its stream for good (and acks it); throws when it could not. */
    private readonly setAside: (message: JsMsg, error: unknown) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  /** Naks the message with the next delay, or sets it aside once it has failed maxFailures times. */
  async failed(message: JsMsg, error: unknown): Promise<void> {
    const now = Date.now();
    const previous = this.recent.get(message.seq);
    const failures = previous && now - previous.lastAt < FAILURE_MEMORY_MS ? previous.failures + 1 : 1;
    this.recent.delete(message.seq);
    if (failures >= this.options.maxFailures) {
      try {
        await this.setAside(message, error);
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
    this.recent.set(message.seq, { failures, lastAt: now });
    if (this.recent.size > MAX_TRACKED) this.recent.delete(this.recent.keys().next().value!);
    message.nak(failureDelay(failures, this.options));
  }
}

/** The redelivery delay after a message's `failures`-th failed handling. */
export function failureDelay(failures: number, options: Pick<HandlingFailureOptions, "failureDelayMs" | "maxFailureDelayMs">): number {
  const doublings = Math.min(Math.max(failures - 1, 0), 30);
  return Math.min(options.failureDelayMs * 2 ** doublings, options.maxFailureDelayMs);
}
