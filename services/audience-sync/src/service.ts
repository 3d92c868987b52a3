import { Kvm } from "@nats-io/kv";
import { Objm, setSha256Backend } from "@nats-io/obj";
import { DeletionServiceService } from "@switchyard/contracts";
import { BatchPublisher, ensureBucketReplicas } from "@switchyard/bus";
import { kvStream, objectStoreStream, type Logger } from "@switchyard/platform";
import { startServiceRuntime, type RuntimeParts, type ServiceParts } from "@switchyard/runtime";
import { audienceApi, audienceErrors } from "./audience-api.js";
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

export async function startAudienceSync(config: AudienceSyncConfig, logger: Logger): Promise<AudienceSyncHandle> {
  const runtime = await startServiceRuntime({
    name: "audience-sync",
    config,
    logger,
    ports: { grpc: config.AUDIENCE_GRPC_PORT, ops: config.AUDIENCE_OPS_PORT },
    start: (parts) => audienceParts(config, logger, parts),
  });
  return { grpcPort: runtime.grpcPort, opsPort: runtime.opsPort, stop: () => runtime.stop() };
}

async function audienceParts(
  config: AudienceSyncConfig,
  logger: Logger,
  { ops, bus, js, jsm, names, workspace, prepare }: RuntimeParts,
): Promise<ServiceParts> {
  const replicas = config.SWITCHYARD_STREAM_REPLICAS;
  const metaKv = await prepare("the audience state bucket", () => new Kvm(js).create(names.audienceStateBucket, { history: 1, replicas }));
  // The object store digests every state object it writes and reads; node:crypto
  // does so natively, where the default SHA-256 is pure JavaScript.
  setSha256Backend("native");
  const objects = await prepare("the audience object store", () => new Objm(js).create(names.audienceStateObjects, { replicas }));
  await prepare(`replicas of ${kvStream(names.audienceStateBucket)}`, () =>
    ensureBucketReplicas(jsm, kvStream(names.audienceStateBucket), replicas),
  );
  await prepare(`replicas of ${objectStoreStream(names.audienceStateObjects)}`, () =>
    ensureBucketReplicas(jsm, objectStoreStream(names.audienceStateObjects), replicas),
  );

  const emitter = new BatchPublisher({ bus, js, names });
  const store = new StateStore(metaKv, objects, new CommittedStateCache(config.AUDIENCE_STATE_CACHE_MB * 1024 * 1024));
  const metrics = new AudienceMetrics(ops.registry);
  const engine = new SyncEngine({ workspace, store, emitter, metrics, logger });
  return {
    grpc: [
      {
        name: "switchyard.v1.AudienceService",
        definition: audienceServiceDefinition,
        implementation: audienceApi({ engine }),
        auth: "admin",
        mapError: audienceErrors,
      },
      {
        name: "switchyard.v1.DeletionService",
        definition: DeletionServiceService,
        implementation: deletionApi({ workspace, emitter, metrics, logger }),
        auth: "admin",
      },
    ],
    readiness: { streams: [kvStream(names.audienceStateBucket), objectStoreStream(names.audienceStateObjects)] },
    finish: () => store.settled(),
  };
}
