import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import type { BusNames } from "./bus-names.js";
import { upsertStream } from "./streams.js";

export const CALLS_CONSUMER = "delivery";
export const RETRY_CONSUMER = "delivery-retry";

/**
 * Longer than the slowest round of requests (5 URLs × 5 s), and short enough
 * that a crashed replica's messages come back soon; handlers send heartbeats
 * (working()) while they run, so long work never times out.
 */
const ACK_WAIT_MS = 30_000;

/** The delivery service's own streams: retries (work queue), dead letters, poison messages and the delivery log. */
export async function ensureDeliveryStreams(
  jsm: JetStreamManager,
  names: BusNames,
  options: { replicas: number; deadLetterMaxAgeMs: number; deliveryLogMaxAgeMs: number },
): Promise<void> {
  const common = { storage: StorageType.File, num_replicas: options.replicas, discard: DiscardPolicy.Old };
  await upsertStream(jsm, {
    ...common,
    name: names.retryStream,
    subjects: [names.retrySubjects],
    retention: RetentionPolicy.Workqueue,
    duplicate_window: nanos(2 * 60_000),
  });
  await upsertStream(jsm, {
    ...common,
    name: names.deadStream,
    subjects: [names.deadSubjects],
    retention: RetentionPolicy.Limits,
    max_age: nanos(options.deadLetterMaxAgeMs),
    duplicate_window: nanos(2 * 60_000),
  });
  await upsertStream(jsm, {
    ...common,
    name: names.poisonStream,
    subjects: [names.poisonSubjects],
    retention: RetentionPolicy.Limits,
    max_age: nanos(options.deadLetterMaxAgeMs),
    duplicate_window: nanos(2 * 60_000),
  });
  await upsertStream(jsm, {
    ...common,
    name: names.deliveryLogStream,
    subjects: [names.deliveryLogSubjects],
    retention: RetentionPolicy.Limits,
    max_age: nanos(options.deliveryLogMaxAgeMs),
    max_msgs: 10_000_000,
  });
}

/** Durable pull consumers shared by every delivery replica. */
export async function ensureDeliveryConsumers(jsm: JetStreamManager, names: BusNames): Promise<void> {
  const common: Partial<ConsumerConfig> = {
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(ACK_WAIT_MS),
    deliver_policy: DeliverPolicy.All,
    max_deliver: -1,
  };
  await upsertConsumer(jsm, names.callsStream, { ...common, durable_name: CALLS_CONSUMER, max_ack_pending: 1_000 });
  // No bound: a task waiting for its retry time (nak with delay) counts as pending, and with a bound
  // of N, N parked tasks would keep every newer task, due or not, from being delivered at all.
  // Work in flight is bounded by DELIVERY_RETRY_CONCURRENCY instead (ConcurrentConsumer pulls no more).
  await upsertConsumer(jsm, names.retryStream, { ...common, durable_name: RETRY_CONSUMER, max_ack_pending: -1 });
}

async function upsertConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }) {
  try {
    await jsm.consumers.info(stream, config.durable_name);
    await jsm.consumers.update(stream, config.durable_name, config);
  } catch (error) {
    if (!(error instanceof Error) || !/consumer not found/i.test(error.message)) throw error;
    await jsm.consumers.add(stream, config);
  }
}
