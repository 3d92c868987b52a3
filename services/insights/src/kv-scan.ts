import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";

/** KV marks a deleted or purged key with this header on its last message. */
const KV_OPERATION_HEADER = "KV-Operation";

/**
 * The current values of every key of a KV bucket matching `keyFilter` (NATS wildcards), read as
 * the KV client lists keys: one ordered consumer over the bucket's stream, from the last message
 * of each key, until none is pending. Hundreds of records come in one pass rather than a get per
 * key. A key written while it runs is read again (the later value wins), never missed.
 */
export async function readLatestValues<Value>(
  js: JetStreamClient,
  bucket: string,
  keyFilter: string,
): Promise<{ key: string; value: Value }[]> {
  const prefix = `$KV.${bucket}.`;
  const consumer = await js.consumers.getPushConsumer(`KV_${bucket}`, {
    filter_subjects: `${prefix}${keyFilter}`,
    deliver_policy: DeliverPolicy.LastPerSubject,
  });
  const values = new Map<string, Value | undefined>();
  // One message per key at the start (its last). Every key there then is delivered at least once
  // (a deleted one as its marker), so fewer keys than that are not yet all of them, whatever the
  // messages' own pending count says: nats-server 2.9 can report none pending early while writers
  // rewrite keys.
  const keysAtStart = (await consumer.info(true)).num_pending;
  if (keysAtStart === 0) return [];
  const decoder = new TextDecoder();
  let failure: unknown;
  const messages = await consumer.consume({
    callback: (message) => {
      const key = message.subject.slice(prefix.length);
      const operation = message.headers?.get(KV_OPERATION_HEADER);
      try {
        values.set(key, operation === "DEL" || operation === "PURGE" ? undefined : (JSON.parse(decoder.decode(message.data)) as Value));
      } catch (error) {
        failure ??= error;
      }
      if (message.info.pending === 0 && values.size >= keysAtStart) void messages.close();
    },
  });
  void (async () => {
    // A heartbeat means the consumer has nothing more to send (the last key it had was deleted, or
    // a key counted at the start went without a marker: expired, or purged from the stream).
    for await (const status of messages.status()) if (status.type === "heartbeat") void messages.close();
  })();
  await messages.closed();
  if (failure) throw failure;
  return [...values].filter((entry): entry is [string, Value] => entry[1] !== undefined).map(([key, value]) => ({ key, value }));
}
