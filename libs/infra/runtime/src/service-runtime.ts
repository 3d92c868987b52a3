import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { busNames, ensureCallsStream, withAckedPublish, type BusNames } from "@switchyard/bus";
import {
  connectBus,
  kvStream,
  loadServerTls,
  startGrpcServer,
  StartupPatience,
  withOpsServer,
  type BusConnection,
  type GrpcServerHandle,
  type GrpcServiceRegistration,
  type Logger,
  type OpsServer,
  type ServerTls,
  type TlsEnv,
} from "@switchyard/platform";
import { checkConfigSource, openWorkspace, type WorkspaceView } from "@switchyard/workspace";

/** The settings the shared start-up reads; every service's config has them. */
export interface RuntimeConfig extends TlsEnv {
  HOST: string;
  NATS_URL: string[];
  SWITCHYARD_NAMESPACE: string;
  SWITCHYARD_STREAM_REPLICAS: number;
  SWITCHYARD_DUPLICATE_WINDOW_MS: number;
  SWITCHYARD_CALLS_MAX_AGE_MS: number;
  SWITCHYARD_WORKSPACE_FILE?: string | undefined;
  /** "api" (default): the file seeds; "file": the file is the whole truth and ConfigService refuses writes. */
  SWITCHYARD_CONFIG_SOURCE?: "api" | "file" | undefined;
  /** Once ready, how long a requirement may fail before readiness turns false (default 15 s). */
  SWITCHYARD_READINESS_GRACE_MS?: number | undefined;
  /** Required by services registered with `auth: "admin"`; unset, they refuse every call. */
  SWITCHYARD_ADMIN_TOKEN?: string | undefined;
  SHUTDOWN_GRACE_MS: number;
}

/** What the shared start-up has opened when a service builds its own parts. */
export interface RuntimeParts {
  readonly ops: OpsServer;
  readonly bus: BusConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly names: BusNames;
  /** The configuration bucket (ConfigService writes it). */
  readonly configKv: KV;
  /** The live view of the workspace; closed by the runtime's stop. */
  readonly workspace: WorkspaceView;
  /** The servers' TLS settings, for a service's other servers (ingest's HTTP API). */
  readonly tls: ServerTls | undefined;
  /**
   * Runs a start-up step that needs the cluster (creating a bucket, looking up a consumer)
   * patiently: tried again with backoff while the cluster recovers, named in /readyz and the logs.
   */
  prepare<T>(what: string, step: () => Promise<T>): Promise<T>;
}

/** What a service adds to the runtime: its gRPC services, what readiness needs, and how to stop its own parts. */
export type ServiceParts<Own = undefined> = ServicePartsBase & (undefined extends Own ? { own?: Own } : { own: Own });

interface ServicePartsBase {
  grpc: GrpcServiceRegistration[];
  /** Streams and consumers readiness requires besides the calls stream and the configuration bucket. */
  readiness?: { streams?: string[]; consumers?: [stream: string, consumer: string][] };
  /** Fields of the "<name> ready" log line besides grpcPort, opsPort and namespace. */
  readyLog?: Record<string, unknown>;
  /** Runs while the gRPC server shuts down: close the service's other doors (ingest's HTTP API). */
  stopAccepting?: () => Promise<void>;
  /** Runs once no call comes in any more: finish the work in flight and close the service's own resources. */
  finish?: () => Promise<void>;
}

export interface ServiceRuntimeOptions<Own> {
  /** The service's name: its NATS connection is "switchyard-<name>", its ready line "<name> ready". */
  name: string;
  config: RuntimeConfig;
  logger: Logger;
  ports: { grpc: number; ops: number };
  /** Streams and consumers beyond the calls stream, created or updated before the workspace opens (delivery's). */
  ensureStreams?: (jsm: JetStreamManager, names: BusNames) => Promise<void>;
  /** Builds the service's own parts on the opened runtime. */
  start: (runtime: RuntimeParts) => Promise<ServiceParts<Own>>;
}

export interface ServiceRuntime<Own = undefined> {
  readonly grpcPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  /** What `start` returned as `own`: anything the service's handle needs from its parts (ingest's HTTP port). */
  readonly own: Own;
  /**
   * Stops in order: readiness reports unready; the gRPC server (with its grace
   * period) and the service's other doors close; the service finishes its work
   * in flight; the workspace view closes; NATS drains; the ops endpoint closes.
   */
  stop(): Promise<void>;
}

/**
 * The start-up every service shares: TLS settings (read first, so a bad one
 * stops start-up before anything opens), the ops endpoint, NATS, the calls
 * stream (and the service's own streams), the workspace, then the service's
 * own parts (`start`), the gRPC server with admin auth and metrics on the ops
 * registry, and readiness driving the gRPC health status. A failure closes
 * what was opened and rethrows, so start-up error lines stay as they were.
 */
