/**
 * Attempt log benchmark: `npm run bench:attempt-log [-- --attempts N] [-- --pages N]`.
 *
 * Fills the attempt log with N attempts (default 1,000,000) through the real
 * writer (DeliveryLog: delivered attempts batched per destination on the
 * delivered-log stream, failures and dead letters one a message on the
 * delivery log), into a real nats-server (its own, or NATS_URL with a unique
 * namespace, deleted afterwards). The mix: 85% delivered, 12% retryable, 2%
 * permanent, 1% dead-lettered, over nine destinations of equal weight and one
 * sparse one (0.1% of the attempts); every attempt carries its exchange (a
 * ~300-byte webhook body, the response's headers and a short body).
 *
 * Then it starts the real delivery service (its gRPC API) on that bus and
 * pages through ListDeliveryAttempts (100 a page) over gRPC, one page at a
 * time, timing each page from request to answer:
 *
 *  - newest: the first page, no filter;
 *  - deep: pages followed by next_page_token from the oldest tenth of the log;
 *  - destination: one destination's pages;
 *  - outcome: only "permanent" (2% of the attempts);
 *  - time range: a 10-second slice from the middle of the fill;
 *  - sparse: the destination with 0.1% of the attempts;
 *  - detail: GetDeliveryAttempt of attempts from those pages.
 *
 * Reference: a single JetStream direct get of one message by sequence, timed
 * in the same run from this process: each page kind's p50 is also given as a
 * multiple of it. Target: p99 < 100 ms for every page kind.
 *
 * Writes bench/results/attempt-log-latest.json with the machine facts. Exits
 * non-zero only when the benchmark itself failed, not when a target is missed.
 */
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { credentials, Metadata } from "@grpc/grpc-js";
import { jetstream } from "@nats-io/jetstream";
import { ensureDeliveryStreams } from "@switchyard/bus";
import {
  DeliveryServiceClient,
  type DeliveryAttempt,
  type GetDeliveryAttemptResponse,
  ListDeliveryAttemptsRequest,
  type ListDeliveryAttemptsResponse,
} from "@switchyard/contracts";
import { createLogger } from "@switchyard/platform";
import { freePort } from "@switchyard/testkit";
import { loadDeliveryConfig, startDelivery } from "@switchyard/delivery";
import { DeliveryLog, exchangeOf, type UrlAttempt } from "@switchyard/delivery/attempt-log";
import { machineFacts, openBenchBus, percentile, runBenchmark, runLanes, writeResults } from "./lib/run-support.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const TARGET_P99_MS = 100;
const PAGE = 100;
const DESTINATIONS = Array.from({ length: 9 }, (_, i) => `dest-${i}`);
const SPARSE = "dest-rare";

const { values } = parseArgs({
  options: { attempts: { type: "string", default: "1000000" }, pages: { type: "string", default: "60" } },
});
const ATTEMPTS = Number(values.attempts);
const PAGES = Number(values.pages);

/** A webhook body of about 300 bytes, as delivery sends them. */
function webhookBody(i: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      type: "track",
      event: "Order Completed",
      messageId: `msg-${i}`,
      userId: `user-${i % 5000}`,
      timestamp: "2026-11-25T10:00:00.000Z",
      properties: { revenue: 42.5, currency: "EUR", orderId: `order-${i}`, items: 3 },
      context: { library: { name: "analytics-node", version: "3.1.0" } },
    }),
  );
}

const ENTRY = {
  headers: ["x-receiver-token", "tok-bench-secret", "user-agent", "Switchyard/1.0", "content-type", "application/json"],
  loggedHeaders: ["x-receiver-token", "[set:sha256:0a1b2c3d]", "user-agent", "Switchyard/1.0", "content-type", "application/json"],
  loggedUrl: "https://receiver.example/hooks/in?token=[set:sha256:4e5f6a7b]",
};
const RESPONSE_HEADERS = ["content-type", "application/json", "date", "Wed, 25 Nov 2026 10:00:00 GMT", "content-length", "11"].map((s) =>
  Buffer.from(s),
);

function urlAttempt(i: number, status: number, outcome: UrlAttempt["outcome"]): UrlAttempt {
  const body = webhookBody(i);
  return {
    status,
    error: status >= 200 ? "" : "connection refused",
    latencyMs: 20 + (i % 50),
    outcome,
    retryAfterMs: undefined,
    urlIndex: 0,
    url: "https://receiver.example/hooks/in?token=secret",
    responseHeaders: status > 0 ? RESPONSE_HEADERS : undefined,
    responseBody: status > 0 ? Buffer.from(status < 300 ? '{"ok":true}' : '{"error":1}') : undefined,
    responseBodyTruncated: false,
    request: { entry: ENTRY, headers: [...ENTRY.headers, "x-signature", `sha256=${"ab".repeat(32)}`], body },
  };
}

