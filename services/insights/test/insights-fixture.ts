import { credentials, Metadata } from "@grpc/grpc-js";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import {
  BatchPublisher,
  BUS_MESSAGE_TYPE_NAMES,
  busMessageHeaders,
  busNames,
  DEFAULT_CALLS_STREAM_OPTIONS,
  ensureCallsStream,
  ensureIntakeStreams,
  type BusNames,
} from "@switchyard/bus";
import { CallBatch, insightsApi, type Call } from "@switchyard/contracts";
import { connectBus, createLogger } from "@switchyard/platform";
import { NatsServer, uniqueNamespace, waitFor, writeWorkspaceFile, type WorkspaceFile } from "@switchyard/testkit";
import { loadInsightsConfig, startInsights, type InsightsHandle } from "../src/index.js";

export const ADMIN_TOKEN = "insights-admin-token-0123456789";

/** The workspace most tests use: two sources, one destination. */
export const WORKSPACE = {
  sources: [
    { id: "web", writeKeys: ["wk_insights_web_0123456789"] },
    { id: "mobile", writeKeys: ["wk_insights_mobile_012345678"] },
  ],
  destinations: [{ id: "hook", settings: { webhooks: [{ url: "https://hooks.example.com/in" }] } }],
  connections: [{ sourceId: "web", destinationId: "hook" }],
};

/** A real nats-server with the streams insights reads, the workspace file, and a publisher: everything but insights. */
export interface TestBus {
  nats: NatsServer;
  names: BusNames;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  workspaceFile: WorkspaceFile;
  /** The settings insights runs with (in this process, or as a child process). */
  env: Record<string, string>;
  publisher: BatchPublisher;
  /** Starts an insights service in this process on this bus, with `env` on top of the bus's settings. */
  startInsights(env?: Record<string, string>): Promise<InsightsHandle>;
  dispose(): Promise<void>;
}

export async function startTestBus(options: { env?: Record<string, string>; workspace?: unknown } = {}): Promise<TestBus> {
  const nats = await NatsServer.start();
  const namespace = uniqueNamespace();
  const names = busNames(namespace);
  const workspaceFile = await writeWorkspaceFile(options.workspace ?? WORKSPACE);
  const bus = await connectBus({ servers: [nats.url], name: "insights-test", logger: createLogger({ service: "test", level: "silent" }) });
  const nc = bus.nc;
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  await ensureCallsStream(jsm, names, DEFAULT_CALLS_STREAM_OPTIONS);
  await ensureIntakeStreams(jsm, names, DEFAULT_CALLS_STREAM_OPTIONS);
  const env = {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    SWITCHYARD_WORKSPACE_FILE: workspaceFile.path,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    INSIGHTS_GRPC_PORT: "0",
    INSIGHTS_OPS_PORT: "0",
    INSIGHTS_FLUSH_INTERVAL_MS: "100",
    ...options.env,
  };
  const started: InsightsHandle[] = [];
  return {
    nats,
    names,
    nc,
    js,
    jsm,
    workspaceFile,
    env,
    publisher: new BatchPublisher({ bus, js, names }),
    startInsights: async (extra = {}) => {
      const handle = await startInsights(
        loadInsightsConfig({ ...env, ...extra }),
        createLogger({ service: "insights", level: (process.env.INSIGHTS_TEST_LOG as "warn" | undefined) ?? "silent" }),
      );
      // Stopped once, whether by the test or at dispose.
      let stopping: Promise<void> | undefined;
      const once: InsightsHandle = { grpcPort: handle.grpcPort, opsPort: handle.opsPort, stop: () => (stopping ??= handle.stop()) };
      started.push(once);
      return once;
    },
    dispose: async () => {
      for (const handle of started) await handle.stop().catch(() => {});
      await nc.close();
      await nats.dispose();
      await workspaceFile.remove();
    },
  };
}

export interface InsightsFixture extends TestBus {
  insights: InsightsHandle;
  client: InsightsClient;
  /** Stops insights (as on SIGTERM) and starts a fresh one on the same bus. */
  restart(): Promise<void>;
}

/** The test bus with insights started in this process (`env` adds settings). */
export async function startInsightsFixture(options: { env?: Record<string, string>; workspace?: unknown } = {}): Promise<InsightsFixture> {
  const bus = await startTestBus(options);
  const insights = await bus.startInsights();
  const fixture: InsightsFixture = {
    ...bus,
    insights,
    client: new InsightsClient(`127.0.0.1:${insights.grpcPort}`),
    restart: async () => {
      fixture.client.close();
      await fixture.insights.stop();
      fixture.insights = await bus.startInsights();
      fixture.client = new InsightsClient(`127.0.0.1:${fixture.insights.grpcPort}`);
    },
    dispose: async () => {
      fixture.client.close();
      await bus.dispose();
    },
  };
  return fixture;
}

