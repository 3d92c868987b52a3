import type { JetStreamClient } from "@nats-io/jetstream";
import { DeliveryAttempt } from "@switchyard/contracts";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, type BusNames } from "@switchyard/bus";
import type { Logger } from "@switchyard/platform";
import { readStream } from "../pipeline/stream-reader.js";

/** Most entries one listing reads from the log stream. */
const MAX_SCAN = 100_000;

/**
 * The delivery log: every failed attempt and every dead letter, kept on its
 * own stream (one subject per destination) for operators to list.
 */
export class DeliveryLog {
  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
    private readonly logger: Logger,
  ) {}

  async record(entry: DeliveryAttempt): Promise<void> {
    try {
      await this.js.publish(this.names.deliveryLogSubject(entry.destinationId), DeliveryAttempt.encode(entry).finish(), {
        headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deliveryAttempt),
      });
    } catch (error) {
      // The log is for people; a lost entry must not stop a delivery. The pino line keeps the facts.
      this.logger.warn(
        { err: error, destinationId: entry.destinationId, messageId: entry.messageId },
        "could not record a delivery attempt",
      );
    }
  }

  /** The newest `limit` entries, oldest first, optionally of one destination and one call. */
  async list(options: { destinationId?: string; messageId?: string; limit: number }): Promise<DeliveryAttempt[]> {
    const entries = await readStream(this.js, this.names.deliveryLogStream, {
      ...(options.destinationId ? { subject: this.names.deliveryLogSubject(options.destinationId) } : {}),
      limit: MAX_SCAN,
    });
    const attempts = entries.map((entry) => DeliveryAttempt.decode(entry.data));
    const matching = options.messageId ? attempts.filter((attempt) => attempt.messageId === options.messageId) : attempts;
    return matching.slice(-options.limit);
  }
}
