import { readFile } from "node:fs/promises";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { DeliveryServiceService, configApi } from "@switchyard/contracts";
import { busNames, ensureCallsStream } from "@switchyard/bus";
import { connectBus, kvStream, loadServerTls, startGrpcServer, withOpsServer, type Logger, type OpsServer } from "@switchyard/platform";
import { openWorkspace } from "@switchyard/workspace";
import { ConcurrentConsumer } from "./pipeline/concurrent-consumer.js";
import { configService } from "@switchyard/workspace";
import type { DeliveryConfig } from "./config.js";
import { DeadLetters } from "./retries/dead-letters.js";
import { deliveryApi } from "./api/delivery-api.js";
import { DeliveryLog } from "./api/delivery-log.js";
import { DeliveryStats } from "./api/delivery-stats.js";
import { DestinationGates } from "./pipeline/destination-gate.js";
import { FirstAttempts } from "./pipeline/first-attempts.js";
import { HandlingFailures } from "./pipeline/handling-failures.js";
import { DeliveryMetrics } from "./metrics.js";
import { Retries } from "./retries/retries.js";
import { PoisonMessages } from "./retries/poison.js";
import { RetryQueue } from "./retries/retry-queue.js";
import { Settler } from "./pipeline/settle.js";
import { CALLS_CONSUMER, ensureDeliveryConsumers, ensureDeliveryStreams, RETRY_CONSUMER } from "@switchyard/bus";
import { WebhookSender } from "./outbound/webhook-sender.js";

/** See GateOptions.stallMs: a stall is called after 250 ms to 1 s without an answer, depending on the receiver's usual answer time. */
const STALL_MS = 1_000;
const MIN_STALL_MS = 250;
/** A failing message's redelivery delay doubles up to this. */
const MAX_HANDLING_RETRY_DELAY_MS = 30_000;

export interface DeliveryHandle {
  readonly grpcPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  /** Stops taking messages, finishes the deliveries in flight, drains NATS. */
  stop(): Promise<void>;
}

/** Starts the delivery service: streams and consumers, the two delivery loops, and its gRPC APIs. */
export function startDelivery(config: DeliveryConfig, logger: Logger): Promise<DeliveryHandle> {
  return withOpsServer({ host: config.HOST, port: config.DELIVERY_OPS_PORT, logger }, (ops) => startWithOps(config, logger, ops));
}