/** A call as ingest stores it: ids, timestamp and received_at set. */
export function storedCall(messageId: string, receivedAt: Date, payload: Call["payload"]): Call {
  return { messageId, userId: "u1", anonymousId: "", timestamp: receivedAt, context: {}, integrations: undefined, receivedAt, payload };
}

export function track(event: string, properties?: Record<string, unknown>): Call["payload"] {
  return { $case: "track", value: { event, properties } };
}

/** Publishes calls as one batch on the filtered stream, as ingest publishes calls a source blocks. */
export async function publishFiltered(fixture: TestBus, sourceId: string, batchId: string, calls: Call[]): Promise<void> {
  const payload = CallBatch.encode({ batchId, sourceId, receivedAt: calls[0]?.receivedAt, calls }).finish();
  await fixture.js.publish(fixture.names.filteredSubject(sourceId), payload, {
    msgID: `${sourceId}:${batchId}`,
    headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch),
  });
}

/** Publishes a usage report, as ingest (rejected calls) and delivery (outcomes) do. */
export async function publishUsage(
  fixture: TestBus,
  report: { rejected: insightsApi.RejectedCalls; id: string } | { outcomes: insightsApi.DeliveryOutcomes; id: string },
): Promise<void> {
  const { names, js } = fixture;
  if ("rejected" in report) {
    await js.publish(names.rejectedUsageSubject(report.rejected.sourceId), insightsApi.RejectedCalls.encode(report.rejected).finish(), {
      msgID: report.id,
      headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.rejectedCalls),
    });
  } else {
    await js.publish(
      names.deliveryUsageSubject(report.outcomes.destinationId),
      insightsApi.DeliveryOutcomes.encode(report.outcomes).finish(),
      { msgID: report.id, headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deliveryOutcomes) },
    );
  }
}

/** Waits until insights has written its checkpoints past every message now in its three streams. */
export async function countedAll(
  fixture: { jsm: JetStreamManager; js: JetStreamClient; names: BusNames },
  timeoutMs = 30_000,
): Promise<void> {
  const { jsm, names } = fixture;
  const kv = await new Kvm(fixture.js).open(names.schemaBucket);
  const streams = [
    ["calls", names.callsStream],
    ["filtered", names.filteredStream],
    ["usage", names.usageStream],
  ] as const;
  const targets = await Promise.all(streams.map(async ([, stream]) => (await jsm.streams.info(stream)).state.last_seq));
  await waitFor(
    "insights to count every message",
    async () => {
      for (const [index, [label]] of streams.entries()) {
        if (targets[index] === 0) continue;
        const entry = await kv.get(`checkpoint.${label}`);
        const sequence = entry && entry.operation === "PUT" ? entry.json<{ sequence: number }>().sequence : 0;
        if (sequence < targets[index]!) return false;
      }
      return true;
    },
    { timeoutMs },
  );
}

/** Promise wrappers over the generated InsightsService client, with the admin token (or another). */
export class InsightsClient {
  private readonly client: insightsApi.InsightsServiceClient;

  constructor(target: string) {
    this.client = new insightsApi.InsightsServiceClient(target, credentials.createInsecure());
  }

  getSourceSchema(sourceId: string, token: string | null = ADMIN_TOKEN): Promise<insightsApi.GetSourceSchemaResponse> {
    return new Promise((resolve, reject) =>
      this.client.getSourceSchema({ sourceId }, metadata(token), (error, response) => (error ? reject(error) : resolve(response))),
    );
  }

  getUsage(request: Partial<insightsApi.GetUsageRequest>, token: string | null = ADMIN_TOKEN): Promise<insightsApi.GetUsageResponse> {
    return new Promise((resolve, reject) =>
      this.client.getUsage({ sourceId: "", fromDay: "", toDay: "", ...request }, metadata(token), (error, response) =>
        error ? reject(error) : resolve(response),
      ),
    );
  }

  close(): void {
    this.client.close();
  }
}

function metadata(token: string | null): Metadata {
  const result = new Metadata();
  if (token !== null) result.set("authorization", `Bearer ${token}`);
  return result;
}
