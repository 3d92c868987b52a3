/**
 * What the console's live views send the browser. Type declarations only, with no imports, so
 * the web app (services/console/web) shares them without pulling in server code.
 */

export interface SourceOverview {
  id: string;
  name: string;
  /** Connected destinations that are enabled (its calls' fan-out). */
  destinations: number;
  callsLastHour: number;
  /** Calls per second averaged over the last hour and over the last minute. */
  callsPerSecond: number;
  callsPerSecondLastMinute: number;
  /** Calls of the hour with a failed delivery attempt (any destination, any attempt). */
  failedCallsLastHour: number;
  /** Share of the hour's calls delivered without a failed attempt; null without calls. */
  successRate: number | null;
  /** True when failedCallsLastHour reached its memory bound (the rate is then at most the one shown). */
  failedCallsCapped: boolean;
}

export interface LastFailure {
  at: string;
  url: string;
  status: number;
  error: string;
  outcome: string;
}

export interface DestinationOverview {
  id: string;
  name: string;
  enabled: boolean;
  /** The window of delivered counts and the rate: an hour, or since the console first read the counters. */
  windowSeconds: number;
  delivered: number;
  failedAttempts: number;
  deadLettered: number;
  /** Requests (delivered calls plus failed attempts) per second over the window. */
  requestsPerSecond: number;
  /** Share of requests that succeeded over the window; null without requests. */
  successRate: number | null;
  failing: boolean;
  lastFailure: LastFailure | null;
  /** Dead letters waiting now (replayable). */
  deadLetters: number;
}

export interface OverviewSnapshot {
  generatedAt: string;
  /** False while the console is still reading the last hour from the bus. */
  caughtUp: boolean;
  /** False when the delivery counters could not be read lately (delivery unreachable). */
  deliveryCountersFresh: boolean;
  sources: SourceOverview[];
  destinations: DestinationOverview[];
  failingDestinations: string[];
  deadLetters: number;
}

/** One call as the live debugger shows it. */
export interface LiveCall {
  /** The calls stream's sequence of its batch. */
  sequence: number;
  batchId: string;
  receivedAt: string | undefined;
  /** The call in Segment JSON (type, messageId, userId, event, properties, ...). */
  call: Record<string, unknown>;
}
