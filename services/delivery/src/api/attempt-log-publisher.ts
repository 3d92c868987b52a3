import type { JetStreamClient } from "@nats-io/jetstream";
import { ATTEMPT_LOG_FIRST_AT_HEADER, BUS_MESSAGE_TYPE_NAMES, busMessageHeaders } from "@switchyard/bus";

/**
 * Publishes awaiting their ack at most. Beyond that the bus is not keeping up: new messages are
 * dropped (and counted by the caller) rather than held in memory without bound.
 */
const MAX_IN_FLIGHT = 256;

/**
 * Publishes attempt-log messages (switchyard.v1.DeliveryAttempts, with Switchyard-First-At)
 * without being waited for: writing the log never delays a delivery.
 */
export class AttemptLogPublisher {
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly js: JetStreamClient) {}

  /** Publishes `data`; then exactly one of `stored` (with its sequence) and `lost` is called. */
  publish(subject: string, data: Uint8Array, firstAtMs: number, stored: (seq: number) => void, lost: (error: unknown) => void): void {
    if (this.inFlight.size >= MAX_IN_FLIGHT) return lost(new Error(`${MAX_IN_FLIGHT} attempt-log publishes are awaiting the bus`));
    const headers = busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deliveryAttempts);
    headers.set(ATTEMPT_LOG_FIRST_AT_HEADER, String(firstAtMs));
    const published: Promise<unknown> = this.js
      .publish(subject, data, { headers })
      .then((ack) => stored(ack.seq), lost)
      .finally(() => this.inFlight.delete(published));
    this.inFlight.add(published);
  }

  /** Waits for every publish under way, and those their callbacks start. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }
}
