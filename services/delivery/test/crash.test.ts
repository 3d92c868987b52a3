import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders } from "@switchyard/bus";
import { CallBatch } from "@switchyard/contracts";
import { busNames, DEFAULT_CALLS_STREAM_OPTIONS, ensureCallsStream, type BusNames } from "@switchyard/bus";
import { LOOPBACK_CIDRS, NatsServer, ServiceProcess, uniqueNamespace, waitFor, WebhookReceiver } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CALLS_CONSUMER } from "@switchyard/bus";
import { busCall, FAST_RETRY_ENV, trackPayload } from "@switchyard/testkit/fixtures/delivery";

const BATCHES = 30;
const CALLS_PER_BATCH = 100;
const TOTAL = BATCHES * CALLS_PER_BATCH;
/**
 * The killed process's unacknowledged batches come back once the consumer's
 * ack wait (60 s, see streams.ts) runs out, so recovery takes a minute.
 */
const RECOVERY_TIMEOUT_MS = 150_000;

let nats: NatsServer;
let nc: NatsConnection;
let receiver: WebhookReceiver;
let dir: string;
const processes: ServiceProcess[] = [];

beforeEach(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  receiver = await WebhookReceiver.start();
  dir = await mkdtemp(join(tmpdir(), "switchyard-crash-"));
});
afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.dispose()));
  await nc.close();
  await receiver.close();
  await nats.dispose();
  await rm(dir, { recursive: true, force: true });
});

async function deliveryEnv(namespace: string): Promise<Record<string, string>> {
  const workspaceFile = join(dir, "workspace.json");
  await writeFile(
    workspaceFile,
    JSON.stringify({
      sources: [{ id: "web", writeKeys: ["wk_crash_test_0000001"] }],
      destinations: [
        { id: "hook", settings: { webhooks: [{ url: receiver.url("/crash") }] } },
        // Webhooks (Actions) in batches: a call waits in its batch with its bus message unacked.
        {
          id: "batched",
          type: "webhooks_actions",
          settings: {
            mappings: [
              {
                name: "Batched",
                trigger: 'type = "track"',
                url: receiver.url("/batch"),
                data: { messageId: { "@path": "$.messageId" } },
                batching: { enabled: true, size: 50, maxWaitMs: 500 },
              },
            ],
          },
        },
      ],
      connections: [
        { sourceId: "web", destinationId: "hook" },
        { sourceId: "web", destinationId: "batched" },
      ],
    }),
  );
  return {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    SWITCHYARD_WORKSPACE_FILE: workspaceFile,
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
    ...FAST_RETRY_ENV,
    // Longer than the wait for the killed process's batches, so none of them runs out of window.
    DELIVERY_RETRY_WINDOW_MS: String(10 * 60_000),
  };
}

async function startDelivery(env: Record<string, string>): Promise<ServiceProcess> {
  const service = ServiceProcess.start("delivery", { ...env, DELIVERY_GRPC_PORT: "0", DELIVERY_OPS_PORT: "0" });
  processes.push(service);
  await service.waitForOutput(/delivery ready/);
  return service;
}

/** 30 batches of 100 calls straight onto the calls stream, as ingest would publish them. */
async function publishCalls(names: BusNames): Promise<string[]> {
  const js = jetstream(nc);
  const messageIds: string[] = [];
  for (let b = 0; b < BATCHES; b++) {
    const calls = Array.from({ length: CALLS_PER_BATCH }, (_, i) => busCall(`m-${b}-${i}`, trackPayload(`Event ${i}`)));
    messageIds.push(...calls.map((call) => call.messageId));
    const header = busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch);
    const batch: CallBatch = { batchId: `crash-${b}`, sourceId: "web", receivedAt: new Date(), calls };
    await js.publish(names.callsSubject("web"), CallBatch.encode(batch).finish(), { headers: header, msgID: `web:${batch.batchId}` });
  }
  return messageIds;
}

async function settled(jsm: JetStreamManager, names: BusNames): Promise<boolean> {
  const calls = await jsm.consumers.info(names.callsStream, CALLS_CONSUMER);
  const retry = await jsm.streams.info(names.retryStream);
  return calls.num_pending === 0 && calls.num_ack_pending === 0 && retry.state.messages === 0;
}

describe("the delivery process, killed mid-run", () => {
  it(
    "delivers every call at least once after a SIGKILL and a restart, one by one and in batches",
    async () => {
      // Every tenth call fails its first request, and so does every batch that starts with a call m-<n>-50,
      // so the retry path is busy when the kill comes.
      const delivered = new Map<string, number>();
      const batched = new Map<string, number>();
      const failedOnce = new Set<string>();
      receiver.respond((request) => {
        const items: { messageId: string }[] = request.path === "/batch" ? request.json : [request.json];
        const first = String(items[0]?.messageId);
        if (first.endsWith(request.path === "/batch" ? "-50" : "0") && !failedOnce.has(`${request.path}${first}`)) {
          failedOnce.add(`${request.path}${first}`);
          return { status: 503 };
        }
        const counts = request.path === "/batch" ? batched : delivered;
        for (const { messageId } of items) counts.set(messageId, (counts.get(messageId) ?? 0) + 1);
        return { status: 200 };
      });

      const namespace = uniqueNamespace();
      const names = busNames(namespace);
      const jsm = await jetstreamManager(nc);
      await ensureCallsStream(jsm, names, DEFAULT_CALLS_STREAM_OPTIONS);
      const env = await deliveryEnv(namespace);

      const first = await startDelivery(env);
      const messageIds = await publishCalls(names);
      expect(new Set(messageIds).size).toBe(TOTAL);

      await waitFor("a third of the calls to be delivered", () => delivered.size >= TOTAL / 3, { timeoutMs: 60_000, intervalMs: 5 });
      first.signal("SIGKILL");
      expect(await first.exited()).toEqual({ code: null, signal: "SIGKILL" });
      const atKill = { "one by one": delivered.size, "in batches": batched.size };
      const deliveredAtKill = delivered.size;
      // The kill really came in the middle of the run.
      expect(deliveredAtKill).toBeLessThan(TOTAL);

      await startDelivery(env);
      await waitFor("every call to be delivered", () => messageIds.every((id) => delivered.has(id) && batched.has(id)), {
        timeoutMs: RECOVERY_TIMEOUT_MS,
        intervalMs: 100,
      });
      await waitFor("the consumers to settle", () => settled(jsm, names), { timeoutMs: RECOVERY_TIMEOUT_MS });

      for (const [name, counts] of [
        ["one by one", delivered],
        ["in batches", batched],
      ] as const) {
        const duplicates = [...counts].filter(([, count]) => count > 1).map(([id, count]) => `${id}×${count}`);
        const shown = duplicates.slice(0, 20).join(", ") + (duplicates.length > 20 ? `, … ${duplicates.length - 20} more` : "");
        // eslint-disable-next-line no-console -- the point of this test is to show what a crash costs
        console.info(
          `crash test, ${name}: ${atKill[name]}/${TOTAL} delivered when killed; ${duplicates.length} calls delivered more than once` +
            (duplicates.length > 0 ? `: ${shown}` : ""),
        );
        expect(
          messageIds.filter((id) => !counts.has(id)),
          name,
        ).toEqual([]);
        expect(counts.size, name).toBe(TOTAL);
      }
      // Nothing was given up on.
      expect((await jsm.streams.info(names.deadStream)).state.messages).toBe(0);
    },
    RECOVERY_TIMEOUT_MS * 2,
  );
});
