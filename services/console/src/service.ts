import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { credentials } from "@grpc/grpc-js";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { busNames } from "@switchyard/bus";
import { connectBus, kvStream, loadServerTls, StartupPatience, withOpsServer, type Logger } from "@switchyard/platform";
import { openConfigBucket, WorkspaceView } from "@switchyard/workspace";
import { GrpcGateway } from "./api/grpc-gateway.js";
import { SessionStore } from "./auth/sessions.js";
import { TrustedProxies } from "./auth/client-address.js";
import { SignInCheck, SignInLimiter } from "./auth/sign-in.js";
import { readConfiguredFile, type ConsoleConfig } from "./config.js";
import { consoleHandler } from "./http/console-server.js";
import { loadWebAssets } from "./http/web-assets.js";
import { streamSourceCalls } from "./live/calls-feed.js";
import { Overview, type DeliveryCounters } from "./live/overview.js";

/** How often the overview's live view sends a fresh snapshot. */
const OVERVIEW_PUSH_MS = 2_000;

export interface ConsoleHandle {
  readonly httpPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  /** Closes the web server (live views end), stops reading the bus, drains NATS. */
  stop(): Promise<void>;
}

/** The built web app next to this module: dist/web beside the bundle, or services/console/dist/web from the source. */
function defaultWebDir(): string {
  const here = fileURLToPath(import.meta.url);
  return path.basename(path.dirname(here)) === "dist"
    ? path.join(path.dirname(here), "web")
    : path.resolve(path.dirname(here), "../dist/web");
}

export async function startConsole(config: ConsoleConfig, logger: Logger): Promise<ConsoleHandle> {
  // Everything that can be wrong with a setting is found before anything opens.
  const tls = await loadServerTls(config);
  const assets = loadWebAssets(config.CONSOLE_WEB_DIR ?? defaultWebDir());
  const upstreamCredentials = config.CONSOLE_GRPC_CA_FILE
    ? credentials.createSsl(readConfiguredFile("CONSOLE_GRPC_CA_FILE", config.CONSOLE_GRPC_CA_FILE), tls?.key ?? null, tls?.cert ?? null)
    : undefined;

  const opsOptions = { host: config.HOST, port: config.CONSOLE_OPS_PORT, logger, readinessGraceMs: config.SWITCHYARD_READINESS_GRACE_MS };
  return withOpsServer(opsOptions, async (ops) => {
    const names = busNames(config.SWITCHYARD_NAMESPACE);
    const bus = await connectBus({ servers: config.NATS_URL, name: "switchyard-console", logger });
    const js = jetstream(bus.nc);
    const patience = new StartupPatience({ logger, readiness: ops.readiness });
    const jsm = await patience.run("JetStream", () => jetstreamManager(bus.nc));
    const configKv = await patience.run("the configuration bucket", () => openConfigBucket(js, names, config.SWITCHYARD_STREAM_REPLICAS));
    const workspace = await patience.run("the configuration view", () => WorkspaceView.open(configKv, logger));
    const gateway = new GrpcGateway({
      addresses: {
        delivery: config.CONSOLE_DELIVERY_ADDRESS,
        audience: config.CONSOLE_AUDIENCE_ADDRESS,
        insights: config.CONSOLE_INSIGHTS_ADDRESS,
      },
      adminToken: config.SWITCHYARD_ADMIN_TOKEN,
      timeoutMs: config.CONSOLE_GRPC_TIMEOUT_MS,
      credentials: upstreamCredentials,
    });
    const overview = new Overview({ js, jsm, names, workspace, readCounters: () => readDeliveryCounters(gateway), logger });
    overview.start();
    const sessions = new SessionStore(config.CONSOLE_SESSION_MAX_AGE_MS);

    const handler = consoleHandler({
      assets,
      sessions,
      signIn: new SignInCheck(config.SWITCHYARD_ADMIN_TOKEN, config.SWITCHYARD_CONSOLE_PASSWORD_HASH),
      limiter: new SignInLimiter(),
      trustedProxies: new TrustedProxies(config.CONSOLE_TRUSTED_PROXIES),
      gateway,
      live: {
        overviewSnapshot: () => overview.snapshot(),
        overview: (events) => {
          events.send("overview", overview.snapshot());
          const timer = setInterval(() => events.send("overview", overview.snapshot()), OVERVIEW_PUSH_MS);
          events.onClose(() => clearInterval(timer));
        },
        calls: (sourceId, events, recent) => streamSourceCalls({ js, names, sourceId, events, logger, recent }),
      },
      secure: tls !== undefined,
      publicOrigin: config.CONSOLE_PUBLIC_ORIGIN,
      sessionMaxAgeMs: config.CONSOLE_SESSION_MAX_AGE_MS,
      logger,
    });
    const server: Server = tls
      ? createHttpsServer({ cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true } : {}) }, handler)
      : createHttpServer(handler);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.CONSOLE_HTTP_PORT, config.HOST, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const httpPort = (server.address() as AddressInfo).port;

    await ops.readiness.watch({ bus, streams: [kvStream(names.configBucket)] });
    logger.info({ httpPort, opsPort: ops.port, namespace: names.namespace, tls: tls !== undefined }, "console ready");

    return {
      httpPort,
      opsPort: ops.port,
      stop: async () => {
        ops.readiness.shutdown();
        // Live views never finish on their own: close their connections once the rest has been answered.
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const force = setTimeout(() => server.closeAllConnections(), Math.min(config.SHUTDOWN_GRACE_MS, 1_000));
        await closed;
        clearTimeout(force);
        await overview.stop();
        sessions.close();
        gateway.close();
        workspace.close();
        await bus.drain();
        await ops.stop();
      },
    };
  });
}

/** DeliveryService.GetDeliveryStats as the overview reads it; undefined when delivery does not answer. */
async function readDeliveryCounters(gateway: GrpcGateway): Promise<Map<string, DeliveryCounters> | undefined> {
  const result = await gateway.callByName("switchyard.v1.DeliveryService/GetDeliveryStats", {});
  if (!result.ok) return undefined;
  const { destinations = [] } = result.json;
  const counters = new Map<string, DeliveryCounters>();
  for (const entry of destinations) {
    counters.set(entry.destinationId ?? "", {
      delivered: Number(entry.delivered ?? 0),
      failedAttempts: Number(entry.failedAttempts ?? 0),
      deadLettered: Number(entry.deadLettered ?? 0),
    });
  }
  return counters;
}
