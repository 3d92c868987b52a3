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
  GetDeliveryAttemptRequest,
  GetDeliveryStatsRequest,
  ListDeadLettersRequest,
  ListDeliveryAttemptsRequest,
  ReplayDeadLettersRequest,
  type Call,
  type DeliveryAttempt,
  type GetDeliveryAttemptResponse,
  type GetDeliveryStatsResponse,
  type ListDeadLettersResponse,
  type ListDeliveryAttemptsResponse,
  type ReplayDeadLettersResponse,
} from "@switchyard/contracts";
import { applyWorkspaceFile, kvKeys, openConfigBucket, workspaceFileSchema, type Destination } from "@switchyard/workspace";
import { busNames, ensureCallsStream, type BusNames } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import {
  LOOPBACK_CIDRS,
  NatsServer,
  uniqueNamespace,
  waitFor,
  WebhookReceiver,
  type NatsServerOptions,
  type Responder,
} from "@switchyard/testkit";
import { afterEach } from "vitest";
import type { IngestHandle } from "@switchyard/ingest";
import { startIngestInProcess } from "../../ingest/test/ingest-fixture.js";
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
  /** Ingest started beside delivery by `startIngest`, if it was. */
  ingest: IngestHandle | undefined;
  /** Starts ingest in this process on the fixture's NATS server and namespace (stopped by dispose); resolves to its HTTP base URL. */
  startIngest(): Promise<string>;
  /** Resolves when the calls consumer has acked everything published so far and the retry stream is empty. */
  settled(): Promise<void>;
  dispose(): Promise<void>;
}

export interface DeliveryFixtureOptions {
  workspace: unknown;
  env?: Record<string, string>;
  nats?: NatsServerOptions;
}

export async function startDeliveryFixture(options: DeliveryFixtureOptions): Promise<DeliveryFixture> {
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

  const fixture: DeliveryFixture = {
    nats,
    names,
    nc,
    js,
    configKv,
    delivery,
    admin,
    ingest: undefined,
    startIngest: async () => {
      const { ingest } = await startIngestInProcess({ natsUrl: nats.url, namespace });
      fixture.ingest = ingest;
      return `http://127.0.0.1:${ingest.httpPort}`;
    },
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
      await fixture.ingest?.stop().catch(() => {});
      admin.close();
      await delivery.stop().catch(() => {});
      await nc.close();
      await nats.dispose();
    },
  };
  return fixture;
}

/** What a destination is given as in `webSourceTo`: its one webhook URL, or its whole settings. */
export type DestinationSettings = string | { webhooks: { url: string; headers?: Record<string, string> }[]; [setting: string]: unknown };

/** A workspace with one source, "web", connected to each destination of `destinations` (by id, in order). */
export function webSourceTo(writeKey: string, destinations: Record<string, DestinationSettings>): unknown {
  return {
    sources: [{ id: "web", writeKeys: [writeKey] }],
    destinations: Object.entries(destinations).map(([id, settings]) => ({
      id,
      settings: typeof settings === "string" ? { webhooks: [{ url: settings }] } : settings,
    })),
    connections: Object.keys(destinations).map((destinationId) => ({ sourceId: "web", destinationId })),
  };
}

export type ReceiverOptions = Parameters<typeof WebhookReceiver.start>[0];

/** Starts, and closes after each test, the delivery fixture and webhook receivers of a test file's tests. */
export interface DeliveryPerTest {
  start(options: DeliveryFixtureOptions): Promise<DeliveryFixture>;
  /** A receiver answering with `responder` (200 when none is given). */
  receiver(responder?: Responder, options?: ReceiverOptions): Promise<WebhookReceiver>;
  /** Receivers answering each with its status, started together. */
  receiversAnswering(...statuses: number[]): Promise<WebhookReceiver[]>;
}

/**
 * Registers the afterEach that closes what a test started through the returned helper.
 * `beforeClose` runs first; `receiversFirst` closes the receivers before the service, so
 * stopping it does not wait on requests a receiver still holds.
 */
