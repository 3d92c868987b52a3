import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";

/**
 * A NATS connection that reconnects forever and knows whether it is up right
 * now, so request handlers can answer UNAVAILABLE at once instead of queueing
 * work behind a dead link.
 */
export interface BusConnection {
  readonly nc: NatsConnection;
  isConnected(): boolean;
  /** Calls `listener` whenever the link goes down or comes back (readiness re-checks then, not on its next tick). */
  onLinkChange(listener: (connected: boolean) => void): void;
  /** Drains subscriptions and pending publishes, then closes. */
  drain(): Promise<void>;
}

export interface ConnectOptions {
  servers: string[];
  name: string;
  logger: Logger;
}

/** How often start-up says it still waits for a NATS server to answer. */
const WAITING_LOG_EVERY_MS = 5_000;

export async function connectBus({ servers, name, logger }: ConnectOptions): Promise<BusConnection> {
  const startedAt = Date.now();
  const waiting = setInterval(() => {
    logger.warn({ servers, waitedMs: Date.now() - startedAt }, `waiting for NATS at ${servers.join(", ")}; trying again`);
  }, WAITING_LOG_EVERY_MS);
  const nc = await connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
    pingInterval: 10_000,
    // An async stack capture per request costs a few percent of ingest's CPU; our errors carry their own context.
    noAsyncTraces: true,
  }).finally(() => clearInterval(waiting));
  let connected = true;
  const linkListeners: ((connected: boolean) => void)[] = [];
  const setConnected = (value: boolean) => {
    if (connected === value) return;
    connected = value;
    for (const listener of linkListeners) listener(value);
  };
  logger.info({ server: nc.getServer() }, "connected to NATS");

  void (async () => {
    for await (const status of nc.status()) {
      switch (status.type) {
        case "disconnect":
          setConnected(false);
          logger.warn({ server: status.server }, "disconnected from NATS");
          break;
        case "reconnect":
          setConnected(true);
          logger.info({ server: status.server }, "reconnected to NATS");
          break;
        case "error":
          logger.warn({ err: status.error }, "NATS connection error");
          break;
        default:
          break;
      }
    }
  })();
  void nc.closed().then((error) => {
    setConnected(false);
    if (error) logger.error({ err: error }, "NATS connection closed with an error");
  });

  return {
    nc,
    isConnected: () => connected && !nc.isClosed(),
    onLinkChange: (listener) => {
      linkListeners.push(listener);
    },
    drain: async () => {
      if (!nc.isClosed()) await nc.drain();
    },
  };
}
