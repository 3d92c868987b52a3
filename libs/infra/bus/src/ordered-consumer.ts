import type { Consumer, JetStreamClient, OrderedConsumerOptions } from "@nats-io/jetstream";

/**
 * Runs `use` with an ordered consumer made for this one read, and deletes the consumer afterwards
 * (not waited for). An ordered consumer is ephemeral, but the server keeps an idle one for five
 * minutes; made per request or per round of reading, hundreds would stay around, and a stream's
 * consumers are each told of every message it stores.
 */
export async function withOrderedConsumer<T>(
  js: JetStreamClient,
  stream: string,
  options: Partial<OrderedConsumerOptions>,
  use: (consumer: Consumer) => Promise<T>,
): Promise<T> {
  const consumer = await js.consumers.get(stream, options);
  try {
    return await use(consumer);
  } finally {
    void consumer.delete().catch(() => undefined);
  }
}
