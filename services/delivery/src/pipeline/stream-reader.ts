import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import { withOrderedConsumer } from "@switchyard/bus";

export interface StoredEntry {
  sequence: number;
  subject: string;
  data: Uint8Array;
}

/**
 * Reads the messages of a stream (optionally one subject, optionally after a
 * sequence) with an ordered consumer, up to `limit`. It asks the consumer how
 * many are pending first, so it never waits for messages that are not there.
 */
export async function readStream(
  js: JetStreamClient,
  stream: string,
  options: { subject?: string; afterSequence?: number; limit: number },
): Promise<StoredEntry[]> {
  const consumerOptions = {
    ...(options.subject ? { filter_subjects: options.subject } : {}),
    ...(options.afterSequence ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: options.afterSequence + 1 } : {}),
  };
  return withOrderedConsumer(js, stream, consumerOptions, async (consumer) => {
    const pending = (await consumer.info(true)).num_pending;
    const wanted = Math.min(pending, options.limit);
    const entries: StoredEntry[] = [];
    if (wanted === 0) return entries;
    const messages = await consumer.fetch({ max_messages: wanted, expires: 5_000 });
    for await (const message of messages) {
      entries.push({ sequence: message.seq, subject: message.subject, data: message.data });
      if (entries.length === wanted) break;
    }
    return entries;
  });
}