export function deliveryPerTest(options: { beforeClose?: () => void; receiversFirst?: boolean } = {}): DeliveryPerTest {
  let fixture: DeliveryFixture | undefined;
  const receivers: WebhookReceiver[] = [];
  const closeReceivers = () => Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  afterEach(async () => {
    options.beforeClose?.();
    if (options.receiversFirst) await closeReceivers();
    await fixture?.dispose();
    fixture = undefined;
    await closeReceivers();
  });
  const receiver = async (responder?: Responder, receiverOptions?: ReceiverOptions) => {
    const started = await WebhookReceiver.start(receiverOptions);
    receivers.push(started);
    if (responder) started.respond(responder);
    return started;
  };
  return {
    start: async (fixtureOptions) => (fixture = await startDeliveryFixture(fixtureOptions)),
    receiver,
    receiversAnswering: (...statuses) => Promise.all(statuses.map((status) => receiver(() => ({ status })))),
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

  /** The first page of the attempt log once it lists `count` attempts: pages show an attempt once it is indexed, a linger after it was made. */
  async loggedAttempts(request: Partial<ListDeliveryAttemptsRequest>, count: number): Promise<DeliveryAttempt[]> {
    return waitFor(`${count} attempts in the attempt log`, async () => {
      const { attempts } = await this.listDeliveryAttempts({ limit: 1000, ...request });
      return attempts.length >= count ? attempts : undefined;
    });
  }

  getDeliveryAttempt(request: Partial<GetDeliveryAttemptRequest>): Promise<GetDeliveryAttemptResponse> {
    return this.call(this.delivery, "getDeliveryAttempt", GetDeliveryAttemptRequest, request);
  }

  getDeliveryStats(request: Partial<GetDeliveryStatsRequest> = {}): Promise<GetDeliveryStatsResponse> {
    return this.call(this.delivery, "getDeliveryStats", GetDeliveryStatsRequest, request);
  }

  close(): void {
    this.delivery.close();
    this.config.close();
  }
}

/**
 * Typed callers for every ConfigService method (`token` null sends no token); `admin` is read
 * at each call, so a test file can make this once for fixtures started per test.
 */
export function configService(admin: () => AdminClients) {
  const method =
    <Request, Response>(name: string, type: { fromPartial(partial: any): Request }) =>
    (request: Partial<Request>, token?: string | null): Promise<Response> =>
      admin().call<Request, Response>(admin().config, name, type, request, token);
  return {
    createSource: method<configApi.CreateSourceRequest, configApi.CreateSourceResponse>("createSource", configApi.CreateSourceRequest),
    getSource: method<configApi.GetSourceRequest, configApi.GetSourceResponse>("getSource", configApi.GetSourceRequest),
    listSources: method<configApi.ListSourcesRequest, configApi.ListSourcesResponse>("listSources", configApi.ListSourcesRequest),
    deleteSource: method<configApi.DeleteSourceRequest, configApi.DeleteSourceResponse>("deleteSource", configApi.DeleteSourceRequest),
    rotateWriteKey: method<configApi.RotateWriteKeyRequest, configApi.RotateWriteKeyResponse>(
      "rotateWriteKey",
      configApi.RotateWriteKeyRequest,
    ),
    setAllowedOrigins: method<configApi.SetAllowedOriginsRequest, configApi.SetAllowedOriginsResponse>(
      "setAllowedOrigins",
      configApi.SetAllowedOriginsRequest,
    ),
    putDestination: method<configApi.PutDestinationRequest, configApi.PutDestinationResponse>(
      "putDestination",
      configApi.PutDestinationRequest,
    ),
    getDestination: method<configApi.GetDestinationRequest, configApi.GetDestinationResponse>(
      "getDestination",
      configApi.GetDestinationRequest,
    ),
    listDestinations: method<configApi.ListDestinationsRequest, configApi.ListDestinationsResponse>(
      "listDestinations",
      configApi.ListDestinationsRequest,
    ),
    deleteDestination: method<configApi.DeleteDestinationRequest, configApi.DeleteDestinationResponse>(
      "deleteDestination",
      configApi.DeleteDestinationRequest,
    ),
    rotateSigningSecret: method<configApi.RotateSigningSecretRequest, configApi.RotateSigningSecretResponse>(
      "rotateSigningSecret",
      configApi.RotateSigningSecretRequest,
    ),
    connect: method<configApi.ConnectRequest, configApi.ConnectResponse>("connect", configApi.ConnectRequest),
    disconnect: method<configApi.DisconnectRequest, configApi.DisconnectResponse>("disconnect", configApi.DisconnectRequest),
    listConnections: method<configApi.ListConnectionsRequest, configApi.ListConnectionsResponse>(
      "listConnections",
      configApi.ListConnectionsRequest,
    ),
    applyWorkspace: method<configApi.ApplyWorkspaceRequest, configApi.ApplyWorkspaceResponse>(
      "applyWorkspace",
      configApi.ApplyWorkspaceRequest,
    ),
  };
}

/** The gRPC status and message a call failed with; throws when it succeeded. */
export async function grpcFailure(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as { code: number; details: string },
  );
  if (!error) throw new Error("expected the call to fail");
  return { code: error.code, details: error.details };
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