export async function startServiceRuntime<Own = undefined>(options: ServiceRuntimeOptions<Own>): Promise<ServiceRuntime<Own>> {
  const { config, logger } = options;
  // Before connecting: a setting that cannot work is reported at once, not after NATS answers.
  checkConfigSource(config.SWITCHYARD_CONFIG_SOURCE ?? "api", config.SWITCHYARD_WORKSPACE_FILE);
  const tls = await loadServerTls(config);
  const opsOptions = { host: config.HOST, port: options.ports.ops, logger, readinessGraceMs: config.SWITCHYARD_READINESS_GRACE_MS };
  return withOpsServer(opsOptions, async (ops) => {
    const names = busNames(config.SWITCHYARD_NAMESPACE);
    ops.readiness.starting(`connecting to NATS at ${config.NATS_URL.join(", ")}`);
    const bus = await connectBus({ servers: config.NATS_URL, name: `switchyard-${options.name}`, logger });
    const patience = new StartupPatience({ logger, readiness: ops.readiness });
    const prepare = <T>(what: string, step: () => Promise<T>) => patience.run(what, step);
    let workspace: WorkspaceView | undefined;
    let parts: ServiceParts<Own> | undefined;
    let grpc: GrpcServerHandle | undefined;
    try {
      // The API check tells "JetStream not enabled" (which waiting cannot fix) from a cluster still electing its leader.
      const jsm = await prepare("JetStream", () => jetstreamManager(bus.nc));
      // Every publish a service makes is acknowledged through one reply subscription (libs/infra/bus, AckedPublisher).
      const js = withAckedPublish(jetstream(bus.nc), bus.nc);
      const replicas = config.SWITCHYARD_STREAM_REPLICAS;
      await prepare(`stream ${names.callsStream}`, () =>
        ensureCallsStream(jsm, names, {
          duplicateWindowMs: config.SWITCHYARD_DUPLICATE_WINDOW_MS,
          maxAgeMs: config.SWITCHYARD_CALLS_MAX_AGE_MS,
          replicas,
        }),
      );
      const ensureStreams = options.ensureStreams;
      if (ensureStreams) await prepare(`${options.name}'s streams`, () => ensureStreams(jsm, names));
      const opened = await prepare("the configuration bucket", () =>
        openWorkspace({
          js,
          names,
          replicas,
          workspaceFile: config.SWITCHYARD_WORKSPACE_FILE,
          configSource: config.SWITCHYARD_CONFIG_SOURCE,
          logger,
        }),
      );
      workspace = opened.workspace;

      parts = await options.start({ ops, bus, js, jsm, names, configKv: opened.kv, workspace, tls, prepare });
      grpc = await startGrpcServer({
        host: config.HOST,
        port: options.ports.grpc,
        logger,
        tls,
        services: parts.grpc,
        adminToken: config.SWITCHYARD_ADMIN_TOKEN,
        registry: ops.registry,
      });
      const server = grpc;
      ops.readiness.onChange((ready) => server.setServing(ready));
      await ops.readiness.watch({
        bus,
        streams: [names.callsStream, kvStream(names.configBucket), ...(parts.readiness?.streams ?? [])],
        ...(parts.readiness?.consumers ? { consumers: parts.readiness.consumers } : {}),
      });
      logger.info({ grpcPort: grpc.port, opsPort: ops.port, namespace: names.namespace, ...parts.readyLog }, `${options.name} ready`);
      return runtimeHandle(grpc, ops, bus, workspace, parts, config.SHUTDOWN_GRACE_MS);
    } catch (error) {
      await closeAfterFailure({ bus, workspace, parts, grpc }, logger);
      throw error;
    }
  });
}

function runtimeHandle<Own>(
  grpc: GrpcServerHandle,
  ops: OpsServer,
  bus: BusConnection,
  workspace: WorkspaceView,
  parts: ServiceParts<Own>,
  graceMs: number,
): ServiceRuntime<Own> {
  return {
    grpcPort: grpc.port,
    opsPort: ops.port,
    own: parts.own as Own,
    stop: async () => {
      ops.readiness.shutdown();
      await Promise.all([grpc.shutdown(graceMs), parts.stopAccepting?.()]);
      await parts.finish?.();
      workspace.close();
      await bus.drain();
      await ops.stop();
    },
  };
}

/** Best effort: the start-up error is what the operator needs to see, not a follow-up failure to close. */
async function closeAfterFailure<Own>(
  opened: {
    bus: BusConnection;
    workspace?: WorkspaceView | undefined;
    parts?: ServiceParts<Own> | undefined;
    grpc?: GrpcServerHandle | undefined;
  },
  logger: Logger,
): Promise<void> {
  const { bus, workspace, parts, grpc } = opened;
  try {
    await grpc?.shutdown(0);
    await parts?.stopAccepting?.();
    await parts?.finish?.();
    workspace?.close();
    await bus.nc.close();
  } catch (error) {
    logger.debug({ err: error }, "closing after a failed start-up");
  }
}