/** Attempt i's destination and outcome: deterministic, so the mix is exact. */
function planOf(i: number): { destinationId: string; outcome: "delivered" | "retryable" | "permanent" | "dead_lettered" } {
  const destinationId = i % 1000 === 7 ? SPARSE : DESTINATIONS[i % DESTINATIONS.length]!;
  const r = (i * 7919) % 100;
  const outcome = r < 85 ? "delivered" : r < 97 ? "retryable" : r < 99 ? "permanent" : "dead_lettered";
  return { destinationId, outcome };
}

interface Timed {
  ms: number[];
  attempts: number;
}

function summary(timed: Timed, referenceP50: number) {
  const sorted = [...timed.ms].sort((a, b) => a - b);
  const slowest = timed.ms.indexOf(sorted.at(-1)!);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  return {
    pages: sorted.length,
    attemptsReturned: timed.attempts,
    p50Ms: round(p50),
    p99Ms: round(p99),
    maxMs: round(sorted.at(-1) ?? Number.NaN),
    // Which page was slowest (0: the kind's first, which finds where to start and meets cold parts of the log).
    slowestPage: slowest,
    firstPageMs: round(timed.ms[0] ?? Number.NaN),
    p50OverDirectGet: round(p50 / referenceP50),
    meetsTarget: p99 < TARGET_P99_MS,
  };
}

const round = (n: number) => Number(n.toFixed(2));

