import type { JetStreamClient } from "@nats-io/jetstream";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, type BusNames } from "@switchyard/bus";
import { insightsApi } from "@switchyard/contracts";
import type { BusConnection, Logger } from "@switchyard/platform";
import type { IngestMetrics } from "./metrics.js";

/** What a RejectedCallsReporter publishes through. */
export interface RejectedCallsReporterOptions {
  bus: BusConnection;
  js: JetStreamClient;
  names: BusNames;
  logger: Logger;
  metrics: IngestMetrics;
  /** How long a report waits for JetStream's acknowledgement; the JetStream client's default when unset. */
  timeoutMs?: number;
}

/**
 * Tells usage how many invalid calls a request refused: one RejectedCalls message on
 * `<ns>.usage.rejected.<sourceId>`. Reports go out in the background: the client's answer never
 * waits for one, and a report that fails is logged and counted
 * (`switchyard_ingest_usage_reports_failed_total`), never failing the request it counts.
 *
 * Its Nats-Msg-Id is `rejected:<sourceId>:<batchId>`, so a batch re-sent with the same id
 * within the duplicate window is counted once, as its accepted calls are stored once.
 */
export class RejectedCallsReporter {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: RejectedCallsReporterOptions) {}

  /** Publishes the report in the background; never throws. */
  report(sourceId: string, batchId: string, receivedAt: Date, count: number): void {
    const { bus, js, names, logger, metrics, timeoutMs } = this.options;
    const failed = (reason: unknown) => {
      metrics.usageReportFailed();
      logger.warn({ err: reason, sourceId, count }, "could not report refused calls to usage");
    };
    if (!bus.isConnected()) return failed(new Error("the event bus is unreachable"));
    let published: Promise<void>;
    try {
      const payload = insightsApi.RejectedCalls.encode({ sourceId, receivedAt, count }).finish();
      published = js
        .publish(names.rejectedUsageSubject(sourceId), payload, {
          msgID: `rejected:${sourceId}:${batchId}`,
          headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.rejectedCalls),
          ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
        })
        .then(() => undefined, failed);
    } catch (error) {
      return failed(error);
    }
    this.inFlight.add(published);
    void published.finally(() => this.inFlight.delete(published));
  }

  /** Resolves once every report sent so far is acknowledged or failed. */
  async idle(): Promise<void> {
    await Promise.all(this.inFlight);
  }
}
