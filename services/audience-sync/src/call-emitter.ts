import { createHash } from "node:crypto";
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers } from "@nats-io/nats-core";
import { BUS_MESSAGE_TYPE_HEADER } from "@switchyard/bus";
import { CallBatch, type Call } from "@switchyard/contracts";
import type { BusNames } from "@switchyard/bus";

/** Calls per CallBatch: small identify calls, well under the 500 KB batch limit. */
const BATCH_SIZE = 500;
/** Batches waiting for JetStream's acknowledgement at once. */
const MAX_IN_FLIGHT = 8;

/**
 * Publishes calls that Switchyard makes itself (audience changes, deletion
 * notifications) onto the calls stream, in batches like a client's, so they
 * reach every destination connected to the source. Batch ids are derived
 * from `batchIdPrefix` and the batch's position, and calls come in a
 * deterministic order, so re-running the same work is stored once within
 * the duplicate window. Resolves once JetStream acknowledged every batch.
 */
export class CallEmitter {
  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
  ) {}

  async emit(sourceId: string, batchIdPrefix: string, calls: Iterable<Call>): Promise<number> {
    const inFlight = new Set<Promise<unknown>>();
    let batch: Call[] = [];
    let batchNumber = 0;
    let emitted = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const publish = this.publish(sourceId, `${batchIdPrefix}:${batchNumber++}`, batch);
      batch = [];
      inFlight.add(publish);
      void publish.finally(() => inFlight.delete(publish)).catch(() => undefined);
      if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
    };
    for (const call of calls) {
      batch.push(call);
      emitted++;
      if (batch.length === BATCH_SIZE) await flush();
    }
    await flush();
    await Promise.all(inFlight);
    return emitted;
  }

  /**
   * Encodes the batch at once and resolves on JetStream's acknowledgement.
   * Deliberately not an async function: one would keep `calls` (its
   * parameter) alive until the acknowledgement, so every call of every batch
   * in flight would outlive a few young-generation GCs, be promoted, and
   * pile up as garbage in the old generation (tens of MB per million calls).
   */
  private publish(sourceId: string, batchId: string, calls: Call[]): Promise<unknown> {
    const receivedAt = calls[0]?.receivedAt ?? new Date();
    const header = headers();
    header.set(BUS_MESSAGE_TYPE_HEADER, "switchyard.v1.CallBatch");
    const data = CallBatch.encode({ batchId, sourceId, receivedAt, calls }).finish();
    return this.js.publish(this.names.callsSubject(sourceId), data, { msgID: `${sourceId}:${batchId}`, headers: header });
  }
}

/** A UUID-shaped id derived from its parts, so the same work yields the same message id. */
export function deterministicId(...parts: string[]): string {
  const hex = createHash("sha256").update(parts.join("\n")).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
