import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import type { BusNames } from "@switchyard/bus";
import { protoCallToJson } from "@switchyard/calls";
import type { Logger } from "@switchyard/platform";
import { readCallBatch } from "@switchyard/wire";
import type { EventStream } from "./sse.js";
import type { LiveCall } from "./view-types.js";

/** Most calls sent to one browser per second; the rest are counted and reported as skipped. */
export const MAX_CALLS_PER_SECOND = 200;
/** Most of the stored calls a viewer may ask for first (`recent`). */
export const MAX_RECENT_CALLS = 50;

/**
 * Streams a source's calls to one browser as they arrive: an ordered consumer on the calls
 * stream, filtered to the source's subject, starting with the next message stored ("new"), so
 * opening the debugger costs nothing however long the stream is. With `recent`, the source's
 * newest stored batch comes first, only its last `recent` calls, so a viewer that needs a real
 * call (the mapping editor's test) has one without waiting. The consumer is ephemeral and is
 * deleted when the browser goes.
 */
export async function streamSourceCalls(options: {
  js: JetStreamClient;
  names: BusNames;
  sourceId: string;
  events: EventStream;
  logger: Logger;
  /** How many of the newest stored calls to send first (0 to MAX_RECENT_CALLS). */
  recent?: number;
}): Promise<void> {
  const { js, names, sourceId, events, logger } = options;
  const recent = Math.min(options.recent ?? 0, MAX_RECENT_CALLS);
  const subject = names.callsSubject(sourceId);
  const newest = recent > 0 ? await (await js.streams.get(names.callsStream)).getMessage({ last_by_subj: subject }) : null;
  const consumer = await js.consumers.get(names.callsStream, {
    filter_subjects: subject,
    ...(newest ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: newest.seq } : { deliver_policy: DeliverPolicy.New }),
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
      // The stored batch asked for: its newest calls only, which a large batch would otherwise crowd out.
      for (const call of message.seq === newest?.seq ? batch.calls.slice(-recent) : batch.calls) {
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