async function startWithOps(config: DeliveryConfig, logger: Logger, ops: OpsServer): Promise<DeliveryHandle> {
  const names = busNames(config.SWITCHYARD_NAMESPACE);
  const bus = await connectBus({ servers: config.NATS_URL, name: "switchyard-delivery", logger });
  const jsm = await jetstreamManager(bus.nc);
  const js = jetstream(bus.nc);
  const replicas = config.SWITCHYARD_STREAM_REPLICAS;
  await ensureCallsStream(jsm, names, {
    duplicateWindowMs: config.SWITCHYARD_DUPLICATE_WINDOW_MS,
    maxAgeMs: config.SWITCHYARD_CALLS_MAX_AGE_MS,
    replicas,
  });
  await ensureDeliveryStreams(jsm, names, {
    replicas,
    deadLetterMaxAgeMs: config.DELIVERY_DEAD_LETTER_MAX_AGE_MS,
    deliveryLogMaxAgeMs: config.DELIVERY_LOG_MAX_AGE_MS,
  });
  await ensureDeliveryConsumers(jsm, names);

  const { kv: configKv, workspace } = await openWorkspace({
    js,
    names,
    replicas: replicas,
    workspaceFile: config.SWITCHYARD_WORKSPACE_FILE,
    logger,
  });
  const statsKv = await new Kvm(js).create(names.deliveryStatsBucket, { history: 1, replicas });

  const sender = new WebhookSender({
    timeoutMs: config.DELIVERY_REQUEST_TIMEOUT_MS,
    maxResponseBytes: config.DELIVERY_MAX_RESPONSE_BYTES,
    connectionsPerOrigin: config.DELIVERY_DESTINATION_CONCURRENCY,
    addressPolicy: config.DELIVERY_ALLOWED_CIDRS,
    ...(config.DELIVERY_EXTRA_CA_FILE ? { extraCaCertificates: [await readFile(config.DELIVERY_EXTRA_CA_FILE, "utf8")] } : {}),
  });
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
  const log = new DeliveryLog(js, names, logger);
  const stats = new DeliveryStats(statsKv, logger);
  const schedule = {
    baseDelayMs: config.DELIVERY_RETRY_BASE_DELAY_MS,
    maxDelayMs: config.DELIVERY_RETRY_MAX_DELAY_MS,
    windowMs: config.DELIVERY_RETRY_WINDOW_MS,
  };
  const metrics = new DeliveryMetrics(ops.registry, { bus, names });
  const poison = new PoisonMessages(js, names, (from, reason) => metrics.poisoned(from, reason), logger);
  const handlingFailureOptions = {
    failureDelayMs: config.DELIVERY_HANDLING_RETRY_DELAY_MS,
    maxFailureDelayMs: MAX_HANDLING_RETRY_DELAY_MS,
    maxFailures: config.DELIVERY_MAX_HANDLING_FAILURES,
  };
  const settler = new Settler({ retryQueue, deadLetters, log, stats, metrics, schedule, logger });
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
  const firstAttempts = new FirstAttempts({
    workspace,
    sender,
    gates,
    settler,
    retryQueue,
    metrics,
    poison,
    logger,
    awaitingBatches: config.DELIVERY_AWAITING_BATCHES,
    heartbeatMs,
    failures: callsFailures,
  });
  const retries = new Retries({ workspace, sender, gates, settler, retryQueue, metrics, poison, windowMs: schedule.windowMs, logger });

  const callsConsumer = ConcurrentConsumer.start(
    await js.consumers.get(names.callsStream, CALLS_CONSUMER),
    (message) => firstAttempts.handle(message),
    { heartbeatMs, concurrency: config.DELIVERY_BATCH_CONCURRENCY, failures: callsFailures },
    logger,
  );
  const retryConsumer = ConcurrentConsumer.start(
    await js.consumers.get(names.retryStream, RETRY_CONSUMER),
    (message) => retries.handle(message),
    { heartbeatMs, concurrency: config.DELIVERY_RETRY_CONCURRENCY, failures: retryFailures },
    logger,
  );

  const grpc = await startGrpcServer({
    host: config.HOST,
    port: config.DELIVERY_GRPC_PORT,
    logger,
    tls: await loadServerTls(config),
    services: [
      {
        name: "switchyard.v1.DeliveryService",
        definition: DeliveryServiceService,
        implementation: deliveryApi({ adminToken: config.SWITCHYARD_ADMIN_TOKEN, workspace, deadLetters, retryQueue, log, stats, logger }),
      },
      {
        name: "switchyard.v1.ConfigService",
        definition: configApi.ConfigServiceService,
        implementation: configService({ adminToken: config.SWITCHYARD_ADMIN_TOKEN, kv: configKv, logger }),
      },
    ],
  });
  ops.readiness.onChange((ready) => grpc.setServing(ready));
  await ops.readiness.watch({
    bus,
    streams: [
      names.callsStream,
      names.retryStream,
      names.deadStream,
      names.poisonStream,
      names.deliveryLogStream,
      kvStream(names.configBucket),
      kvStream(names.deliveryStatsBucket),
    ],
    consumers: [
      [names.callsStream, CALLS_CONSUMER],
      [names.retryStream, RETRY_CONSUMER],
    ],
  });
  logger.info(
    { grpcPort: grpc.port, opsPort: ops.port, namespace: names.namespace, allowedCidrs: config.DELIVERY_ALLOWED_CIDRS.allowlist },
    "delivery ready",
  );

  return {
    grpcPort: grpc.port,
    opsPort: ops.port,
    stop: async () => {
      ops.readiness.shutdown();
      await grpc.shutdown(config.SHUTDOWN_GRACE_MS);
      // Batches waiting outside a slot (see FirstAttempts) finish once their consumer has stopped handing out more.
      await Promise.all([callsConsumer.stop().then(() => firstAttempts.drain()), retryConsumer.stop()]);
      await stats.close();
      workspace.close();
      await sender.close();
      await bus.drain();
      await ops.stop();
    },
  };
}
