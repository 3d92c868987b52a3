import { readFile } from "node:fs/promises";
import { Kvm } from "@nats-io/kv";
import { DeliveryServiceService, configApi } from "@switchyard/contracts";
import { kvStream, type Logger } from "@switchyard/platform";
import { startServiceRuntime, type RuntimeParts, type ServiceParts } from "@switchyard/runtime";
import { ConcurrentConsumer } from "./pipeline/concurrent-consumer.js";
import { configService } from "@switchyard/config-service";
import { loadMasker } from "@switchyard/workspace";
import type { DeliveryConfig } from "./config.js";
import { DeadLetters } from "./retries/dead-letters.js";
import { deliveryApi } from "./api/delivery-api.js";
import { AttemptPages } from "./api/attempt-pages.js";
import { LogReaders } from "./api/log-readers.js";
import { DeliveryLog } from "./api/delivery-log.js";
import { DeliveryStats, ensureStatsConsumer, STATS_CONSUMER } from "./api/delivery-stats.js";
import { DestinationGates } from "./pipeline/destination-gate.js";
import { flushKinds } from "./kinds/index.js";
import { FirstAttempts } from "./pipeline/first-attempts.js";
import { HandlingFailures } from "./pipeline/handling-failures.js";
import { RateLimits } from "./pipeline/rate-limits.js";
import { DeliveryMetrics } from "./metrics.js";
import { Retries } from "./retries/retries.js";
import { PoisonMessages } from "./retries/poison.js";
import { RetryQueue } from "./retries/retry-queue.js";
import { Settler } from "./pipeline/settle.js";
import {
  CALLS_CONSUMER,
  ensureBucketReplicas,
  ensureDeliveryConsumers,
  ensureDeliveryStreams,
  ensureIntakeStreams,
  RETRY_CONSUMER,
} from "@switchyard/bus";
import { OutcomeReports } from "./pipeline/outcome-reports.js";
import { ChurnIsolatingSender } from "./outbound/churn-isolating-sender.js";
import { SenderThread } from "./outbound/sender-thread.js";
import { WebhookSender } from "./outbound/webhook-sender.js";

/** See GateOptions.stallMs: a stall is called after 250 ms to 1 s without an answer, depending on the receiver's usual answer time. */
const STALL_MS = 1_000;
const MIN_STALL_MS = 250;
/** A failing message's redelivery delay doubles up to this. */
const MAX_HANDLING_RETRY_DELAY_MS = 30_000;
/**
 * A rate-limited destination's send schedule matters for seconds (slots are claimed at most a
 * few seconds ahead; a waiting room nobody moves in is forgotten after 10 s): one unchanged for
 * this long, say of a deleted destination, is removed by the bucket.
 */
const RATE_SCHEDULE_TTL_MS = 10 * 60_000;

export interface DeliveryHandle {
  readonly grpcPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  /** Stops taking messages, finishes the deliveries in flight, drains NATS. */
  stop(): Promise<void>;
}

/** Starts the delivery service: streams and consumers, the two delivery loops, and its gRPC APIs. */
export async function startDelivery(config: DeliveryConfig, logger: Logger): Promise<DeliveryHandle> {
  const runtime = await startServiceRuntime({
    name: "delivery",
    config,
    logger,
    ports: { grpc: config.DELIVERY_GRPC_PORT, ops: config.DELIVERY_OPS_PORT },
    ensureStreams: async (jsm, names) => {
      await ensureDeliveryStreams(jsm, names, {
        replicas: config.SWITCHYARD_STREAM_REPLICAS,
        deadLetterMaxAgeMs: config.DELIVERY_DEAD_LETTER_MAX_AGE_MS,
        deliveryLogMaxAgeMs: config.DELIVERY_LOG_MAX_AGE_MS,
        deliveredLogMaxBytes: config.DELIVERY_DELIVERED_LOG_MAX_BYTES,
        deliveredLogMaxMessages: config.DELIVERY_DELIVERED_LOG_MAX_MESSAGES,
      });
      await ensureDeliveryConsumers(jsm, names);
      // Delivery publishes its usage reports to the usage stream, which ingest's intake streams include.
      await ensureIntakeStreams(jsm, names, {
        duplicateWindowMs: config.SWITCHYARD_DUPLICATE_WINDOW_MS,
        maxAgeMs: config.SWITCHYARD_CALLS_MAX_AGE_MS,
        replicas: config.SWITCHYARD_STREAM_REPLICAS,
      });
      // The stats are folded from those reports (see DeliveryStats).
      await ensureStatsConsumer(jsm, names);
    },
    start: (parts) => deliveryParts(config, logger, parts),
  });
  return { grpcPort: runtime.grpcPort, opsPort: runtime.opsPort, stop: () => runtime.stop() };
}

