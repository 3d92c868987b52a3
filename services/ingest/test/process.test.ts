import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { leakedSecrets, NatsServer, ServiceProcess, uniqueNamespace } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const WRITE_KEY = "wk_process_test_secret_key_0001";
const SECRET = "shared-secret-that-must-not-leak";

let nats: NatsServer;
let dir: string;
const processes: ServiceProcess[] = [];

beforeEach(async () => {
  nats = await NatsServer.start();
  dir = await mkdtemp(join(tmpdir(), "switchyard-proc-"));
});
afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.dispose()));
  await nats.dispose();
  await rm(dir, { recursive: true, force: true });
});

async function ingestEnv(extra: Record<string, string> = {}) {
  const workspaceFile = join(dir, "workspace.json");
  await writeFile(
    workspaceFile,
    JSON.stringify({
      sources: [{ id: "web", writeKeys: [WRITE_KEY] }],
      destinations: [{ id: "hook", settings: { webhooks: [{ url: "http://127.0.0.1:9/hook" }], sharedSecret: SECRET } }],
      connections: [{ sourceId: "web", destinationId: "hook" }],
    }),
  );
  return {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: uniqueNamespace(),
    SWITCHYARD_WORKSPACE_FILE: workspaceFile,
    INGEST_GRPC_PORT: "0",
    INGEST_OPS_PORT: "0",
    INGEST_HTTP_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "debug",
    ...extra,
  };
}

function start(env: Record<string, string>): ServiceProcess {
  const service = ServiceProcess.start("ingest", env);
  processes.push(service);
  return service;
}

describe("the ingest process", () => {
  it("stops on SIGTERM after finishing in-flight work, and exits 0", async () => {
    const env = await ingestEnv();
    const ingest = start(env);
    const { httpPort } = await ingest.ready("ingest");
    const response = await fetch(`http://127.0.0.1:${httpPort as number}/v1/track`, {
      method: "POST",
      headers: { Authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}` },
      body: JSON.stringify({ userId: "u1", event: "E" }),
    });
    expect(response.status).toBe(200);
    ingest.signal("SIGTERM");
    expect(await ingest.exited()).toEqual({ code: 0, signal: null });
    expect(ingest.output).toMatch(/"msg":"stopped"/);
  });

  it("refuses to start with a bad setting, naming the variable", async () => {
    const ingest = start(await ingestEnv({ INGEST_HTTP_PORT: "eighty", LOG_LEVEL: "loud" }));
    expect((await ingest.exited()).code).toBe(1);
    expect(ingest.output).toMatch(/INGEST_HTTP_PORT: must be a port number/);
    expect(ingest.output).toMatch(/LOG_LEVEL: must be one of/);
  });

  it("refuses to start with an invalid workspace file, naming the field", async () => {
    const env = await ingestEnv();
    await writeFile(env.SWITCHYARD_WORKSPACE_FILE, JSON.stringify({ sources: [{ id: "bad id!", writeKeys: [] }] }));
    const ingest = start(env);
    expect((await ingest.exited()).code).toBe(1);
    expect(ingest.output).toMatch(/sources\.0\.id: must be 1-64 letters/);
    expect(ingest.output).toMatch(/sources\.0\.writeKeys: needs at least one write key/);
  });

  it("never writes write keys, secrets or authorization headers to its logs", async () => {
    const env = await ingestEnv();
    const ingest = start(env);
    const { httpPort } = await ingest.ready("ingest");
    const authorization = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;
    for (const key of [WRITE_KEY, "wk_wrong_key_but_secret_too"]) {
      await fetch(`http://127.0.0.1:${httpPort as number}/v1/batch`, {
        method: "POST",
        headers: { Authorization: `Basic ${Buffer.from(`${key}:`).toString("base64")}` },
        body: JSON.stringify({ batch: [{ type: "track", userId: "u1", event: "E" }, { type: "track" }] }),
      });
    }
    ingest.signal("SIGTERM");
    await ingest.exited();
    expect(ingest.logLines().length).toBeGreaterThan(2);
    expect(leakedSecrets(ingest.output, [WRITE_KEY, "wk_wrong_key_but_secret_too", SECRET, authorization])).toEqual([]);
  });
});
