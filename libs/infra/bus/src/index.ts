/**
 * The NATS JetStream bus as every Switchyard service and subscriber sees it.
 * Each export is documented where it is declared; docs/subjects.md is the
 * reference for people subscribing their own tooling.
 */

/** Names of streams, subjects and buckets for a namespace. */
export { busNames } from "./bus-names.js";
export type { BusNames } from "./bus-names.js";
/** Header names and payload types of bus messages, and their protobuf codecs. */
export {
  ATTEMPT_LOG_FIRST_AT_HEADER,
  BUS_MESSAGE_TYPE_HEADER,
  BUS_MESSAGE_TYPE_NAMES,
  NATS_MSG_ID_HEADER,
  POISON_HEADERS,
  RETRY_HEADERS,
  busMessageHeaders,
  busMessageTypes,
} from "./headers.js";
export type { BusMessageType } from "./headers.js";
/** A one-off read with an ordered consumer that is deleted after. */
export { withOrderedConsumer } from "./ordered-consumer.js";
/** Ids made safe to carry in a NATS or HTTP header. */
export { headerSafeId } from "./header-safe-id.js";
/** Stream and consumer definitions: the calls stream and delivery's streams and consumers. */
export {
  CALLS_CONSUMER,
  CALLS_MAX_MESSAGE_BYTES,
  DEFAULT_CALLS_STREAM_OPTIONS,
  DEFAULT_DELIVERED_LOG_MAX_BYTES,
  DEFAULT_DELIVERED_LOG_MAX_MESSAGES,
  RETRY_CONSUMER,
  ensureCallsStream,
  ensureIntakeStreams,
  ensureDeliveryConsumers,
  ensureDeliveryStreams,
} from "./streams.js";
export type { CallsStreamOptions } from "./streams.js";
/** KV buckets and object stores brought to SWITCHYARD_STREAM_REPLICAS at start-up, like the streams. */
export { ensureBucketReplicas } from "./bucket-replicas.js";
/** JetStream publishes acknowledged through one reply subscription (the client every service gets). */
export { withAckedPublish } from "./acked-publisher.js";
/** The one publisher of call batches, for ingest and audience-sync. */
export { BatchPublisher, PUBLISHED_BATCH_CALLS } from "./batch-publisher.js";
export type { BatchPublisherOptions, EncodedBatch, PublishMetrics } from "./batch-publisher.js";
/** Batch ids and deterministic message ids, behind de-duplication. */
export { deterministicId, resolveBatchId } from "./batch-ids.js";
