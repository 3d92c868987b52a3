import type { JetStreamClient } from "@nats-io/jetstream";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, type BusNames } from "@switchyard/bus";
import { insightsApi } from "@switchyard/contracts";

/**
 * What became of calls at one destination while one stored message (a batch of the calls
 * stream, or a message of the retry stream) was handled: counted as it happens, reported once.
 */
export class OutcomeTally {
  /** Calls delivered (some URL answered 2xx). */
  delivered = 0;
  /** Calls the connection's filter did not match. */
  filtered = 0;
  /** Requests that failed, each URL's once. */
  failed = 0;
  /** Calls dead-lettered. */
  deadLettered = 0;

  constructor(
    readonly sourceId: string,
    readonly destinationId: string,
  ) {}

  get empty(): boolean {
    return this.delivered === 0 && this.filtered === 0 && this.failed === 0 && this.deadLettered === 0;
  }
}

/**
 * Publishes DeliveryOutcomes on `<ns>.usage.delivery.<destinationId>`, one per handled message
 * and destination, before that message is acked. Its id names the destination and the stored
 * message (`calls-<sequence>` or `retry-<sequence>`): handled again after a crash, or after a
 * failure that sent it back, the message reports under the same id, and the usage stream keeps
 * the first report only.
 */
export class OutcomeReports {
  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
  ) {}

  /** Publishes the tally, unless nothing came of the calls yet (all deferred, say); `origin` names the handled message. */
  async publish(tally: OutcomeTally, origin: string): Promise<void> {
    if (tally.empty) return;
    const report: insightsApi.DeliveryOutcomes = {
      sourceId: tally.sourceId,
      destinationId: tally.destinationId,
      at: new Date(),
      delivered: tally.delivered,
      filtered: tally.filtered,
      failed: tally.failed,
      deadLettered: tally.deadLettered,
    };
    await this.js.publish(this.names.deliveryUsageSubject(tally.destinationId), insightsApi.DeliveryOutcomes.encode(report).finish(), {
      msgID: `outcomes:${tally.destinationId}:${origin}`,
      headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deliveryOutcomes),
    });
  }
}