async function deliveryParts(
  config: DeliveryConfig,
  logger: Logger,
  { ops, bus, js, jsm, names, configKv, workspace, prepare }: RuntimeParts,
): Promise<ServiceParts> {
  const replicas = config.SWITCHYARD_STREAM_REPLICAS;
  const statsKv = await prepare("the delivery stats bucket", () => new Kvm(js).create(names.deliveryStatsBucket, { history: 1, replicas }));
  const rateLimitKv = await prepare("the rate limit bucket", () =>
    new Kvm(js).create(names.rateLimitBucket, { history: 1, replicas, ttl: RATE_SCHEDULE_TTL_MS }),
  );
  await prepare(`replicas of ${kvStream(names.deliveryStatsBucket)}`, () =>
    ensureBucketReplicas(jsm, kvStream(names.deliveryStatsBucket), replicas),
  );
  await prepare(`replicas of ${kvStream(names.rateLimitBucket)}`, () =>
    ensureBucketReplicas(jsm, kvStream(names.rateLimitBucket), replicas),
  );
  // One key for every replica, kept in the configuration bucket: masks read from one are matched by all.
  const masker = await prepare("the masking key", () => loadMasker(configKv));

  const senderOptions = {
    timeoutMs: config.DELIVERY_REQUEST_TIMEOUT_MS,
    maxResponseBytes: config.DELIVERY_MAX_RESPONSE_BYTES,
    connectionsPerOrigin: config.DELIVERY_DESTINATION_CONCURRENCY,
    ...(config.DELIVERY_EXTRA_CA_FILE ? { extraCaCertificates: [await readFile(config.DELIVERY_EXTRA_CA_FILE, "utf8")] } : {}),
  };
  const mainThreadSender = new WebhookSender({ ...senderOptions, addressPolicy: config.DELIVERY_ALLOWED_CIDRS });
  const sender =
    config.DELIVERY_SENDER_THREAD === "off"
      ? mainThreadSender
      : new ChurnIsolatingSender(
          mainThreadSender,
          new SenderThread({ ...senderOptions, allowlist: config.DELIVERY_ALLOWED_CIDRS.allowlist }),
          // Once per move, never per request.
          (destinationId, onThread) =>
            logger.info(
              { destinationId },
              onThread
                ? "destination's answers close their connections: its requests go through the sender thread"
                : "destination keeps its connections again: its requests are sent on the main thread",
            ),
        );
  const gates = new DestinationGates(
    {
      concurrency: config.DELIVERY_DESTINATION_CONCURRENCY,
      failureThreshold: config.DELIVERY_FAILURE_THRESHOLD,
      cooldownMs: config.DELIVERY_FAILING_COOLDOWN_MS,
      stallMs: Math.min(STALL_MS, config.DELIVERY_REQUEST_TIMEOUT_MS),
      minStallMs: Math.min(MIN_STALL_MS, config.DELIVERY_REQUEST_TIMEOUT_MS),
    },
    // One line per change of state, never per attempt: what an operator watching the output needs.
    (destinationId, failing) => {
      if (failing) {
        logger.warn(
          { destinationId, failureThreshold: config.DELIVERY_FAILURE_THRESHOLD },
          "destination failing: its calls go to the retry path until it answers again",
        );
      } else {
        logger.info({ destinationId }, "destination healthy again");
      }
    },
  );
  const retryQueue = new RetryQueue(js, names);
  const deadLetters = new DeadLetters(js, jsm, names);
  const stats = new DeliveryStats(statsKv, logger);
  await stats.start(await prepare(`consumer ${STATS_CONSUMER}`, () => js.consumers.get(names.usageStream, STATS_CONSUMER)));
  const schedule = {
    baseDelayMs: config.DELIVERY_RETRY_BASE_DELAY_MS,
    maxDelayMs: config.DELIVERY_RETRY_MAX_DELAY_MS,
    windowMs: config.DELIVERY_RETRY_WINDOW_MS,
  };
  const metrics = new DeliveryMetrics(ops.registry, { bus, names });
  const log = new DeliveryLog(
    js,
    names,
    logger,
    { batch: config.DELIVERY_ATTEMPT_LOG_BATCH, lingerMs: config.DELIVERY_ATTEMPT_LOG_LINGER_MS },
    (attempts) => metrics.attemptsNotLogged(attempts),
  );
  const poison = new PoisonMessages(js, names, (from, reason) => metrics.poisoned(from, reason), logger);
  const handlingFailureOptions = {
    failureDelayMs: config.DELIVERY_HANDLING_RETRY_DELAY_MS,
    maxFailureDelayMs: MAX_HANDLING_RETRY_DELAY_MS,
    maxFailures: config.DELIVERY_MAX_HANDLING_FAILURES,
  };
  const settler = new Settler({ retryQueue, deadLetters, log, metrics, schedule, logger });
  const reports = new OutcomeReports(js, names);
  const heartbeatMs = 10_000;
  const callsFailures = new HandlingFailures(
    handlingFailureOptions,
    (message, error) => poison.setAside(message, "calls", "handler_failed", error),
    logger,
  );
  const retryFailures = new HandlingFailures(
    handlingFailureOptions,
    (message, error) => poison.setAside(message, "retry", "handler_failed", error),
    logger,
  );
  const rateLimits = new RateLimits(rateLimitKv);
  const firstAttempts = new FirstAttempts({
    workspace,
    sender,
    masker,
    gates,
    rateLimits,
    settler,
    retryQueue,
    metrics,
    poison,
    reports,
    logger,
    awaitingBatches: config.DELIVERY_AWAITING_BATCHES,
    heartbeatMs,
    failures: callsFailures,
  });
  const retries = new Retries({
    workspace,
    sender,
    masker,
    gates,
    rateLimits,
    settler,
    retryQueue,
    metrics,
    poison,
    reports,
    windowMs: schedule.windowMs,
    logger,
    heartbeatMs,
    failures: retryFailures,
  });

  const logReaders = new LogReaders(config.NATS_URL, logger);
  const callsConsumer = ConcurrentConsumer.start(
    await prepare(`consumer ${CALLS_CONSUMER}`, () => js.consumers.get(names.callsStream, CALLS_CONSUMER)),
    (message) => firstAttempts.handle(message),
    { heartbeatMs, concurrency: config.DELIVERY_BATCH_CONCURRENCY, failures: callsFailures },
    logger,
  );
  const retryConsumer = ConcurrentConsumer.start(
    await prepare(`consumer ${RETRY_CONSUMER}`, () => js.consumers.get(names.retryStream, RETRY_CONSUMER)),
    (message) => retries.handle(message),
    { heartbeatMs, concurrency: config.DELIVERY_RETRY_CONCURRENCY, failures: retryFailures },
    logger,
  );

  return {
    grpc: [
      {
        name: "switchyard.v1.DeliveryService",
        definition: DeliveryServiceService,
        implementation: deliveryApi({
          workspace,
          sender,
          masker,
          deadLetters,
          retryQueue,
          attempts: new AttemptPages(logReaders, names, config.DELIVERY_ATTEMPT_LOG_LINGER_MS),
          stats,
          logger,
        }),
        auth: "admin",
      },
      {
        name: "switchyard.v1.ConfigService",
        definition: configApi.ConfigServiceService,
        implementation: configService({ kv: configKv, logger, masker, configSource: config.SWITCHYARD_CONFIG_SOURCE }),
        auth: "admin",
      },
    ],
    readiness: {
      streams: [
        names.retryStream,
        names.deadStream,
        names.poisonStream,
        names.deliveryLogStream,
        names.deliveredLogStream,
        names.attemptIndexStream,
        names.usageStream,
        kvStream(names.deliveryStatsBucket),
        kvStream(names.rateLimitBucket),
      ],
      consumers: [
        [names.callsStream, CALLS_CONSUMER],
        [names.retryStream, RETRY_CONSUMER],
        [names.usageStream, STATS_CONSUMER],
      ],
    },
    readyLog: { allowedCidrs: config.DELIVERY_ALLOWED_CIDRS.allowlist },
    finish: async () => {
      // Batches waiting outside a slot (see FirstAttempts) finish once their consumer has stopped handing out more.
      // So do retries waiting for a rate-limited destination's slots (see Retries).
      const stopped = [callsConsumer.stop().then(() => firstAttempts.drain()), retryConsumer.stop().then(() => retries.drain())];
      // The consumers wait for calls in a kind's batches: those go now rather than at their batch's time.
      flushKinds({ sender, masker, gates, rateLimits });
      await Promise.all(stopped);
      await stats.close();
      await log.flush();
      await sender.close();
      await logReaders.close();
    },
  };
}
