import { headers } from "@nats-io/nats-core";
import type { JetStreamClient } from "@nats-io/jetstream";
import { BUS_MESSAGE_TYPE_HEADER } from "@switchyard/contracts";
import { ServiceError, type BusConnection, type BusNames } from "@switchyard/platform";
import type { IngestMetrics } from "./metrics.js";

const BATCH_TYPE = "switchyard.v1.CallBatch";

/** A batch ready to publish: `payload` is the encoded switchyard.v1.CallBatch. */
export interface EncodedBatch {
  batchId: string;
  sourceId: string;
  payload: Uint8Array;
}

/**
 * Publishes accepted batches to the calls stream and reports only what
 * JetStream confirmed. Nats-Msg-Id is "<source>:<batch id>", so a re-sent
 * batch inside the duplicate window is stored once.
 */
export class BatchPublisher {
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly bus: BusConnection,
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
    private readonly timeoutMs: number,
    private readonly metrics: IngestMetrics,
  ) {}

  async publish(batch: EncodedBatch): Promise<{ duplicate: boolean; sequence: number }> {
    if (!this.bus.isConnected()) {
      throw new ServiceError("UNAVAILABLE", "the event bus is unreachable; nothing was stored, retry with the same batch id");
    }
    const header = headers();
    header.set(BUS_MESSAGE_TYPE_HEADER, BATCH_TYPE);
    this.inFlight++;
    const started = performance.now();
    try {
      const ack = await this.js.publish(this.names.callsSubject(batch.sourceId), batch.payload, {
        msgID: `${batch.sourceId}:${batch.batchId}`,
        headers: header,
        timeout: this.timeoutMs,
      });
      this.metrics.published((performance.now() - started) / 1000, true);
      return { duplicate: ack.duplicate, sequence: ack.seq };
    } catch (error) {
      this.metrics.published((performance.now() - started) / 1000, false);
      throw new ServiceError("UNAVAILABLE", "JetStream did not confirm the batch; retry with the same batch id", { cause: error });
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** Resolves once no publish is waiting for its acknowledgement. */
  async idle(): Promise<void> {
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }
}
