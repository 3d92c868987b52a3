import { headers } from "@nats-io/nats-core";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { BusNames } from "./bus-names.js";
import { BUS_MESSAGE_TYPE_HEADER } from "./headers.js";
import { CALLS_MAX_MESSAGE_BYTES } from "./streams.js";
import { ServiceError, type BusConnection } from "@switchyard/platform";

const BATCH_TYPE = "switchyard.v1.CallBatch";
/** Room left in a message for its headers (Nats-Msg-Id with a batch id of up to 128 characters, the type). */
const HEADER_ROOM_BYTES = 2048;

/** What the publisher reports: each publish's time to acknowledgement and whether JetStream confirmed it. */
export interface PublishMetrics {
  published(seconds: number, confirmed: boolean): void;
}

/** A batch ready to publish: `payload` is the encoded switchyard.v1.CallBatch. */
export interface EncodedBatch {
  batchId: string;
  sourceId: string;
  payload: Uint8Array;
  /** Which of the batch's accepted calls this message holds, when the batch is published in parts. */
  part?: { first: number; last: number };
}

/**
 * Publishes accepted batches to the calls stream and reports only what
 * JetStream confirmed. Nats-Msg-Id is "<source>:<batch id>", so a re-sent
 * batch inside the duplicate window is stored once; a part of a batch too
 * large for one message adds "#calls=<first>-<last>" (positions among the
 * accepted calls), so a re-send split the same way is stored once too.
 */
export class BatchPublisher {
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly bus: BusConnection,
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
    private readonly timeoutMs: number,
    private readonly metrics: PublishMetrics,
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
        msgID: batch.part
          ? `${batch.sourceId}:${batch.batchId}#calls=${batch.part.first}-${batch.part.last}`
          : `${batch.sourceId}:${batch.batchId}`,
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

  /** The largest CallBatch payload one message may carry: the calls stream's limit or the server's, less room for headers. */
  maxPayloadBytes(): number {
    return Math.min(CALLS_MAX_MESSAGE_BYTES, this.bus.nc.info?.max_payload ?? CALLS_MAX_MESSAGE_BYTES) - HEADER_ROOM_BYTES;
  }

  /** Resolves once no publish is waiting for its acknowledgement. */
  async idle(): Promise<void> {
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }
}
