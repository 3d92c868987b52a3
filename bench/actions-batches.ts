/**
 * Webhooks (Actions) batches against one request per call: `npm run bench:actions-batches
 * [-- --calls N]`.
 *
 * One delivery process (the esbuild bundle, as npm start runs it) on its own nats-server, and a
 * loopback receiver in its own process (bench/lib/webhook-sink.ts) answering 200 at once. Three
 * destinations, each with its own source, measured one after the other with the same N calls
 * (realistic calls, CallBatch messages of 100 as ingest stores them), all signed:
 *  - classic: Webhooks, one POST per call (the reference);
 *  - batch-100 and batch-1000: Webhooks (Actions), one mapping taking every call with the default
 *    data (the whole call) and batching of that size (wait 1 s).
 * For each: calls/s and requests/s from the first publish to the moment delivery's stats count
 * every call delivered, and delivery's CPU time per call. Prints each batch run's calls/s as a
 * ratio to the classic run's. Writes bench/results/actions-batches-latest.json. `--only <run>` runs one
 * of them (no ratio, nothing written), `--cpu-prof-dir <dir>` profiles delivery.
 */
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, DEFAULT_CALLS_STREAM_OPTIONS, ensureCallsStream } from "@switchyard/bus";
import { CallBatch, type Call } from "@switchyard/contracts";
import { freePort, LOOPBACK_CIDRS, waitFor } from "@switchyard/testkit";
import { ADMIN_TOKEN, AdminClients } from "@switchyard/testkit/fixtures/delivery";
import { jetstream } from "@nats-io/jetstream";
import {
  machineFacts,
  microsPer,
  openBenchBus,
  positiveInt,
  processCpuMs,
  runBenchmark,
  runLanes,
  writeResults,
  writeWorkspaceFile,
} from "./lib/run-support.js";
import { sampleCall, seededRandom } from "./lib/sample-calls.js";
import { ServiceChild } from "./lib/service-child.js";
import { WebhookSinkChild } from "./lib/webhook-sink-child.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const CALLS_PER_MESSAGE = 100;

const { values } = parseArgs({
  options: { calls: { type: "string", default: "200000" }, only: { type: "string" }, "cpu-prof-dir": { type: "string" } },
});
const CALLS = positiveInt("--calls", values.calls);

const ALL_RUNS = [
  { id: "classic", batchSize: 0 },
  { id: "batch-100", batchSize: 100 },
  { id: "batch-1000", batchSize: 1000 },
] as const;
/** `--only batch-1000` (for a profile): that run alone, no ratio. */
const RUNS = ALL_RUNS.filter((run) => values.only === undefined || run.id === values.only);

function workspace(sink: WebhookSinkChild) {
  return {
    sources: RUNS.map((run) => ({ id: run.id, writeKeys: [`wk_bench_actions_${run.id}_0123456789`] })),
    destinations: RUNS.map((run) =>
      run.batchSize === 0
        ? { id: run.id, settings: { webhooks: [{ url: sink.url(`/${run.id}`) }], sharedSecret: "bench-secret" } }
        : {
            id: run.id,
            type: "webhooks_actions",
            settings: {
              sharedSecret: "bench-secret",
              mappings: [
                {
                  name: "All",
                  trigger: 'type = "track" or type = "identify" or type = "page" or type = "screen" or type = "group" or type = "alias"',
                  url: sink.url(`/${run.id}`),
                  batching: { enabled: true, size: run.batchSize, maxWaitMs: 1000 },
                },
              ],
            },
          },
    ),
    connections: RUNS.map((run) => ({ sourceId: run.id, destinationId: run.id })),
  };
}

runBenchmark(async (cleanup) => {
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, names, nc, jsm } = await openBenchBus(cleanup);
  await ensureCallsStream(jsm, names, DEFAULT_CALLS_STREAM_OPTIONS);
  const sink = await WebhookSinkChild.start(REPO_ROOT);
  cleanup.add("stop the webhook sink", () => sink.stop());
  const workspaceFile = await writeWorkspaceFile(cleanup, workspace(sink));
  const grpcPort = await freePort();
  const delivery = ServiceChild.start({
    service: "delivery",
    cwd: REPO_ROOT,
    grpcPort,
    env: {
      NATS_URL: nats.url,
      SWITCHYARD_NAMESPACE: namespace,
      SWITCHYARD_WORKSPACE_FILE: workspaceFile,
      SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
      DELIVERY_GRPC_PORT: String(grpcPort),
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
    },
    nodeFlags: values["cpu-prof-dir"] ? ["--cpu-prof", `--cpu-prof-dir=${values["cpu-prof-dir"]}`] : [],
  });
  cleanup.add("stop delivery", () => delivery.stop());
  await delivery.waitUntilReady({ workers: 1 });
  const admin = new AdminClients(`127.0.0.1:${grpcPort}`);
  cleanup.add("close the admin clients", async () => admin.close());
  const js = jetstream(nc);
  const random = seededRandom(7);

  const results: Record<
    string,
    { seconds: number; callsPerSecond: number; requestsPerSecond: number; cpuMicrosPerCall: number | undefined }
  > = {};
  for (const run of RUNS) {
    const now = new Date();
    const messages: Uint8Array[] = [];
    for (let first = 0; first < CALLS; first += CALLS_PER_MESSAGE) {
      const calls = Array.from({ length: Math.min(CALLS_PER_MESSAGE, CALLS - first) }, (): Call => ({
        ...sampleCall(random),
        receivedAt: now,
      }));
      messages.push(CallBatch.encode({ batchId: `${run.id}-${first}`, sourceId: run.id, receivedAt: now, calls }).finish());
    }
    const cpuBefore = await processCpuMs(delivery.pid);
    const started = performance.now();
    await runLanes(16, messages.length, async (index) => {
      await js.publish(names.callsSubject(run.id), messages[index]!, {
        headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.callBatch),
        msgID: `${run.id}:${index}`,
      });
    });
    await waitFor(
      `${run.id}: every call delivered`,
      async () => {
        const [stats] = (await admin.getDeliveryStats({ destinationId: run.id })).destinations;
        return Number(stats?.delivered ?? 0) >= CALLS;
      },
      { timeoutMs: 600_000, intervalMs: 50 },
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuAfter = await processCpuMs(delivery.pid);
    const requests = await sink.count(`/${run.id}`);
    results[run.id] = {
      seconds,
      callsPerSecond: CALLS / seconds,
      requestsPerSecond: requests / seconds,
      cpuMicrosPerCall: microsPer(cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore, CALLS),
    };
    const r = results[run.id]!;
    console.log(
      `${run.id.padEnd(10)} ${Math.round(r.callsPerSecond).toLocaleString("en")} calls/s, ${Math.round(r.requestsPerSecond).toLocaleString("en")} requests/s, ` +
        `delivery ${r.cpuMicrosPerCall?.toFixed(1) ?? "?"} µs CPU per call`,
    );
  }
  if (!results.classic) return;
  const classic = results.classic.callsPerSecond;
  const ratios = Object.fromEntries(
    RUNS.filter((run) => run.batchSize > 0).map((run) => [run.id, results[run.id]!.callsPerSecond / classic]),
  );
  for (const [id, ratio] of Object.entries(ratios)) console.log(`${id} / classic calls/s: ${ratio.toFixed(1)}×`);
  const file = await writeResults(RESULTS_DIR, "actions-batches", {
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
    calls: CALLS,
    results,
    ratios,
  });
  console.log(`results: ${file}`);
});
