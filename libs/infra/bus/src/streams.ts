import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import type { BusNames } from "./bus-names.js";

/*
 * Every stream and durable consumer Switchyard's services create, with their
 * settings: the calls stream (every service ensures it), and delivery's own
 * streams and consumers. docs/subjects.md describes them for subscribers.
 */

/** Settings of the calls stream, from each service's SWITCHYARD_* environment. */
export interface CallsStreamOptions {
  /** How long JetStream remembers batch ids to drop re-sent batches. */
  duplicateWindowMs: number;
  /** How long calls stay in the stream (delivery and taps read from it). */
  maxAgeMs: number;
  replicas: number;
}

/** The calls stream's settings when the environment sets none (10 min duplicate window, 7 days, one replica). */
export const DEFAULT_CALLS_STREAM_OPTIONS: CallsStreamOptions = {
  duplicateWindowMs: 10 * 60_000,
  maxAgeMs: 7 * 24 * 3600_000,
  replicas: 1,
};

/**
 * The largest message the calls stream takes, headers included. A batch is at
 * most 500 KB of JSON; ingest splits the rare one whose protobuf is larger.
 */
export const CALLS_MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * Creates the calls stream, or brings an existing one to the wanted settings.
 * Every service calls this at start-up, so the start order does not matter.
 */
export async function ensureCallsStream(jsm: JetStreamManager, names: BusNames, options: CallsStreamOptions): Promise<void> {
  const config: StreamSettings = {
    name: names.callsStream,
    subjects: [names.callsSubjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(options.duplicateWindowMs),
    max_age: nanos(options.maxAgeMs),
    num_replicas: options.replicas,
    max_msg_size: CALLS_MAX_MESSAGE_BYTES,
  };
  await upsertStream(jsm, config);
}

/** Usage reports are small and read once by the insights service; a day is ample to catch up. */
const USAGE_REPORTS_MAX_AGE_MS = 24 * 3600_000;

/**
 * The streams beside the calls stream that ingest writes to: blocked calls (kept as long as
 * calls, with the same duplicate window, since they are published the same way) and usage
 * reports. Every service that publishes to them or reads them calls this at start-up.
 */
export async function ensureIntakeStreams(jsm: JetStreamManager, names: BusNames, options: CallsStreamOptions): Promise<void> {
  await upsertStream(jsm, {
    name: names.filteredStream,
    subjects: [names.filteredSubjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(options.duplicateWindowMs),
    max_age: nanos(options.maxAgeMs),
    num_replicas: options.replicas,
    max_msg_size: CALLS_MAX_MESSAGE_BYTES,
  });
  await upsertStream(jsm, {
    name: names.usageStream,
    subjects: [names.usageSubjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(options.duplicateWindowMs),
    max_age: nanos(USAGE_REPORTS_MAX_AGE_MS),
    num_replicas: options.replicas,
  });
}

type StreamSettings = Partial<StreamConfig> & { name: string };

/** Creates a stream, or updates an existing one to `config`; safe when replicas race to create it. */
async function upsertStream(jsm: JetStreamManager, config: StreamSettings): Promise<void> {
  const name = config.name;
  try {
    await jsm.streams.info(name);
  } catch (error) {
    if (isStreamNotFound(error)) {
      try {
        await jsm.streams.add(config);
        return;
      } catch (addError) {
        // Another replica created it between our info and add: depending on how far its create
        // got, the server says the name is in use or the subjects overlap. Either way, update it.
        if (!isStreamNameInUse(addError) && !(isSubjectsOverlap(addError) && (await streamExists(jsm, name)))) throw addError;
      }
    } else {
      throw error;
    }
  }
  await jsm.streams.update(name, config);
}

function isStreamNotFound(error: unknown): boolean {
  return error instanceof Error && /stream not found/i.test(error.message);
}

function isStreamNameInUse(error: unknown): boolean {
  return error instanceof Error && /already in use/i.test(error.message);
}

function isSubjectsOverlap(error: unknown): boolean {
  return error instanceof Error && /subjects overlap/i.test(error.message);
}

async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch (error) {
    if (isStreamNotFound(error)) return false;
    throw error;
  }
}

/** Durable consumer on the calls stream shared by every delivery replica; no other tool may use it. */
export const CALLS_CONSUMER = "delivery";
/** Durable consumer on the retry stream (a work queue, so the only one it may have) shared by every delivery replica. */
export const RETRY_CONSUMER = "delivery-retry";

/**
 * Longer than the slowest round of requests (5 URLs × 5 s), and short enough
 * that a crashed replica's messages come back soon; handlers send heartbeats
 * (working()) while they run, so long work never times out.
 */
const ACK_WAIT_MS = 30_000;

/** Defaults of the delivered-attempt log's caps: 10 GiB, and a million messages (each holds many attempts). */
export const DEFAULT_DELIVERED_LOG_MAX_BYTES = 10 * 1024 ** 3;
export const DEFAULT_DELIVERED_LOG_MAX_MESSAGES = 1_000_000;

/** The delivery service's own streams: retries (work queue), dead letters, poison messages and the delivery log. */
export async function ensureDeliveryStreams(
  jsm: JetStreamManager,
  names: BusNames,
  options: {
    replicas: number;
    deadLetterMaxAgeMs: number;
    deliveryLogMaxAgeMs: number;
    /** Caps of the delivered-attempt log (DELIVERY_DELIVERED_LOG_MAX_BYTES, DELIVERY_DELIVERED_LOG_MAX_MESSAGES). */
    deliveredLogMaxBytes?: number;
    deliveredLogMaxMessages?: number;
  },
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
  // The attempt log's three streams: kept as long as each other, and read by sequence, which
  // direct gets answer without a consumer.
  const log = { ...common, retention: RetentionPolicy.Limits, max_age: nanos(options.deliveryLogMaxAgeMs), allow_direct: true };
  const deliveredLogMaxBytes = options.deliveredLogMaxBytes ?? DEFAULT_DELIVERED_LOG_MAX_BYTES;
  await upsertStream(jsm, { ...log, name: names.deliveryLogStream, subjects: [names.deliveryLogSubjects], max_msgs: 10_000_000 });
  await upsertStream(jsm, {
    ...log,
    name: names.deliveredLogStream,
    subjects: [names.deliveredLogSubjects],
    max_bytes: deliveredLogMaxBytes,
    max_msgs: options.deliveredLogMaxMessages ?? DEFAULT_DELIVERED_LOG_MAX_MESSAGES,
  });
  // An index entry is a small fraction of the attempt it points at (it leaves out the exchange): with a
  // quarter of the delivered log's cap, entries outlast what they point at rather than the other way round.
  await upsertStream(jsm, {
    ...log,
    name: names.attemptIndexStream,
    subjects: [names.attemptIndexSubjects],
    max_bytes: Math.ceil(deliveredLogMaxBytes / 4),
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
