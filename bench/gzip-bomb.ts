/**
 * Gzip bomb benchmark: `npm run bench:gzip [-- --rounds N --bomb-mib N]`.
 *
 * Starts the real ingest service (its own process, built as npm start runs
 * it) against its own nats-server and measures the CPU time (user + system,
 * from /proc) ingest spends per HTTP request on:
 *  - reference: a small valid gzip batch, accepted (200);
 *  - bomb: a gzip body of about 1 MB that inflates to 1 GiB of zeros
 *    (--bomb-mib), sent to /v1/batch: refused at the 500 KB decoded limit;
 *  - padded: a valid gzip batch followed by 1 MB of empty gzip members,
 *    which decodes to 80 bytes: refused at the limit as sent;
 *  - large-bomb: about 10 MB that would inflate to 10 GiB (the size of the
 *    adversarial run's attack), past the 4 MB ingest reads of a refused
 *    body: answered 413, then the connection closed.
 * Each is sent --rounds times, one after the other, and the CPU read before
 * and after (resolution: 10 ms over all rounds). As the cost of inflating
 * all of it, this process gunzips the bomb once with zlib's defaults and
 * reports its own CPU time for that.
 *
 * Target: a bomb costs ingest under 100 ms of CPU. Writes
 * bench/results/gzip-bomb-latest.json. Exits
 * non-zero only on errors (a wrong answer is one), not when the target is missed.
 */
import { Agent, request as httpRequest } from "node:http";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createGunzip, gzipSync } from "node:zlib";
import { gzipBomb } from "@switchyard/testkit";
import { machineFacts, openBenchBus, runBenchmark, writeResults, writeWorkspaceFile, type Cleanup } from "./lib/run-support.js";
import { startIngestChild, type ServiceChild } from "./lib/service-child.js";

const TARGET_BOMB_CPU_MS = 100;
const WRITE_KEY = "wk_bench_0123456789";
const AUTHORIZATION = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const WORKSPACE = { sources: [{ id: "bench", writeKeys: [WRITE_KEY] }] };

interface Answer {
  status: number;
  code: string | undefined;
}

/** POSTs a gzip body; resolves with the answer, or `reset` when the connection closed before one came. */
function post(port: number, body: Buffer, agent: Agent | false): Promise<Answer | "reset"> {
  return new Promise((resolve) => {
    const request = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path: "/v1/batch",
        method: "POST",
        agent,
        headers: { "Content-Type": "application/json", "Content-Encoding": "gzip", Authorization: AUTHORIZATION },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const json = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { error?: { code?: string } };
          resolve({ status: response.statusCode ?? 0, code: json.error?.code });
        });
        response.on("error", () => resolve("reset"));
      },
    );
    request.on("error", () => resolve("reset"));
    request.end(body);
  });
}

interface Scenario {
  name: string;
  body: Buffer;
  /** What ingest must answer: a request that gets anything else, or a reset before the answer, fails the run. */
  expect: { status: number; code?: string };
  /** false: a new connection per request (for answers that close it). */
  keepAlive: boolean;
}

interface Measured {
  name: string;
  requests: number;
  bodyBytes: number;
  ingestCpuMsPerRequest: number;
  answered: number;
}

async function measure(ingest: ServiceChild, port: number, scenario: Scenario, rounds: number): Promise<Measured> {
  const agent = scenario.keepAlive ? new Agent({ keepAlive: true, maxSockets: 1 }) : false;
  let answered = 0;
  const before = await ingest.cpuSeconds();
  for (let i = 0; i < rounds; i++) {
    const answer = await ingest.guard(post(port, scenario.body, agent));
    if (answer === "reset") throw new Error(`${scenario.name}: the connection was closed without an answer`);
    if (answer.status !== scenario.expect.status || (scenario.expect.code !== undefined && answer.code !== scenario.expect.code)) {
      throw new Error(
        `${scenario.name}: expected ${scenario.expect.status} ${scenario.expect.code ?? ""}, got ${answer.status} ${answer.code ?? ""}`,
      );
    }
    answered++;
  }
  const after = await ingest.cpuSeconds();
  if (agent) agent.destroy();
  if (before === undefined || after === undefined) throw new Error("cannot read ingest's CPU time (Linux /proc only)");
  return {
    name: scenario.name,
    requests: rounds,
    bodyBytes: scenario.body.length,
    ingestCpuMsPerRequest: Number((((after - before) * 1000) / rounds).toFixed(2)),
    answered,
  };
}