runBenchmark(async (cleanup) => {
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, names, nc, jsm } = await openBenchBus(cleanup);
  const js = jetstream(nc);
  await ensureDeliveryStreams(jsm, names, { replicas: 1, deadLetterMaxAgeMs: 14 * 86_400_000, deliveryLogMaxAgeMs: 7 * 86_400_000 });
  const logger = createLogger({ level: "warn", service: "bench-attempt-log" });
  let lost = 0;
  // As the delivery service writes it, with its default batch and linger.
  const defaults = loadDeliveryConfig({});
  const log = new DeliveryLog(
    js,
    names,
    logger,
    { batch: defaults.DELIVERY_ATTEMPT_LOG_BATCH, lingerMs: defaults.DELIVERY_ATTEMPT_LOG_LINGER_MS },
    (n) => (lost += n),
  );

  // Fill: failures one a message (awaited, as the settler does, on 64 lanes), delivered attempts batched.
  console.log(`filling the attempt log with ${ATTEMPTS.toLocaleString("en")} attempts…`);
  const fillStart = Date.now();
  const chunk = 20_000;
  for (let first = 0; first < ATTEMPTS; first += chunk) {
    const failures: DeliveryAttempt[] = [];
    for (let i = first; i < Math.min(first + chunk, ATTEMPTS); i++) {
      const { destinationId, outcome } = planOf(i);
      const round = { destinationId, sourceId: "web", attempt: 1, call: { messageId: `msg-${i}` } };
      if (outcome === "delivered") {
        log.delivered(round, urlAttempt(i, 200, "delivered"));
        continue;
      }
      const attempt = urlAttempt(i, outcome === "retryable" ? 503 : 410, outcome === "retryable" ? "retryable" : "permanent");
      failures.push({
        destinationId,
        sourceId: "web",
        messageId: `msg-${i}`,
        url: ENTRY.loggedUrl,
        status: attempt.status,
        error: outcome === "dead_lettered" ? "dead-lettered (permanent_failure)" : "",
        latencyMs: attempt.latencyMs,
        attempt: 1,
        at: new Date(),
        outcome,
        batchMessageIds: [],
        attemptId: "",
        exchange: exchangeOf(attempt),
      });
    }
    await runLanes(64, failures.length, (index) => log.record(failures[index]!));
    await log.flush();
    if ((first / chunk) % 10 === 9)
      console.log(`  ${(first + chunk).toLocaleString("en")} (${Math.round((Date.now() - fillStart) / 1000)} s)`);
  }
  await log.flush();
  const fillEnd = Date.now();
  const [failedInfo, deliveredInfo, indexInfo] = await Promise.all([
    jsm.streams.info(names.deliveryLogStream),
    jsm.streams.info(names.deliveredLogStream),
    jsm.streams.info(names.attemptIndexStream),
  ]);
  console.log(
    `filled in ${((fillEnd - fillStart) / 1000).toFixed(1)} s: ${failedInfo.state.messages} failure messages, ${deliveredInfo.state.messages} delivered batches, ${lost} lost`,
  );

  const [grpcPort, opsPort] = await Promise.all([freePort(), freePort()]);
  const delivery = await startDelivery(
    loadDeliveryConfig({
      NATS_URL: nats.url,
      SWITCHYARD_NAMESPACE: namespace,
      SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
      DELIVERY_GRPC_PORT: String(grpcPort),
      DELIVERY_OPS_PORT: String(opsPort),
      LOG_LEVEL: "warn",
    }),
    logger,
  );
  cleanup.add("stop delivery", () => delivery.stop());
  const client = new DeliveryServiceClient(`127.0.0.1:${delivery.grpcPort}`, credentials.createInsecure());
  cleanup.add("close the gRPC client", async () => client.close());
  const metadata = new Metadata();
  metadata.set("authorization", `Bearer ${ADMIN_TOKEN}`);
  const listPage = (request: Partial<ListDeliveryAttemptsRequest>) =>
    new Promise<ListDeliveryAttemptsResponse>((resolve, reject) =>
      client.listDeliveryAttempts(ListDeliveryAttemptsRequest.fromPartial({ limit: PAGE, ...request }), metadata, (error, response) =>
        error ? reject(error) : resolve(response),
      ),
    );
  const getAttempt = (attemptId: string) =>
    new Promise<GetDeliveryAttemptResponse>((resolve, reject) =>
      client.getDeliveryAttempt({ attemptId }, metadata, (error, response) => (error ? reject(error) : resolve(response))),
    );

  /** `pages` pages one after the other, following next_page_token from the first. */
  const follow = async (request: Partial<ListDeliveryAttemptsRequest>, pages: number, into: Timed, ids?: string[]) => {
    let pageToken = "";
    for (let n = 0; n < pages; n++) {
      const started = performance.now();
      const page = await listPage({ ...request, pageToken });
      into.ms.push(performance.now() - started);
      into.attempts += page.attempts.length;
      if (ids) ids.push(...page.attempts.slice(0, 3).map((a) => a.attemptId));
      pageToken = page.nextPageToken;
      if (!pageToken) break;
    }
  };
  /** The first page `times` times (a fresh start each time). */
  const repeat = async (request: Partial<ListDeliveryAttemptsRequest>, times: number, into: Timed) => {
    for (let n = 0; n < times; n++) await follow(request, 1, into);
  };

  // Warm-up: the service's first pages pay for cold code and connections.
  await follow({}, 5, { ms: [], attempts: 0 });

  const span = fillEnd - fillStart;
  const kinds: Record<string, Timed> = {};
  const timed = (kind: string): Timed => (kinds[kind] = { ms: [] as number[], attempts: 0 });
  const ids: string[] = [];
  await repeat({}, PAGES, timed("newest"));
  await follow({ before: new Date(fillStart + span * 0.1) }, PAGES, timed("deep"), ids);
  await follow({ destinationId: "dest-3" }, PAGES, timed("destination"), ids);
  await follow({ outcomes: ["permanent"] }, PAGES, timed("outcome"), ids);
  const middle = fillStart + span / 2;
  await follow({ since: new Date(middle - 5_000), before: new Date(middle + 5_000) }, PAGES, timed("timeRange"), ids);
  await follow({ destinationId: SPARSE }, PAGES, timed("sparse"), ids);
  const detail = timed("detail");
  for (const id of ids.slice(0, PAGES * 2)) {
    const started = performance.now();
    const answer = await getAttempt(id);
    detail.ms.push(performance.now() - started);
    if (answer.attempt?.exchange) detail.attempts++;
  }

  // Reference: one direct get by sequence, from this process, on the same streams.
  const reference: number[] = [];
  const last = failedInfo.state.last_seq;
  for (let n = 0; n < 200; n++) {
    const seq = 1 + Math.floor((n * 7919) % last);
    const started = performance.now();
    await jsm.direct.getMessage(names.deliveryLogStream, { seq });
    reference.push(performance.now() - started);
  }
  reference.sort((a, b) => a - b);
  const referenceP50 = percentile(reference, 50);

  const results = Object.fromEntries(Object.entries(kinds).map(([kind, t]) => [kind, summary(t, referenceP50)]));
  const allMeet = Object.entries(results).every(([, r]) => r.meetsTarget);
  const file = await writeResults(RESULTS_DIR, "attempt-log", {
    benchmark: "attempt-log",
    at: new Date().toISOString(),
    attempts: ATTEMPTS,
    pageSize: PAGE,
    fill: {
      seconds: round(span / 1000),
      attemptsPerSecond: Math.round(ATTEMPTS / (span / 1000)),
      failureMessages: failedInfo.state.messages,
      failureBytes: failedInfo.state.bytes,
      deliveredBatches: deliveredInfo.state.messages,
      deliveredBytes: deliveredInfo.state.bytes,
      indexMessages: indexInfo.state.messages,
      indexBytes: indexInfo.state.bytes,
      lost,
    },
    reference: { what: "one JetStream direct get by sequence", p50Ms: round(referenceP50), p99Ms: round(percentile(reference, 99)) },
    pages: results,
    target: { p99Ms: TARGET_P99_MS, met: allMeet },
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.table(results);
  console.log(`reference (direct get): p50 ${round(referenceP50)} ms; target p99 < ${TARGET_P99_MS} ms: ${allMeet ? "met" : "MISSED"}`);
  console.log(`results: ${file}`);
});
