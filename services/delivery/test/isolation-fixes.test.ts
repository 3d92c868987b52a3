import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/nats-core";
import { DeliveryTask } from "@switchyard/contracts";
import { busNames } from "@switchyard/bus";
import { createLogger } from "@switchyard/platform";
import { Masker, type Destination, type WorkspaceView } from "@switchyard/workspace";
import { afterEach, describe, expect, it } from "vitest";
import { DestinationGates, type GateOptions } from "../src/pipeline/destination-gate.js";
import type { DeliveryMetrics } from "../src/metrics.js";
import type { PoisonMessages } from "../src/retries/poison.js";
import type { OutcomeReports } from "../src/pipeline/outcome-reports.js";
import { nakDelay, Retries } from "../src/retries/retries.js";
import { RetryQueue } from "../src/retries/retry-queue.js";
import type { Settler } from "../src/pipeline/settle.js";
import type { RateLimits } from "../src/pipeline/rate-limits.js";
import type { HandlingFailures } from "../src/pipeline/handling-failures.js";
import { LOOPBACK_CIDRS } from "@switchyard/testkit";
import { AddressPolicy } from "../src/outbound/address-policy.js";
import { WebhookSender } from "../src/outbound/webhook-sender.js";

const LOOPBACK = AddressPolicy.fromList(LOOPBACK_CIDRS);

/**
 * What keeps one bad destination from slowing the others: a connection pool per
 * destination, and parked retries that really stay parked. (The gate's stall
 * detection is tested beside it, in src/pipeline/gate/.)
 */

const OPTIONS: GateOptions = { concurrency: 2, failureThreshold: 3, cooldownMs: 5_000 };

describe("WebhookSender: one connection pool per destination", () => {
  let server: Server | undefined;
  let sender: WebhookSender | undefined;

  afterEach(async () => {
    await sender?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("does not make a destination wait for the connections of another one on the same host", async () => {
    server = createServer((request, response) => {
      if (request.url === "/hang") return; // never answers
      response.writeHead(200).end();
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    sender = new WebhookSender({ timeoutMs: 2_000, maxResponseBytes: 1024, connectionsPerOrigin: 1, addressPolicy: LOOPBACK });
    const body = Buffer.from("{}");

    const hanging = sender.send(`${origin}/hang`, [], body, "stuck");
    const started = performance.now();
    const healthy = await sender.send(`${origin}/ok`, [], body, "healthy");
    expect(healthy).toMatchObject({ status: 200, outcome: "delivered" });
    // With one shared connection it would have queued behind the hanging request until its 2 s timeout.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await hanging).toMatchObject({ status: 0, outcome: "retryable", error: "timeout: no response within 2000 ms" });
  });
});

describe("nakDelay", () => {
  const now = 1_700_000_000_250;

  it("is a whole number of milliseconds, never earlier than asked", () => {
    expect(nakDelay(now, 100.7, now + 60_000)).toBe(101);
    expect(nakDelay(now, 0.2, now + 60_000)).toBe(1);
  });

  it("puts deadlines a second or more away on whole seconds, so nats-server can share its scans", () => {
    const delay = nakDelay(now, 5_043.27, now + 60_000);
    expect((now + delay) % 1_000).toBe(0);
    expect(delay).toBeGreaterThanOrEqual(5_043.27);
    expect(delay).toBeLessThan(5_043.27 + 1_000);
  });

  it("never goes past the window's end", () => {
    expect(nakDelay(now, 5_000, now + 3_000)).toBe(3_000);
  });
});

describe("Retries: a parked retry", () => {
  const destination: Destination = {
    id: "hook",
    type: "webhooks",
    enabled: true,
    settings: { webhooks: [{ url: "http://127.0.0.1:9/hook", headers: {} }] },
  };
  const task: DeliveryTask = {
    call: undefined,
    sourceId: "web",
    destinationId: "hook",
    targetIndexes: [0],
    windowStart: new Date(),
    attemptsBefore: 1,
    notBefore: undefined,
    lastFailure: undefined,
  };

  async function retriesForFailingHook(): Promise<Retries> {
    const gates = new DestinationGates(OPTIONS);
    for (let i = 0; i < OPTIONS.failureThreshold; i++) (await gates.for("hook").acquire())!("retryable");
    return new Retries({
      workspace: { destination: () => destination } as unknown as WorkspaceView,
      sender: new WebhookSender({ timeoutMs: 1_000, maxResponseBytes: 1024, connectionsPerOrigin: 1, addressPolicy: LOOPBACK }),
      masker: new Masker(Buffer.alloc(32, 7)),
      gates,
      settler: {} as Settler,
      retryQueue: {} as RetryQueue,
      metrics: {} as DeliveryMetrics,
      poison: {} as PoisonMessages,
      reports: {} as OutcomeReports,
      rateLimits: {} as RateLimits,
      windowMs: 3600_000,
      heartbeatMs: 10_000,
      failures: {} as HandlingFailures,
      logger: createLogger({ service: "test", level: "silent" }),
    });
  }

  /** A message as the retry consumer gets it, recording what is done with it. */
  function retryMessage(data: Uint8Array, headers?: MsgHdrs) {
    const done = { naks: [] as number[], terminated: false };
    const message = {
      data,
      headers,
      seq: 1,
      subject: "x.retry.hook",
      nak: (delay?: number) => done.naks.push(delay ?? 0),
      term: () => (done.terminated = true),
    } as unknown as JsMsg;
    return { message, done };
  }

  it("is naked with a whole number of milliseconds (nats-server ignores a fractional delay and redelivers at once)", async () => {
    const retries = await retriesForFailingHook();
    const { message, done } = retryMessage(DeliveryTask.encode(task).finish());
    for (let i = 0; i < 20; i++) await retries.handle(message);

    expect(done.naks).toHaveLength(20);
    for (const delay of done.naks) {
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(4_000); // parked until the cool-down ends, give or take the jitter
    }
  });

  /** What a RetryQueue publishes, captured instead of sent. */
  function capturingQueue() {
    const published: { data: Uint8Array; headers: MsgHdrs }[] = [];
    const js = {
      publish: async (_subject: string, data: Uint8Array, options: { headers: MsgHdrs }) =>
        published.push({ data, headers: options.headers }),
    };
    return { queue: new RetryQueue(js as unknown as JetStreamClient, busNames("test")), published };
  }

  it.each([
    ["a task", (queue: RetryQueue) => queue.schedule({ ...task, notBefore: new Date() })],
    [
      "deferred calls",
      (queue: RetryQueue) =>
        queue.defer({ calls: [], sourceId: "web", destinationId: "hook", windowStart: new Date(), notBefore: new Date() }, "calls-1"),
    ],
  ])("holding %s is parked from its headers alone, without decoding it", async (_, publish) => {
    const { queue, published: all } = capturingQueue();
    await publish(queue);
    const published = all[0];
    expect(published).toBeDefined();

    // Bytes that are no task at all: decoding them would terminate the message.
    const { message, done } = retryMessage(Uint8Array.of(0xff, 0xff, 0xff), published!.headers);
    await (await retriesForFailingHook()).handle(message);
    expect(done.terminated).toBe(false);
    expect(done.naks).toHaveLength(1);
    expect(done.naks[0]).toBeGreaterThanOrEqual(4_000);
  });
});
