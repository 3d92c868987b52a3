import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Counter, Gauge, LocalHistogram, METRIC_PREFIX, childrenByLabel, type BusConnection, type Registry } from "@switchyard/platform";
import { type BusNames } from "@switchyard/bus";
import type { UrlAttempt } from "./kinds/index.js";
import type { PoisonReason } from "./retries/poison.js";
import type { AttemptOutcome, DeadLetterReason } from "./retries/retry-policy.js";

const OUTCOMES = ["delivered", "retryable", "permanent"] as const satisfies readonly AttemptOutcome[];
/** "none": no HTTP answer (timeout, refused connection, TLS or DNS failure). */
const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx", "none"] as const;
type StatusClass = (typeof STATUS_CLASSES)[number];
/** What became of one call for one destination after a round: see DeliveryMetrics.round*. */
const ROUND_RESULTS = ["delivered", "retry_scheduled", "deferred", "dead_lettered", "filtered"] as const;
type RoundResult = (typeof ROUND_RESULTS)[number];
const DEAD_LETTER_REASONS = [
  "window_exhausted",
  "permanent_failure",
  "destination_removed",
  "undeliverable",
] as const satisfies readonly DeadLetterReason[];

/** From tens of milliseconds (first attempt at once) to the 4-hour retry window. */
const ACCEPT_TO_DELIVERY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 14400];
/** One HTTP request, up to the 5 s default timeout and beyond. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** A scrape must not wait long for JetStream: the gauges keep their last value instead. */
const STREAM_LOOKUP_TIMEOUT_MS = 2_000;

type CounterChild = ReturnType<Counter["labels"]>;

/**
 * The delivery service's metrics (docs/operations.md lists them). Counted
 * where a round of requests is settled, so first attempts and retries are
 * counted the same way. The retry backlog and the stored dead letters are
 * read from their streams when scraped: they are shared by every replica and
 * survive restarts, which no in-process count would.
 *
 * What every webhook counts (its request, its delivery) is counted in plain
 * numbers and added to the prom-client counters when they are read, and its
 * times go to LocalHistograms: prom-client looks up a label set on every
 * increment, too much to pay for every webhook.
 */
export class DeliveryMetrics {
  /** [outcome][status class] */
  private readonly requests: Record<AttemptOutcome, Record<StatusClass, CounterChild>>;
  /** Requests not yet added to `requests`, by OUTCOMES index × STATUS_CLASSES.length + status class index. */
  private readonly requestCounts = new Float64Array(OUTCOMES.length * STATUS_CLASSES.length);
  private readonly rounds: Record<RoundResult, CounterChild>;
  /** Deliveries not yet added to `rounds.delivered`. */
  private deliveredCount = 0;
  private readonly deadLetters: Record<DeadLetterReason, CounterChild>;
  private readonly poison: Counter;
  private readonly rateLimitedCalls: Counter;
  private readonly attemptLogLost: Counter;
  private readonly requestSeconds: LocalHistogram;
  private readonly acceptToDelivery: LocalHistogram;

  constructor(registry: Registry, streams: { bus: BusConnection; names: BusNames }) {
    const requests = new Counter({
      name: `${METRIC_PREFIX}delivery_requests_total`,
      help: "Webhook requests made, by outcome (delivered, retryable, permanent) and HTTP status class (none: no answer)",
      labelNames: ["outcome", "status_class"],
      registers: [registry],
      collect: () => this.addRequestCounts(),
    });
    const rounds = new Counter({
      name: `${METRIC_PREFIX}delivery_deliveries_total`,
      help: "Deliveries (one call to one destination) by result of their latest round: delivered, retry_scheduled, deferred (destination failing, no request made), dead_lettered, filtered (the connection's filter did not match: no request, ever)",
      labelNames: ["result"],
      registers: [registry],
      collect: () => this.addDeliveredCount(),
    });
    const deadLetters = new Counter({
      name: `${METRIC_PREFIX}delivery_dead_letters_total`,
      help: "Deliveries dead-lettered by this replica, by reason",
      labelNames: ["reason"],
      registers: [registry],
    });
    this.poison = new Counter({
      name: `${METRIC_PREFIX}delivery_poison_messages_total`,
      help: "Messages of the calls or retry stream moved to the poison stream by this replica (undecodable, or handling failed every time): alert on any increase",
      labelNames: ["stream", "reason"],
      registers: [registry],
    });
    this.rateLimitedCalls = new Counter({
      name: `${METRIC_PREFIX}delivery_rate_limited_calls_total`,
      help: "First attempts a destination's rate limit sent to wait for their turn on the retry stream (their slots were over a second away)",
      registers: [registry],
    });
    this.attemptLogLost = new Counter({
      name: `${METRIC_PREFIX}delivery_attempt_log_lost_total`,
      help: "Attempts the attempt log could not record (the bus refused or was too far behind); the deliveries themselves went on",
      registers: [registry],
    });
    this.requestSeconds = new LocalHistogram({
      name: `${METRIC_PREFIX}delivery_request_duration_seconds`,
      help: "Duration of one webhook request, until the answer's status (or the failure)",
      buckets: REQUEST_BUCKETS,
      registers: [registry],
    });
    this.acceptToDelivery = new LocalHistogram({
      name: `${METRIC_PREFIX}delivery_accept_to_delivery_seconds`,
      help: "Time from ingest accepting a call (its receivedAt) to a destination answering 2xx, retries included",
      buckets: ACCEPT_TO_DELIVERY_BUCKETS,
      registers: [registry],
    });

    this.requests = childrenByLabel(OUTCOMES, (outcome) => childrenByLabel(STATUS_CLASSES, (cls) => requests.labels(outcome, cls)));
    this.rounds = childrenByLabel(ROUND_RESULTS, (result) => rounds.labels(result));
    this.deadLetters = childrenByLabel(DEAD_LETTER_REASONS, (reason) => deadLetters.labels(reason));
    registerStreamGauges(registry, streams.bus, streams.names);
  }

