/**
 * Names of every stream, subject and bucket Switchyard uses, derived from one
 * namespace (default "switchyard") so deployments and test runs can share a
 * NATS server without meeting. docs/subjects.md documents the scheme.
 */
export interface BusNames {
  /** The prefix of every name below (SWITCHYARD_NAMESPACE). */
  readonly namespace: string;
  /** Stream of accepted call batches. */
  readonly callsStream: string;
  /** Wildcard covering every source's calls subject. */
  readonly callsSubjects: string;
  /** KV bucket of the workspace configuration (sources, destinations, connections). */
  readonly configBucket: string;
  /** Stream of deliveries waiting for a retry (one message per call and destination). */
  readonly retryStream: string;
  /** Wildcard covering every destination's retry subject. */
  readonly retrySubjects: string;
  /** Stream of dead letters: deliveries that ran out of window or failed permanently. */
  readonly deadStream: string;
  /** Wildcard covering every destination's dead-letter subject. */
  readonly deadSubjects: string;
  /**
   * Stream of messages delivery could not handle at all (undecodable, or failing every time it
   * was handled), kept as they were, headers included, for inspection and replay.
   */
  readonly poisonStream: string;
  /** Wildcard covering both poison subjects. */
  readonly poisonSubjects: string;
  /** Stream of failed delivery attempts and dead letters, for operators. */
  readonly deliveryLogStream: string;
  /** Wildcard covering every destination's delivery-log subject. */
  readonly deliveryLogSubjects: string;
  /**
   * Stream of delivered attempts (many to a message), the other half of the attempt log: kept
   * apart from the delivery log so that their number cannot push failures out of it.
   */
  readonly deliveredLogStream: string;
  /** Wildcard covering every destination's delivered-log subject. */
  readonly deliveredLogSubjects: string;
  /**
   * Stream of the attempt log's index: every attempt of both log streams, its exchange left out
   * and its attempt_id set, many to a message. Pages read it alone, so they read a small fraction
   * of the log's bytes.
   */
  readonly attemptIndexStream: string;
  /** Wildcard covering every destination's attempt-index subject. */
  readonly attemptIndexSubjects: string;
  /**
   * Stream of calls a source accepted but blocked (BlockCalls): kept like the calls stream, so
   * they can be counted, inspected and replayed, but no delivery replica reads it.
   */
  readonly filteredStream: string;
  /** Wildcard covering every source's filtered subject. */
  readonly filteredSubjects: string;
  /** Stream of usage reports: invalid calls refused by ingest, and delivery outcomes. */
  readonly usageStream: string;
  /** Wildcard covering both kinds of usage report. */
  readonly usageSubjects: string;
  /** KV bucket of each source's schema: the calls it sent, by type and name. */
  readonly schemaBucket: string;
  /** KV bucket of usage counts per source and UTC day. */
  readonly usageBucket: string;
  /** KV bucket of delivery counts per destination. */
  readonly deliveryStatsBucket: string;
  /**
   * KV bucket of each rate-limited destination's shared send schedule (key: the destination id),
   * which every delivery replica claims request slots from, so the limit holds for all together.
   */
  readonly rateLimitBucket: string;
  /** KV bucket pointing at the current state of each audience and computed trait. */
  readonly audienceStateBucket: string;
  /** Object store holding the member lists of audiences and computed traits. */
  readonly audienceStateObjects: string;
  /** Subject on which calls of one source are published. */
  callsSubject(sourceId: string): string;
  /** Subject of one destination's retries. */
  retrySubject(destinationId: string): string;
  /** Subject of one destination's dead letters. */
  deadSubject(destinationId: string): string;
  /** Subject of one destination's failed attempts and dead letters, for operators. */
  deliveryLogSubject(destinationId: string): string;
  /** Subject of one destination's delivered attempts (DeliveryAttempts, many to a message). */
  deliveredLogSubject(destinationId: string): string;
  /** Subject of one destination's attempt-index entries (DeliveryAttempts without exchanges, many to a message). */
  attemptIndexSubject(destinationId: string): string;
  /** Subject on which the blocked calls of one source are published. */
  filteredSubject(sourceId: string): string;
  /** Subject of ingest's reports of invalid calls refused for one source. */
  rejectedUsageSubject(sourceId: string): string;
  /** Subject of delivery's reports of what became of calls at one destination. */
  deliveryUsageSubject(destinationId: string): string;
  /** Subject of poison messages taken from one of delivery's streams ("calls" or "retry"). */
  poisonSubject(from: "calls" | "retry"): string;
}

/**
 * Every name on the bus for one namespace: streams `<NS>_CALLS`, `<NS>_RETRY`, ...
 * (upper case), subjects `<ns>.calls.<sourceId>`, ..., buckets `<ns>_config`, ....
 */
export function busNames(namespace: string): BusNames {
  const upper = namespace.toUpperCase();
  return {
    namespace,
    callsStream: `${upper}_CALLS`,
    callsSubjects: `${namespace}.calls.>`,
    configBucket: `${namespace}_config`,
    retryStream: `${upper}_RETRY`,
    retrySubjects: `${namespace}.retry.>`,
    deadStream: `${upper}_DEAD`,
    deadSubjects: `${namespace}.dead.>`,
    poisonStream: `${upper}_POISON`,
    poisonSubjects: `${namespace}.poison.>`,
    deliveryLogStream: `${upper}_DELIVERY_LOG`,
    deliveryLogSubjects: `${namespace}.deliverylog.>`,
    deliveredLogStream: `${upper}_DELIVERED_LOG`,
    deliveredLogSubjects: `${namespace}.deliveredlog.>`,
    attemptIndexStream: `${upper}_ATTEMPT_INDEX`,
    attemptIndexSubjects: `${namespace}.attemptindex.>`,
    filteredStream: `${upper}_FILTERED`,
    filteredSubjects: `${namespace}.filtered.>`,
    usageStream: `${upper}_USAGE`,
    usageSubjects: `${namespace}.usage.>`,
    schemaBucket: `${namespace}_schema`,
    usageBucket: `${namespace}_usage`,
    deliveryStatsBucket: `${namespace}_delivery_stats`,
    rateLimitBucket: `${namespace}_rate_limits`,
    audienceStateBucket: `${namespace}_audience_state`,
    audienceStateObjects: `${namespace}_audience_members`,
    callsSubject: (sourceId) => `${namespace}.calls.${sourceId}`,
    retrySubject: (destinationId) => `${namespace}.retry.${destinationId}`,
    deadSubject: (destinationId) => `${namespace}.dead.${destinationId}`,
    deliveryLogSubject: (destinationId) => `${namespace}.deliverylog.${destinationId}`,
    deliveredLogSubject: (destinationId) => `${namespace}.deliveredlog.${destinationId}`,
    attemptIndexSubject: (destinationId) => `${namespace}.attemptindex.${destinationId}`,
    filteredSubject: (sourceId) => `${namespace}.filtered.${sourceId}`,
    rejectedUsageSubject: (sourceId) => `${namespace}.usage.rejected.${sourceId}`,
    deliveryUsageSubject: (destinationId) => `${namespace}.usage.delivery.${destinationId}`,
    poisonSubject: (from) => `${namespace}.poison.${from}`,
  };
}
