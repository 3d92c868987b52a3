/**
 * Names of every stream, subject and bucket Switchyard uses, derived from one
 * namespace (default "switchyard") so deployments and test runs can share a
 * NATS server without meeting. docs/subjects.md documents the scheme.
 */
export interface BusNames {
  readonly namespace: string;
  /** Stream of accepted call batches. */
  readonly callsStream: string;
  /** Wildcard covering every source's calls subject. */
  readonly callsSubjects: string;
  /** KV bucket of the workspace configuration (sources, destinations, connections). */
  readonly configBucket: string;
  /** Subject on which calls of one source are published. */
  callsSubject(sourceId: string): string;
}

export function busNames(namespace: string): BusNames {
  const upper = namespace.toUpperCase();
  return {
    namespace,
    callsStream: `${upper}_CALLS`,
    callsSubjects: `${namespace}.calls.>`,
    configBucket: `${namespace}_config`,
    callsSubject: (sourceId) => `${namespace}.calls.${sourceId}`,
  };
}
