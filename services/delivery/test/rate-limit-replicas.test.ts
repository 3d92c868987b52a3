import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import {
  BUS_MESSAGE_TYPE_NAMES,
  busMessageHeaders,
  busNames,
  CALLS_CONSUMER,
  DEFAULT_CALLS_STREAM_OPTIONS,
  ensureCallsStream,
} from "@switchyard/bus";
import { CallBatch } from "@switchyard/contracts";
import {
  LOOPBACK_CIDRS,
  MetricsSnapshot,
  NatsServer,
  ServiceProcess,
  uniqueNamespace,
  waitFor,
  WebhookReceiver,
  writeWorkspaceFile,
  type WorkspaceFile,
} from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { busCall, FAST_RETRY_ENV, trackPayload } from "@switchyard/testkit/fixtures/delivery";

/*
 * Two real delivery processes share one rate-limited destination. The limit
 * is checked at the receiver, by its own clock: requests per whole second
 * while the destination drains a fixed amount of work (the first and last
 * seconds, partly idle, left out). No assertion is about how fast this code runs.
 */
const LIMIT = 50;
const BATCHES = 40;
const CALLS_PER_BATCH = 10;
const TOTAL = BATCHES * CALLS_PER_BATCH; // 8 s of requests at the limit
/** Slots are 20 ms apart; a second holds 50 of them, give or take one at each edge. */
const TOLERANCE = 0.1;

let nats: NatsServer;
let nc: NatsConnection;
let receiver: WebhookReceiver;
let workspace: WorkspaceFile;
const processes: ServiceProcess[] = [];

beforeEach(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  receiver = await WebhookReceiver.start();
  workspace = await writeWorkspaceFile({
    sources: [{ id: "web", writeKeys: ["wk_rate_limit_test_0001"] }],
    destinations: [
      { id: "limited", maxRequestsPerSecond: LIMIT, settings: { webhooks: [{ url: receiver.url("/limited") }] } },
      { id: "free", settings: { webhooks: [{ url: receiver.url("/free") }] } },
    ],
    connections: [
      { sourceId: "web", destinationId: "limited" },
      { sourceId: "web", destinationId: "free" },
    ],
  });
});
afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.dispose()));
  await nc.close();
  await receiver.close();
  await nats.dispose();
  await workspace.remove();
});

async function startDelivery(namespace: string): Promise<{ opsPort: number }> {
  // Port 0 for both (see ServiceProcess.ready).
  const service = ServiceProcess.start("delivery", {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    SWITCHYARD_WORKSPACE_FILE: workspace.path,
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
    DELIVERY_GRPC_PORT: "0",
    DELIVERY_OPS_PORT: "0",
    ...FAST_RETRY_ENV,
  });
  processes.push(service);
  const { opsPort } = await service.ready("delivery", 60_000);
  return { opsPort: opsPort as number };
}

/** Requests per whole second of the receiver's clock (second → count), without the first and last (partial) seconds. */
function wholeSeconds(times: number[]): [number, number][] {
  const seconds = times.map((t) => Math.floor(t / 1000));
  const first = Math.min(...seconds);
  const last = Math.max(...seconds);
  const counts = new Map<number, number>();
  for (const second of seconds) counts.set(second, (counts.get(second) ?? 0) + 1);
  const whole: [number, number][] = [];
  for (let second = first + 1; second < last; second++) whole.push([second, counts.get(second) ?? 0]);
  return whole;
}

