import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm, setSha256Backend } from "@nats-io/obj";
import { DeletionServiceService } from "@switchyard/contracts";
import { BatchPublisher, busNames, ensureCallsStream } from "@switchyard/bus";
import {
  connectBus,
  kvStream,
  loadServerTls,
  objectStoreStream,
  startGrpcServer,
  withOpsServer,
  type Logger,
  type OpsServer,
} from "@switchyard/platform";
import { openWorkspace } from "@switchyard/workspace";
import { audienceApi } from "./audience-api.js";
import type { AudienceSyncConfig } from "./config.js";
import { CommittedStateCache } from "./committed-state-cache.js";
import { deletionApi } from "./deletion-api.js";
import { AudienceMetrics } from "./metrics.js";
import { audienceServiceDefinition } from "./snapshot-chunk.js";
import { StateStore } from "./state-store.js";
import { SyncEngine } from "./sync-engine.js";

export interface AudienceSyncHandle {
  readonly grpcPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  /** Stops accepting syncs, lets running ones finish, drains NATS. */
  stop(): Promise<void>;
}

export function startAudienceSync(config: AudienceSyncConfig, logger: Logger): Promise<AudienceSyncHandle> {
  return withOpsServer({ host: config.HOST, port: config.AUDIENCE_OPS_PORT, logger }, (ops) => startWithOps(config, logger, ops));
}

async function startWithOps(config: AudienceSyncConfig, logger: Logger, ops: OpsServer): Promise<AudienceSyncHandle> {
  const names = busNames(config.SWITCHYARD_NAMESPACE);
  const replicas = config.SWITCHYARD_STREAM_REPLICAS;
  const bus = await connectBus({ servers: config.NATS_URL, name: "switchyard-audience-sync", logger });
  const jsm = await jetstreamManager(bus.nc);
  const js = jetstream(bus.nc);
  await ensureCallsStream(jsm, names, {
    duplicateWindowMs: config.SWITCHYARD_DUPLICATE_WINDOW_MS,
    maxAgeMs: config.SWITCHYARD_CALLS_MAX_AGE_MS,
    replicas,
  });
  const { workspace } = await openWorkspace({
    js,
    names,
    replicas: replicas,
    workspaceFile: config.SWITCHYARD_WORKSPACE_FILE,
    logger,
  });
  const metaKv = await new Kvm(js).create(names.audienceStateBucket, { history: 1, replicas });
  // The object store digests every state object it writes and reads; node:crypto
  // does so many times faster than the default pure-JS SHA-256.
  setSha256Backend("native");
  const objects = await new Objm(js).create(names.audienceStateObjects, { replicas });

  const emitter = new BatchPublisher({ bus, js, names });
  const store = new StateStore(metaKv, objects, new CommittedStateCache(config.AUDIENCE_STATE_CACHE_MB * 1024 * 1024));
  const metrics = new AudienceMetrics(ops.registry);
  const engine = new SyncEngine({ workspace, store, emitter, metrics, logger });
  const adminToken = config.SWITCHYARD_ADMIN_TOKEN;
  const grpc = await startGrpcServer({
    host: config.HOST,
    port: config.AUDIENCE_GRPC_PORT,
    logger,
    tls: await loadServerTls(config),
    services: [
      {
        name: "switchyard.v1.AudienceService",
        definition: audienceServiceDefinition,
        implementation: audienceApi({ adminToken, engine, logger }),
      },
      {
        name: "switchyard.v1.DeletionService",
        definition: DeletionServiceService,
        implementation: deletionApi({ adminToken, workspace, emitter, metrics, logger }),
      },
    ],
  });
  ops.readiness.onChange((ready) => grpc.setServing(ready));
  await ops.readiness.watch({
    bus,
    streams: [
      names.callsStream,
      kvStream(names.configBucket),
      kvStream(names.audienceStateBucket),
      objectStoreStream(names.audienceStateObjects),
    ],
  });
  logger.info({ grpcPort: grpc.port, opsPort: ops.port, namespace: names.namespace }, "audience-sync ready");

  return {
    grpcPort: grpc.port,
    opsPort: ops.port,
    stop: async () => {
      ops.readiness.shutdown();
      await grpc.shutdown(config.SHUTDOWN_GRACE_MS);
      await store.settled();
      workspace.close();
      await bus.drain();
      await ops.stop();
    },
  };
}
