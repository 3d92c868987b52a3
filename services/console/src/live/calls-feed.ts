import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import type { BusNames } from "@switchyard/bus";
import { protoCallToJson } from "@switchyard/calls";
import type { Logger } from "@switchyard/platform";
import { readCallBatch } from "@switchyard/wire";
import type { EventStream } from "./sse.js";
import type { LiveCall } from "./view-types.js";

/** Most calls sent to one browser per second; the rest are counted and reported as skipped. */
export const MAX_CALLS_PER_SECOND = 200;

/**
 * Streams a source's calls to one browser as they arrive: an ordered consumer on the calls
 * stream, filtered to the source's subject, starting with the next message stored ("new"), so
 * opening the debugger costs nothing however long the stream is. The consumer is ephemeral and
 * is deleted when the browser goes.
 */
export async function streamSourceCalls(options: {
  js: JetStreamClient;
  names: BusNames;
  sourceId: string;
  events: EventStream;
  logger: Logger;
}): Promise<void> {
  const { js, names, sourceId, events, logger } = options;
  const consumer = await js.consumers.get(names.callsStream, {
    filter_subjects: names.callsSubject(sourceId),
    deliver_policy: DeliverPolicy.New,
  });
  const messages = await consumer.consume();
  // Deleted with the page: the server would keep an idle ordered consumer for five minutes.
  events.onClose(
    () =>
      void messages
        .close()
        .then(() => consumer.delete())
        .catch(() => undefined),
  );
  events.send("ready", { sourceId });

  let windowStart = Date.now();
  let sentInWindow = 0;
  let skipped = 0;
  const reportSkipped = setInterval(() => {
    if (skipped > 0 && events.send("skipped", { count: skipped })) skipped = 0;
  }, 1_000);
  events.onClose(() => clearInterval(reportSkipped));

  try {
    for await (const message of messages) {
      if (events.isClosed) break;
      let batch;
      try {
        batch = readCallBatch(message.data);
      } catch (error) {
        logger.warn({ err: error, sequence: message.seq }, "live debugger: undecodable calls message");
        continue;
      }
      const receivedAt = batch.receivedAt?.toISOString();
      for (const call of batch.calls) {
        const now = Date.now();
        if (now - windowStart >= 1_000) {
          windowStart = now;
          sentInWindow = 0;
        }
        // Over the rate, or the browser is not keeping up: count instead of queueing without bound.
        if (sentInWindow >= MAX_CALLS_PER_SECOND || !events.writable) {
          skipped++;
          continue;
        }
        sentInWindow++;
        const live: LiveCall = {
          sequence: message.seq,
          batchId: batch.batchId,
          receivedAt,
          call: { ...protoCallToJson(call), ...(receivedAt ? { receivedAt } : {}) },
        };
        events.send("call", live);
      }
    }
  } finally {
    clearInterval(reportSkipped);
  }
}