describe("a rate-limited destination served by two delivery processes", () => {
  it("gets at most its limit from both together, loses nothing, and does not slow the other destination", async () => {
    const namespace = uniqueNamespace();
    const names = busNames(namespace);
    const jsm = await jetstreamManager(nc);
    await ensureCallsStream(jsm, names, DEFAULT_CALLS_STREAM_OPTIONS);
    const replicas = await Promise.all([startDelivery(namespace), startDelivery(namespace)]);

    const js = jetstream(nc);
    const publish = async (prefix: string, batches: number, callsPerBatch: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let b = 0; b < batches; b++) {
        const calls = Array.from({ length: callsPerBatch }, (_, i) => busCall(`${prefix}-${b}-${i}`, trackPayload(`Event ${i}`)));
        ids.push(...calls.map((call) => call.messageId));
        const batch: CallBatch = { batchId: `${prefix}-${b}`, sourceId: "web", receivedAt: new Date(), calls };
        await js.publish(names.callsSubject("web"), CallBatch.encode(batch).finish(), {
          headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch),
          msgID: `web:${batch.batchId}`,
        });
      }
      return ids;
    };
    // Warm-up: both processes deliver a little first, so the measured seconds are not their very first ones.
    const warmUp = await publish("w", 8, 5);
    await waitFor("the warm-up calls at both destinations", () => receiver.requests.length >= 2 * warmUp.length, { timeoutMs: 60_000 });

    const messageIds = await publish("m", BATCHES, CALLS_PER_BATCH);
    const measured = new Set(messageIds);
    const at = (path: string) =>
      receiver.requests.filter((request) => request.path === path && measured.has(String(request.json?.messageId)));
    // The unlimited destination gets every call while the limited one is still draining.
    await waitFor("every call at the unlimited destination", () => at("/free").length >= TOTAL, { timeoutMs: 60_000 });
    const limitedWhenFreeDone = at("/limited").length;
    expect(limitedWhenFreeDone).toBeLessThan(TOTAL / 2);

    await waitFor("every call at the limited destination", () => at("/limited").length >= TOTAL, { timeoutMs: 120_000, intervalMs: 100 });
    await waitFor(
      "the consumers to settle",
      async () => {
        const calls = await jsm.consumers.info(names.callsStream, CALLS_CONSUMER);
        const retry = await jsm.streams.info(names.retryStream);
        return calls.num_pending === 0 && calls.num_ack_pending === 0 && retry.state.messages === 0;
      },
      { timeoutMs: 30_000 },
    );

    const limited = at("/limited");
    const perSecond = wholeSeconds(limited.map((request) => request.receivedAt));
    // eslint-disable-next-line no-console -- the figures this test is about
    console.info(
      `rate limit ${LIMIT}/s over two replicas: requests per whole second ${perSecond.map(([, count]) => count).join(", ")}; ` +
        `${limitedWhenFreeDone} of ${TOTAL} at the limited destination when the unlimited one had all`,
    );
    expect(perSecond.length).toBeGreaterThanOrEqual(5);
    // Never over the limit, both processes together: two replicas each sending the limit would show
    // twice it in every window. Judged over two seconds at a time, because a loaded machine can stall
    // both processes for most of a second, and the requests then due start together just after the
    // second's end (seen in CI: 41, 24, 7, 57, 50 a second).
    for (let index = 1; index < perSecond.length; index++) {
      expect(perSecond[index - 1]![1] + perSecond[index]![1]).toBeLessThanOrEqual(2 * LIMIT * (1 + TOLERANCE));
    }
    // How close to the limit the two get is a matter of this machine's speed, not a rule of the
    // limit: the figures above show it, and bench:delivery's isolation phase measures it.

    // Nothing lost, repeated or dead-lettered because of the limit.
    const received = limited.map((request) => String(request.json?.messageId));
    expect(new Set(received).size).toBe(TOTAL);
    expect(received.length).toBe(TOTAL);
    expect(messageIds.filter((id) => !received.includes(id))).toEqual([]);
    expect((await jsm.streams.info(names.deadStream)).state.messages).toBe(0);

    // Both processes did the work, and calls were held back for the limit.
    for (const { opsPort } of replicas) {
      const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${opsPort}/metrics`);
      expect(metrics.value("switchyard_delivery_requests_total")).toBeGreaterThan(0);
    }
    const rateLimited = await Promise.all(
      replicas.map(async ({ opsPort }) =>
        (await MetricsSnapshot.scrape(`http://127.0.0.1:${opsPort}/metrics`)).value("switchyard_delivery_rate_limited_calls_total"),
      ),
    );
    expect(rateLimited.reduce((sum, n) => sum + n, 0)).toBeGreaterThan(0);
  }, 240_000);
});
