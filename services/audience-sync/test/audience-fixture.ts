import { credentials, Metadata, type ServiceError as GrpcError } from "@grpc/grpc-js";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import {
  AudienceServiceClient,
  DeletionServiceClient,
  RequestDeletionRequest,
  type ListAudiencesResponse,
  SyncAudienceIncrementRequest,
  SyncTraitIncrementRequest,
  type RequestDeletionResponse,
  type SyncHeader,
  type SyncSummary,
  type TraitValue,
} from "@switchyard/contracts";
import { startDelivery, loadDeliveryConfig, type DeliveryHandle } from "@switchyard/delivery";
import { applyWorkspaceFile, openConfigBucket, workspaceFileSchema } from "@switchyard/workspace";
import { busNames, type BusNames, CALLS_CONSUMER } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import { LOOPBACK_CIDRS, NatsServer, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { loadAudienceSyncConfig, startAudienceSync, type AudienceSyncHandle } from "../src/index.js";

export type SyncResponse = { summary?: SyncSummary | undefined };

export const ADMIN_TOKEN = "audience-admin-token-0123456789";

export interface AudienceFixture {
  nats: NatsServer;
  names: BusNames;
  nc: NatsConnection;
  jsm: JetStreamManager;
  audienceSync: AudienceSyncHandle;
  delivery: DeliveryHandle;
  client: AudienceClient;
  /** Stops audience-sync and starts a fresh one (state must come from JetStream). */
  restartAudienceSync(): Promise<void>;
  /** Starts a second audience-sync on the same bus, as an operator running two instances would; stopped at dispose. */
  startSecondAudienceSync(): Promise<AudienceClient>;
  /** Resolves once delivery has handled everything on the calls stream. */
  deliveredAll(): Promise<void>;
  dispose(): Promise<void>;
}

/** nats-server, the delivery service and audience-sync, sharing one namespace and workspace. */
export async function startAudienceFixture(workspace: unknown): Promise<AudienceFixture> {
  const nats = await NatsServer.start();
  const namespace = uniqueNamespace();
  const names = busNames(namespace);
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const jsm = await jetstreamManager(nc);
  await applyWorkspaceFile(await openConfigBucket(jetstream(nc), names, 1), workspaceFileSchema.parse(workspace));
  const env = {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
  };
  const logger = createLogger({ service: "test", level: "silent" });
  const delivery = await startDelivery(
    loadDeliveryConfig({
      ...env,
      DELIVERY_GRPC_PORT: "0",
      DELIVERY_OPS_PORT: "0",
      DELIVERY_RETRY_BASE_DELAY_MS: "100",
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
    }),
    logger,
  );
  // A client that cancels a stream may leave its HTTP/2 stream open until the connection
  // closes; a short grace keeps teardown quick (shutdown forces close after it).
  const startSync = () =>
    startAudienceSync(
      loadAudienceSyncConfig({ ...env, AUDIENCE_GRPC_PORT: "0", AUDIENCE_OPS_PORT: "0", SHUTDOWN_GRACE_MS: "2000" }),
      logger,
    );
  let audienceSync = await startSync();
  const extraInstances: { service: AudienceSyncHandle; client: AudienceClient }[] = [];
  let client = new AudienceClient(`127.0.0.1:${audienceSync.grpcPort}`);

  const fixture: AudienceFixture = {
    nats,
    names,
    nc,
    jsm,
    audienceSync,
    delivery,
    client,
    restartAudienceSync: async () => {
      client.close();
      await audienceSync.stop();
      audienceSync = await startSync();
      client = new AudienceClient(`127.0.0.1:${audienceSync.grpcPort}`);
      fixture.audienceSync = audienceSync;
      fixture.client = client;
    },
    startSecondAudienceSync: async () => {
      const second = await startSync();
      const secondClient = new AudienceClient(`127.0.0.1:${second.grpcPort}`);
      extraInstances.push({ service: second, client: secondClient });
      return secondClient;
    },
    deliveredAll: async () => {
      await waitFor(
        "delivery to handle every call",
        async () => {
          const consumer = await jsm.consumers.info(names.callsStream, CALLS_CONSUMER);
          return consumer.num_pending === 0 && consumer.num_ack_pending === 0;
        },
        { timeoutMs: 30_000 },
      );
    },
    dispose: async () => {
      fixture.client.close();
      await fixture.audienceSync.stop().catch(() => {});
      for (const extra of extraInstances) {
        extra.client.close();
        await extra.service.stop().catch(() => {});
      }
      await delivery.stop().catch(() => {});
      await nc.close();
      await nats.dispose();
    },
  };
  return fixture;
}

/** Promise wrappers over the generated audience and deletion clients. */
export class AudienceClient {
  private readonly audiences: AudienceServiceClient;
  private readonly deletion: DeletionServiceClient;

  constructor(target: string) {
    this.audiences = new AudienceServiceClient(target, credentials.createInsecure());
    this.deletion = new DeletionServiceClient(target, credentials.createInsecure());
  }

  /** Streams a snapshot in chunks. With `cutAfter`, cancels the call after that many chunks (a cut-off stream). */
  audienceSnapshot(header: Partial<SyncHeader>, userIds: string[], options: { chunk?: number; cutAfter?: number; token?: string } = {}) {
    return this.stream<SyncResponse>(
      (callback) => this.audiences.syncAudienceSnapshot(metadata(options.token), callback),
      header,
      chunks(userIds, options.chunk ?? 1000).map((userIds) => ({ userIds })),
      options.cutAfter,
    );
  }

  traitSnapshot(header: Partial<SyncHeader>, values: TraitValue[], options: { chunk?: number } = {}) {
    return this.stream<SyncResponse>(
      (callback) => this.audiences.syncTraitSnapshot(metadata(), callback),
      header,
      chunks(values, options.chunk ?? 1000).map((values) => ({ values })),
    );
  }

  audienceIncrement(request: Partial<SyncAudienceIncrementRequest>): Promise<SyncResponse> {
    return new Promise((resolve, reject) =>
      this.audiences.syncAudienceIncrement(SyncAudienceIncrementRequest.fromPartial(request), metadata(), (error, response) =>
        error ? reject(error) : resolve(response as SyncResponse),
      ),
    );
  }

  traitIncrement(request: Partial<SyncTraitIncrementRequest>): Promise<SyncResponse> {
    return new Promise((resolve, reject) =>
      this.audiences.syncTraitIncrement(SyncTraitIncrementRequest.fromPartial(request), metadata(), (error, response) =>
        error ? reject(error) : resolve(response as SyncResponse),
      ),
    );
  }

  listAudiences(sourceId = ""): Promise<ListAudiencesResponse> {
    return new Promise((resolve, reject) =>
      this.audiences.listAudiences({ sourceId }, metadata(), (error, response) => (error ? reject(error) : resolve(response))),
    );
  }

  requestDeletion(request: Partial<RequestDeletionRequest>): Promise<RequestDeletionResponse> {
    return new Promise((resolve, reject) =>
      this.deletion.requestDeletion(RequestDeletionRequest.fromPartial(request), metadata(), (error, response) =>
        error ? reject(error) : resolve(response),
      ),
    );
  }

  close(): void {
    this.audiences.close();
    this.deletion.close();
  }

  private stream<Response>(
    open: (callback: (error: GrpcError | null, response: Response) => void) => {
      write(message: object): boolean;
      end(): void;
      cancel(): void;
    },
    header: Partial<SyncHeader>,
    bodies: object[],
    cutAfter?: number,
  ): Promise<Response> {
    return new Promise((resolve, reject) => {
      const call = open((error, response) => (error ? reject(error) : resolve(response)));
      const fullHeader: SyncHeader = { sourceId: "", name: "", syncId: "", expectedCount: 0, ...header };
      const messages = bodies.length > 0 ? bodies : [{}];
      messages.forEach((body, index) => {
        if (cutAfter !== undefined && index >= cutAfter) return;
        call.write({ userIds: [], values: [], ...body, header: index === 0 ? fullHeader : undefined });
      });
      if (cutAfter !== undefined) call.cancel();
      else call.end();
    });
  }
}

function metadata(token = ADMIN_TOKEN): Metadata {
  const result = new Metadata();
  result.set("authorization", `Bearer ${token}`);
  return result;
}

function chunks<T>(items: T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

export function isGrpcError(error: unknown): error is GrpcError {
  return error instanceof Error && "code" in error;
}
