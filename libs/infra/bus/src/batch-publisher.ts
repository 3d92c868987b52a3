import type { JetStreamClient } from "@nats-io/jetstream";
import { CallBatch, type Call } from "@switchyard/contracts";
import { ServiceError, type BusConnection } from "@switchyard/platform";
import type { BusNames } from "./bus-names.js";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders } from "./headers.js";
import { CALLS_MAX_MESSAGE_BYTES } from "./streams.js";

/** Room left in a message for its headers (Nats-Msg-Id with a batch id of up to 128 characters, the type). */
const HEADER_ROOM_BYTES = 2048;

/** Calls per batch publishCalls() makes: small identify or delete calls, well under the 500 KB batch limit. */
export const PUBLISHED_BATCH_CALLS = 500;
/** Batches publishCalls() keeps waiting for JetStream's acknowledgement at once. */
const PUBLISH_CALLS_IN_FLIGHT = 8;

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
  /**
   * The calls are ones their source blocks: published on `<ns>.filtered.<sourceId>` (the filtered
   * stream, which no delivery replica reads) rather than the calls subject. `part` then counts
   * among the blocked calls.
   */
  blocked?: boolean;
}

/** What a BatchPublisher publishes through. */
export interface BatchPublisherOptions {
  bus: BusConnection;
  js: JetStreamClient;
  names: BusNames;
  /** How long a publish waits for JetStream's acknowledgement; the JetStream client's default when unset. */
  timeoutMs?: number;
  /** Told about every publish, when given. */
  metrics?: PublishMetrics;
}

/**
 * Publishes call batches to the calls stream, for every service that puts
 * calls on the bus (ingest the calls it accepts, audience-sync the calls it
 * makes), or ingest's blocked calls to the filtered stream, and reports only
 * what JetStream confirmed. Nats-Msg-Id is
 * "<source>:<batch id>", so a re-sent batch inside the duplicate window is
 * stored once; a part of a batch too large for one message adds
 * "#calls=<first>-<last>" (positions among the accepted calls), so a re-send
 * split the same way is stored once too.
 */
export class BatchPublisher {
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: BatchPublisherOptions) {}

  /**
   * Publishes one encoded batch (or part of one) and resolves on JetStream's
   * acknowledgement. Throws ServiceError(UNAVAILABLE) at once when the bus is
   * down, and when JetStream did not confirm.
   */
  async publish(batch: EncodedBatch): Promise<{ duplicate: boolean; sequence: number }> {
    const { bus, js, names, timeoutMs, metrics } = this.options;
    if (!bus.isConnected()) {
      throw new ServiceError("UNAVAILABLE", "the event bus is unreachable; nothing was stored, retry with the same batch id");
    }
    this.inFlight++;
    const started = performance.now();
    try {
      const subject = batch.blocked ? names.filteredSubject(batch.sourceId) : names.callsSubject(batch.sourceId);
      // The same id on either stream: each stream has its own duplicate window.
      const ack = await js.publish(subject, batch.payload, {
        msgID: batch.part
          ? `${batch.sourceId}:${batch.batchId}#calls=${batch.part.first}-${batch.part.last}`
          : `${batch.sourceId}:${batch.batchId}`,
        headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch),
        ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
      });
      metrics?.published((performance.now() - started) / 1000, true);
      return { duplicate: ack.duplicate, sequence: ack.seq };
    } catch (error) {
      metrics?.published((performance.now() - started) / 1000, false);
      throw new ServiceError("UNAVAILABLE", "JetStream did not confirm the batch; retry with the same batch id", { cause: error });
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /**
   * Publishes calls a service makes itself (audience changes, deletion
   * notifications) in batches of PUBLISHED_BATCH_CALLS, a few at a time.
   * Batch ids are "<batchIdPrefix>:<position>": with calls in a deterministic
   * order, re-running the same work is stored once within the duplicate
   * window. Resolves with the number of calls once JetStream acknowledged
   * every batch; rejects on the first batch it did not.
   */
  async publishCalls(sourceId: string, batchIdPrefix: string, calls: Iterable<Call>): Promise<number> {
    const inFlight = new Set<Promise<unknown>>();
    // Kept apart from the set: a batch that fails while nothing awaits it leaves the set,
    // and its failure must still fail the whole run rather than pass for published.
    let failed: { error: unknown } | undefined;
    let batch: Call[] = [];
    let batchNumber = 0;
    let published = 0;
    const flush = async () => {
      if (failed) throw failed.error;
      if (batch.length === 0) return;
      const publish = this.publishCallBatch(sourceId, `${batchIdPrefix}:${batchNumber++}`, batch);
      batch = [];
      inFlight.add(publish);
      void publish.then(
        () => inFlight.delete(publish),
        (error: unknown) => {
          inFlight.delete(publish);
          failed ??= { error };
        },
      );
      if (inFlight.size >= PUBLISH_CALLS_IN_FLIGHT) await Promise.race(inFlight);
    };
    for (const call of calls) {
      batch.push(call);
      published++;
      if (batch.length === PUBLISHED_BATCH_CALLS) await flush();
    }
    await flush();
    await Promise.allSettled(inFlight);
    if (failed) throw failed.error;
    return published;
  }

  /**
   * Encodes the batch at once and resolves on JetStream's acknowledgement.
   * Deliberately not an async function: one would keep `calls` (its
   * parameter) alive until the acknowledgement, so every call of every batch
   * in flight would outlive a few young-generation GCs, be promoted, and
   * pile up as garbage in the old generation (tens of MB per million calls).
   */
  private publishCallBatch(sourceId: string, batchId: string, calls: Call[]): Promise<unknown> {
    const receivedAt = calls[0]?.receivedAt ?? new Date();
    const payload = CallBatch.encode({ batchId, sourceId, receivedAt, calls }).finish();
    return this.publish({ batchId, sourceId, payload });
  }

  /** The largest CallBatch payload one message may carry: the calls stream's limit or the server's, less room for headers. */
  maxPayloadBytes(): number {
    return Math.min(CALLS_MAX_MESSAGE_BYTES, this.options.bus.nc.info?.max_payload ?? CALLS_MAX_MESSAGE_BYTES) - HEADER_ROOM_BYTES;
  }

  /** Resolves once no publish is waiting for its acknowledgement. */
  async idle(): Promise<void> {
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }
}
