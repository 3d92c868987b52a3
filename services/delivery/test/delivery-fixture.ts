import { credentials, Metadata } from "@grpc/grpc-js";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { BUS_MESSAGE_TYPE_NAMES, CALLS_CONSUMER, busMessageHeaders } from "@switchyard/bus";
import {
  CallBatch,
  configApi,
  DeliveryServiceClient,
  GetDeliveryStatsRequest,
  ListDeadLettersRequest,
  ListDeliveryAttemptsRequest,
  ReplayDeadLettersRequest,
  type Call,
  type GetDeliveryStatsResponse,
  type ListDeadLettersResponse,
  type ListDeliveryAttemptsResponse,
  type ReplayDeadLettersResponse,
} from "@switchyard/contracts";
import { applyWorkspaceFile, kvKeys, openConfigBucket, workspaceFileSchema, type Destination } from "@switchyard/workspace";
import { busNames, ensureCallsStream, type BusNames } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import { LOOPBACK_CIDRS, NatsServer, uniqueNamespace, waitFor, type NatsServerOptions } from "@switchyard/testkit";
import { loadDeliveryConfig, startDelivery, type DeliveryHandle } from "../src/index.js";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/** Retry settings fast enough for tests; the request timeout stays the contract's 5 s (docs/contract.md §7.4). */
export const FAST_RETRY_ENV = {
  DELIVERY_RETRY_BASE_DELAY_MS: "100",
  DELIVERY_RETRY_MAX_DELAY_MS: "800",
  DELIVERY_RETRY_WINDOW_MS: "60000",
  DELIVERY_FAILING_COOLDOWN_MS: "300",
};

export interface DeliveryFixture {
  nats: NatsServer;
  names: BusNames;
  nc: NatsConnection;
  js: JetStreamClient;
  configKv: KV;
  delivery: DeliveryHandle;
  admin: AdminClients;
  /** Publishes calls as ingest would: one CallBatch on the source's subject. */
  publishCalls(sourceId: string, calls: Call[]): Promise<void>;
  putDestination(destination: Partial<Destination> & Pick<Destination, "id" | "settings">): Promise<void>;
  /** Resolves when the calls consumer has acked everything published so far and the retry stream is empty. */
  settled(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startDeliveryFixture(options: {
  workspace: unknown;
  env?: Record<string, string>;
  nats?: NatsServerOptions;
}): Promise<DeliveryFixture> {
  const nats = await NatsServer.start(options.nats);
  const namespace = uniqueNamespace();
  const names = busNames(namespace);
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const configKv = await openConfigBucket(js, names, 1);
  await applyWorkspaceFile(configKv, workspaceFileSchema.parse(options.workspace));
  await ensureCallsStream(jsm, names, { duplicateWindowMs: 60_000, maxAgeMs: 3600_000, replicas: 1 });

  const config = loadDeliveryConfig({
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    DELIVERY_GRPC_PORT: "0",
    DELIVERY_OPS_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
    ...FAST_RETRY_ENV,
    ...options.env,
  });
  const delivery = await startDelivery(config, createLogger({ service: "delivery", level: "silent" }));
  const admin = new AdminClients(`127.0.0.1:${delivery.grpcPort}`);
  let batchCounter = 0;

  return {
    nats,
    names,
    nc,
    js,
    configKv,
    delivery,
    admin,
    publishCalls: async (sourceId, calls) => {
      const header = busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch);
      const batch: CallBatch = { batchId: `test-${++batchCounter}`, sourceId, receivedAt: new Date(), calls };
      await js.publish(names.callsSubject(sourceId), CallBatch.encode(batch).finish(), {
        headers: header,
        msgID: `${sourceId}:${batch.batchId}`,
      });
    },
    putDestination: async (destination) => {
      const record = workspaceFileSchema.parse({ destinations: [destination] }).destinations[0];
      await configKv.put(kvKeys.destination(destination.id), JSON.stringify(record));
    },
    settled: async () => {
      await waitFor("deliveries to settle", async () => {
        const calls = await jsm.consumers.info(names.callsStream, CALLS_CONSUMER);
        const retry = await jsm.streams.info(names.retryStream);
        return calls.num_pending === 0 && calls.num_ack_pending === 0 && retry.state.messages === 0;
      });
    },
    dispose: async () => {
      admin.close();
      await delivery.stop().catch(() => {});
      await nc.close();
      await nats.dispose();
    },
  };
}

/** Promise wrappers over the admin gRPC clients (delivery and configuration APIs). */
export class AdminClients {
  readonly delivery: DeliveryServiceClient;
  readonly config: configApi.ConfigServiceClient;

  constructor(target: string) {
    this.delivery = new DeliveryServiceClient(target, credentials.createInsecure());
    this.config = new configApi.ConfigServiceClient(target, credentials.createInsecure());
  }

  metadata(token: string | null = ADMIN_TOKEN): Metadata {
    const metadata = new Metadata();
    if (token !== null) metadata.set("authorization", `Bearer ${token}`);
    return metadata;
  }

  /**
   * Calls a unary method of a generated client: `type` completes the partial
   * request with proto3 defaults (the generated encoders need every field).
   */
  call<Request, Response>(
    client: DeliveryServiceClient | configApi.ConfigServiceClient,
    method: string,
    type: { fromPartial(partial: any): Request },
    request: Partial<Request>,
    token: string | null = ADMIN_TOKEN,
  ): Promise<Response> {
    const fn = (client as unknown as Record<string, ((...args: unknown[]) => unknown) | undefined>)[method];
    if (!fn) throw new Error(`no method ${method}`);
    return new Promise((resolve, reject) =>
      fn.call(
        client,
        type.fromPartial(request),
        this.metadata(token),
        { deadline: Date.now() + 15_000 },
        (error: Error | null, response: Response) => (error ? reject(error) : resolve(response)),
      ),
    );
  }

  listDeadLetters(request: Partial<ListDeadLettersRequest> = {}): Promise<ListDeadLettersResponse> {
    return this.call(this.delivery, "listDeadLetters", ListDeadLettersRequest, request);
  }

  replayDeadLetters(request: Partial<ReplayDeadLettersRequest>): Promise<ReplayDeadLettersResponse> {
    return this.call(this.delivery, "replayDeadLetters", ReplayDeadLettersRequest, request);
  }

  listDeliveryAttempts(request: Partial<ListDeliveryAttemptsRequest> = {}): Promise<ListDeliveryAttemptsResponse> {
    return this.call(this.delivery, "listDeliveryAttempts", ListDeliveryAttemptsRequest, request);
  }

  getDeliveryStats(request: Partial<GetDeliveryStatsRequest> = {}): Promise<GetDeliveryStatsResponse> {
    return this.call(this.delivery, "getDeliveryStats", GetDeliveryStatsRequest, request);
  }

  close(): void {
    this.delivery.close();
    this.config.close();
  }
}

/** A Call as ingest would put it on the bus. */
export function busCall(messageId: string, payload: Call["payload"], overrides: Partial<Call> = {}): Call {
  const now = new Date();
  return {
    messageId,
    userId: "user-1",
    anonymousId: "",
    timestamp: now,
    context: undefined,
    integrations: undefined,
    receivedAt: now,
    payload,
    ...overrides,
  };
}

export const trackPayload = (event = "Order Completed"): Call["payload"] => ({
  $case: "track",
  value: { event, properties: { revenue: 10 } },
});
