import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, MetricsSnapshot, NatsServer, ServiceProcess, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const WRITE_KEY = "wk_workers_test_key_0001";

let nats: NatsServer;
let dir: string;
let ingest: ServiceProcess;
let httpPort: number;
let opsPort: number;

beforeAll(async () => {
  nats = await NatsServer.start();
  dir = await mkdtemp(join(tmpdir(), "switchyard-workers-"));
  const workspaceFile = join(dir, "workspace.json");
  await writeFile(workspaceFile, JSON.stringify({ sources: [{ id: "web", writeKeys: [WRITE_KEY] }] }));
  httpPort = await freePort();
  opsPort = await freePort();
  ingest = ServiceProcess.start("ingest", {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: uniqueNamespace(),
    SWITCHYARD_WORKSPACE_FILE: workspaceFile,
    SWITCHYARD_WORKERS: "2",
    INGEST_GRPC_PORT: String(await freePort()),
    INGEST_HTTP_PORT: String(httpPort),
    INGEST_OPS_PORT: String(opsPort),
    HOST: "127.0.0.1",
    LOG_LEVEL: "debug",
  });
});
afterAll(async () => {
  await ingest.dispose();
  await nats.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** pids of the workers that logged `message`, in order. */
function pidsLogging(message: string): number[] {
  return ingest
    .logLines()
    .filter((line) => line.msg === message)
    .map((line) => line.pid as number);
}

/** One track call on a connection of its own, so the cluster's primary hands each to the next worker. */
function trackOnNewConnection(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: httpPort,
        path: "/v1/track",
        method: "POST",
        agent: false,
        headers: { Authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`, "Content-Type": "application/json" },
      },
      (response) => {
        response.resume();
        response.once("end", () => resolve(response.statusCode ?? 0));
      },
    );
    req.once("error", reject);
    req.end(JSON.stringify({ userId: "u1", event: "Worker Test" }));
  });
}

describe("ingest with SWITCHYARD_WORKERS=2", () => {
  it("runs two workers that share the ports and both serve", async () => {
    // Generous: each worker compiles the TypeScript sources on its own (tsx), slow on a busy machine.
    await waitFor("two workers ready", () => pidsLogging("ingest ready").length === 2, { timeoutMs: 45_000 });
    const workers = new Set(pidsLogging("ingest ready"));
    expect(workers.size).toBe(2);
    expect(workers.has(ingest.pid!)).toBe(false);

    for (let i = 0; i < 6; i++) expect(await trackOnNewConnection()).toBe(200);
    await waitFor("six batches logged", () => pidsLogging("batch published").length === 6);
    expect(new Set(pidsLogging("batch published"))).toEqual(workers);

    // The supervisor answers the ops port for both workers: metrics summed, ready when both are.
    const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${opsPort}/metrics`);
    expect(metrics.value("switchyard_ingest_calls_accepted_total", { transport: "http" })).toBe(6);
    const ready = await fetch(`http://127.0.0.1:${opsPort}/readyz`);
    expect(ready.status).toBe(200);
    const report = (await ready.json()) as { checks: { name: string; ok: boolean }[] };
    expect(report.checks.map((check) => check.name).sort()).toEqual([...workers].map((pid) => `worker ${pid}`).sort());
  });

  it("replaces a worker that dies", async () => {
    const [victim] = pidsLogging("ingest ready");
    process.kill(victim!, "SIGKILL");
    await waitFor("a replacement worker ready", () => pidsLogging("ingest ready").length === 3, { timeoutMs: 45_000 });
    expect(ingest.output).toMatch(/"msg":"worker died; restarting it"/);
    expect(await trackOnNewConnection()).toBe(200);
    expect(await trackOnNewConnection()).toBe(200);
  });

  it("stops every worker on SIGTERM and exits 0", async () => {
    const live = pidsLogging("ingest ready").slice(1);
    ingest.signal("SIGTERM");
    expect(await ingest.exited()).toEqual({ code: 0, signal: null });
    expect(pidsLogging("stopped").sort()).toEqual([...live].sort());
    for (const pid of live) expect(() => process.kill(pid, 0)).toThrow();
  });
});