  /** The requests of one round, whatever came of them. */
  requestsMade(attempts: readonly UrlAttempt[]): void {
    for (let index = 0; index < attempts.length; index++) {
      const attempt = attempts[index]!;
      this.requestCounts[OUTCOME_INDEX[attempt.outcome] * STATUS_CLASSES.length + statusClassIndex(attempt.status)]!++;
      this.requestSeconds.observe(attempt.latencyMs / 1000);
    }
  }

  /** A destination answered 2xx; `receivedAt` is when ingest accepted the call. */
  delivered(receivedAt: Date | undefined): void {
    this.deliveredCount++;
    if (receivedAt) this.acceptToDelivery.observe(Math.max(0, Date.now() - receivedAt.getTime()) / 1000);
  }

  /** Adds the requests counted since the last read to the counter being read. */
  private addRequestCounts(): void {
    const counts = this.requestCounts;
    for (let index = 0; index < counts.length; index++) {
      const count = counts[index]!;
      if (count === 0) continue;
      counts[index] = 0;
      this.requests[OUTCOMES[Math.floor(index / STATUS_CLASSES.length)]!][STATUS_CLASSES[index % STATUS_CLASSES.length]!].inc(count);
    }
  }

  private addDeliveredCount(): void {
    if (this.deliveredCount === 0) return;
    this.rounds.delivered.inc(this.deliveredCount);
    this.deliveredCount = 0;
  }

  /** The round failed retryably and its next attempt is stored in the retry stream. */
  retryScheduled(): void {
    this.rounds.retry_scheduled.inc();
  }

  /** First attempts handed straight to the retry path because their destination is failing or stalled. */
  deferred(calls: number): void {
    this.rounds.deferred.inc(calls);
  }

  /** First attempts not made because the connection's filter did not match the calls. */
  filtered(calls: number): void {
    this.rounds.filtered.inc(calls);
  }

  /** First attempts that wait for their turn at a rate-limited destination on the retry stream (also counted as deferred). */
  rateLimited(calls: number): void {
    this.rateLimitedCalls.inc(calls);
  }

  /** A message was moved to the poison stream. */
  poisoned(from: "calls" | "retry", reason: PoisonReason): void {
    this.poison.labels(from, reason).inc();
  }

  /** Attempts left out of the attempt log. */
  attemptsNotLogged(attempts: number): void {
    this.attemptLogLost.inc(attempts);
  }

  deadLettered(reason: DeadLetterReason): void {
    this.rounds.dead_lettered.inc();
    this.deadLetters[reason].inc();
  }
}

export function statusClass(status: number | undefined): StatusClass {
  return STATUS_CLASSES[statusClassIndex(status)]!;
}

/** STATUS_CLASSES' index of a status's class. */
function statusClassIndex(status: number | undefined): number {
  if (!status || status < 100 || status > 599) return STATUS_CLASSES.length - 1; // none
  return Math.floor(status / 100) - 1;
}

const OUTCOME_INDEX = Object.fromEntries(OUTCOMES.map((outcome, index) => [outcome, index])) as Record<AttemptOutcome, number>;

/** Gauges read from JetStream at scrape time; the same value on every replica (aggregate with max, not sum). */
function registerStreamGauges(registry: Registry, bus: BusConnection, names: BusNames): void {
  let jsm: Promise<JetStreamManager> | undefined;
  const messagesIn = async (stream: string): Promise<number | undefined> => {
    if (!bus.isConnected()) return undefined;
    try {
      jsm ??= jetstreamManager(bus.nc, { timeout: STREAM_LOOKUP_TIMEOUT_MS, checkAPI: false });
      return (await (await jsm).streams.info(stream)).state.messages;
    } catch {
      return undefined; // keep the last value; /readyz reports what is wrong
    }
  };
  const streamGauge = (name: string, help: string, stream: string) =>
    new Gauge({
      name: `${METRIC_PREFIX}${name}`,
      help,
      registers: [registry],
      // Under SWITCHYARD_WORKERS every worker reads the same stream: do not add them up.
      aggregator: "max",
      async collect() {
        const messages = await messagesIn(stream);
        if (messages !== undefined) this.set(messages);
      },
    });
  streamGauge(
    "delivery_retry_backlog",
    "Messages waiting in the retry stream: a call's next attempt, or the calls of a batch deferred together (all replicas)",
    names.retryStream,
  );
  streamGauge("delivery_dead_letters", "Dead letters stored (kept for DELIVERY_DEAD_LETTER_MAX_AGE_MS; all replicas)", names.deadStream);
  streamGauge(
    "delivery_poison_messages",
    "Poison messages stored: calls or retry messages delivery could not handle (kept for DELIVERY_DEAD_LETTER_MAX_AGE_MS; all replicas)",
    names.poisonStream,
  );
}
