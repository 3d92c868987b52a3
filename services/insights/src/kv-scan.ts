import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";

/** KV marks a deleted or purged key with this header on its last message. */
const KV_OPERATION_HEADER = "KV-Operation";
const FETCH_EXPIRES_MS = 5_000;

/**
 * The current values of every key of a KV bucket matching `keyFilter` (NATS wildcards), read
 * with one ordered consumer over the bucket's stream delivering the last message per key:
 * hundreds of records in one pass, rather than a listing and a get per key.
 */
export async function readLatestValues<Value>(
  js: JetStreamClient,
  bucket: string,
  keyFilter: string,
): Promise<{ key: string; value: Value }[]> {
  const prefix = `$KV.${bucket}.`;
  const consumer = await js.consumers.get(`KV_${bucket}`, {
    filter_subjects: `${prefix}${keyFilter}`,
    deliver_policy: DeliverPolicy.LastPerSubject,
  });
  let pending = (await consumer.info(true)).num_pending;
  const values: { key: string; value: Value }[] = [];
  const decoder = new TextDecoder();
  while (pending > 0) {
    let received = 0;
    const messages = await consumer.fetch({ max_messages: pending, expires: FETCH_EXPIRES_MS });
    for await (const message of messages) {
      received++;
      const operation = message.headers?.get(KV_OPERATION_HEADER);
      if (operation !== "DEL" && operation !== "PURGE" && message.data.length > 0) {
        values.push({ key: message.subject.slice(prefix.length), value: JSON.parse(decoder.decode(message.data)) as Value });
      }
      if (received === pending) break;
    }
    if (received === 0) break;
    pending -= received;
  }
  return values;
}