/** CPU time (ms) this process spends gunzipping `body` whole with zlib's default chunk size, as a stream. */
function inflateAllCpuMs(body: Buffer): Promise<{ cpuMs: number; decodedBytes: number }> {
  return new Promise((resolve, reject) => {
    const start = process.cpuUsage();
    let decodedBytes = 0;
    const gunzip = createGunzip();
    gunzip.on("data", (chunk: Buffer) => (decodedBytes += chunk.length));
    gunzip.on("end", () => {
      const used = process.cpuUsage(start);
      resolve({ cpuMs: Number(((used.user + used.system) / 1000).toFixed(1)), decodedBytes });
    });
    gunzip.on("error", reject);
    gunzip.end(body);
  });
}

async function main(cleanup: Cleanup): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { rounds: { type: "string", default: "50" }, "bomb-mib": { type: "string", default: "1024" } },
  });
  const rounds = Number(values.rounds);
  const bombMib = Number(values["bomb-mib"]);
  if (!Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(bombMib) || bombMib < 1) {
    throw new Error("--rounds and --bomb-mib must be positive integers");
  }
  const date = new Date();
  const loadAverageAtStart = os.loadavg();
  const { nats, namespace, nc } = await openBenchBus(cleanup);
  const { ingest, httpPort } = await startIngestChild(cleanup, {
    cwd: REPO_ROOT,
    natsUrl: nats.url,
    namespace,
    workspaceFile: await writeWorkspaceFile(cleanup, WORKSPACE),
  });

  const valid = gzipSync(JSON.stringify({ batch: [{ type: "track", userId: "u1", event: "Bench" }] }));
  const empty = gzipSync("");
  const scenarios: Scenario[] = [
    { name: "reference", body: valid, expect: { status: 200 }, keepAlive: true },
    { name: "bomb", body: gzipBomb(bombMib), expect: { status: 413, code: "batch_too_large" }, keepAlive: true },
    {
      name: "padded",
      body: Buffer.concat([valid, ...Array.from({ length: 50_000 }, () => empty)]),
      expect: { status: 413, code: "batch_too_large" },
      keepAlive: true,
    },
    {
      name: "large-bomb",
      body: gzipBomb(10 * 1024),
      expect: { status: 413, code: "batch_too_large" },
      keepAlive: false,
    },
  ];

  // Warm-up: JIT, connection set-up and the first publish are not what is measured.
  for (const scenario of scenarios) await measure(ingest, httpPort, scenario, 3);
  const results: Measured[] = [];
  for (const scenario of scenarios) results.push(await measure(ingest, httpPort, scenario, rounds));
  const inflateAll = await inflateAllCpuMs(scenarios[1]!.body);

  const reference = results[0]!;
  const bomb = results[1]!;
  console.log("ingest CPU per request (ms):");
  for (const result of results) {
    const ratio = reference.ingestCpuMsPerRequest > 0 ? (result.ingestCpuMsPerRequest / reference.ingestCpuMsPerRequest).toFixed(2) : "n/a";
    console.log(
      `  ${result.name.padEnd(11)} ${String(result.ingestCpuMsPerRequest).padStart(8)}  (${ratio} × reference; ${result.bodyBytes} bytes sent; answered ${result.answered})`,
    );
  }
  console.log(`inflating the whole ${bombMib} MiB bomb in this process: ${inflateAll.cpuMs} ms CPU`);
  const pass = bomb.ingestCpuMsPerRequest < TARGET_BOMB_CPU_MS;
  console.log(`target: bomb < ${TARGET_BOMB_CPU_MS} ms of ingest CPU: ${pass ? "met" : "MISSED"}`);

  const file = await writeResults(RESULTS_DIR, "gzip-bomb", {
    benchmark: "gzip-bomb",
    date: date.toISOString(),
    parameters: { rounds, bombMib, ingestWorkers: 1 },
    scenarios: results,
    bombToReferenceRatio:
      reference.ingestCpuMsPerRequest > 0 ? Number((bomb.ingestCpuMsPerRequest / reference.ingestCpuMsPerRequest).toFixed(2)) : null,
    inflateWholeBomb: { cpuMs: inflateAll.cpuMs, decodedBytes: inflateAll.decodedBytes, where: "this process, zlib defaults" },
    target: { bombIngestCpuMs: TARGET_BOMB_CPU_MS, pass },
    machine: await machineFacts(REPO_ROOT, nc, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
}

runBenchmark(main);
