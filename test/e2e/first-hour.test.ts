import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort, NatsServer, waitFor, WebhookReceiver } from "@switchyard/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

/**
 * What a newcomer sees in their first hour, through `npm start` itself (scripts/start.mjs, with
 * the real services as child processes): start-up errors are one line naming the setting that
 * fixes them, a destination's failing and recovery is logged once per change, and the local
 * admin token survives restarts.
 */
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const execFileAsync = promisify(execFile);
const WRITE_KEY = "wk_first_hour_test_0001";
/** A stack trace line. */
const STACK_LINE = /^\s+at .+\(?.*:\d+:\d+\)?$/m;

class Start {
  output = "";
  readonly exited: Promise<number | null>;
  private constructor(readonly child: ChildProcess) {
    child.stdout?.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  static run(env: Record<string, string>): Start {
    const child = spawn(process.execPath, ["scripts/start.mjs"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new Start(child);
  }

  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    return waitFor(
      `npm start output matching ${pattern}`,
      () => this.output.match(pattern) ?? (this.child.exitCode !== null ? Promise.reject(new Error(`exited:\n${this.output}`)) : undefined),
      { timeoutMs, intervalMs: 50 },
    );
  }

  lines(pattern: RegExp): string[] {
    return this.output.split("\n").filter((line) => pattern.test(line));
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) this.child.kill("SIGTERM");
    await this.exited;
  }
}

let nats: NatsServer;
let receiver: WebhookReceiver;
let dir: string;
const running: Start[] = [];

beforeAll(async () => {
  nats = await NatsServer.start();
  receiver = await WebhookReceiver.start();
  dir = await mkdtemp(join(tmpdir(), "switchyard-first-hour-"));
  await writeFile(
    join(dir, "workspace.json"),
    JSON.stringify({
      sources: [{ id: "web", writeKeys: [WRITE_KEY] }],
      destinations: [{ id: "flaky-hook", settings: { webhooks: [{ url: receiver.url("/hook") }] } }],
      connections: [{ sourceId: "web", destinationId: "flaky-hook" }],
    }),
  );
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((start) => start.stop()));
});
afterAll(async () => {
  await receiver?.close();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function startEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const ports: Record<string, string> = {};
  for (const name of [
    "INGEST_GRPC_PORT",
    "INGEST_HTTP_PORT",
    "INGEST_OPS_PORT",
    "DELIVERY_GRPC_PORT",
    "DELIVERY_OPS_PORT",
    "AUDIENCE_GRPC_PORT",
    "AUDIENCE_OPS_PORT",
    "CONSOLE_HTTP_PORT",
    "CONSOLE_OPS_PORT",
    "INSIGHTS_GRPC_PORT",
    "INSIGHTS_OPS_PORT",
  ]) {
    ports[name] = String(await freePort());
  }
  return {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: `fh${Math.random().toString(36).slice(2, 8)}`,
    SWITCHYARD_WORKSPACE_FILE: join(dir, "workspace.json"),
    SWITCHYARD_DATA_DIR: join(dir, "data"),
    HOST: "127.0.0.1",
    ...ports,
    ...extra,
  };
}

function start(env: Record<string, string>): Start {
  const run = Start.run(env);
  running.push(run);
  return run;
}

const RUNNING = /Switchyard is running/;
const ADMIN_TOKEN_LINE = /admin token {2}(\S+)/;

describe("npm start, the first hour", () => {
  it("reflection lists each port's own services; a second npm start names the port in use and its variable, in one line", async () => {
    const env = await startEnv();
    const first = start(env);
    await first.waitFor(RUNNING);
    // Reflection on each port lists only what that port serves (buf's independent descriptor pool).
    const listed = async (port: string) =>
      (
        await execFileAsync(join(ROOT, "node_modules/.bin/buf"), [
          "curl",
          "--protocol",
          "grpc",
          "--http2-prior-knowledge",
          "--list-services",
          `http://127.0.0.1:${port}`,
        ])
      ).stdout
        .trim()
        .split("\n")
        .sort();
    expect(await listed(env.DELIVERY_GRPC_PORT!)).toEqual([
      "grpc.health.v1.Health",
      "switchyard.v1.ConfigService",
      "switchyard.v1.DeliveryService",
    ]);
    expect(await listed(env.AUDIENCE_GRPC_PORT!)).toEqual([
      "grpc.health.v1.Health",
      "switchyard.v1.AudienceService",
      "switchyard.v1.DeletionService",
    ]);
    expect(await listed(env.INGEST_GRPC_PORT!)).toEqual(["grpc.health.v1.Health", "switchyard.v1.IngestService"]);
    expect(await listed(env.INSIGHTS_GRPC_PORT!)).toEqual(["grpc.health.v1.Health", "switchyard.v1.InsightsService"]);

    const second = start(env);
    expect(await second.exited).toBe(1);
    const errors = second.lines(/cannot listen on/);
    expect(errors.length).toBeGreaterThan(0);
    for (const line of errors) {
      expect(line).toMatch(/cannot listen on \S+:(\d+): the port is in use .*; set [A-Z_]+_PORT to another port/);
      const [, port] = /:(\d+): the port is in use/.exec(line)!;
      const variable = /set ([A-Z_]+_PORT) to/.exec(line)![1]!;
      expect(env[variable]).toBe(port);
    }
    expect(second.output).not.toMatch(STACK_LINE);
    // Two `npm start`s (the first up and running, five services and the console) plus four reflection
    // calls: 25 s alone, past the default minute on a CI machine running the rest of the suite beside it.
  }, 150_000);

  // Three `npm start`s one after the other, each allowed the usual start-up deadline: on a busy CI
  // machine they take longer together than one test's default minute.
  it("keeps the admin token across restarts (in the data folder) unless SWITCHYARD_ADMIN_TOKEN is set", async () => {
    const env = await startEnv({ SWITCHYARD_DATA_DIR: join(dir, "token-data") });
    const first = start(env);
    const token = (await first.waitFor(ADMIN_TOKEN_LINE))[1]!;
    expect(token).toMatch(/^local-[0-9a-f]{32}$/);
    expect(first.output).toContain("for the config, delivery, audience, deletion and insights APIs");
    await first.stop();
    expect((await readFile(join(dir, "token-data", "admin-token"), "utf8")).trim()).toBe(token);

    const again = start(env);
    expect((await again.waitFor(ADMIN_TOKEN_LINE))[1]).toBe(token);
    await again.stop();

    const own = start({ ...env, SWITCHYARD_ADMIN_TOKEN: "my-own-admin-token-0001" });
    expect((await own.waitFor(ADMIN_TOKEN_LINE))[1]).toBe("(SWITCHYARD_ADMIN_TOKEN)");
    expect(own.output).not.toContain(token);
  }, 180_000);

  it("says a NATS server without JetStream needs it, and how to start one", async () => {
    const port = await freePort();
    const plain = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    try {
      const env = await startEnv({ NATS_URL: `nats://127.0.0.1:${port}` });
      const run = start(env);
      // nats-server may take a moment to listen: the services connect with retries.
      expect(await run.exited).toBe(1);
      const lines = run.lines(/has JetStream disabled/);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines[0]).toContain("nats-server -js");
      expect(lines[0]).toContain(`nats://127.0.0.1:${port}`);
      expect(run.output).not.toMatch(STACK_LINE);
    } finally {
      plain.kill("SIGTERM");
    }
  });

  it("logs a destination turning failing and recovering once per change, never per attempt", async () => {
    let healthy = false;
    receiver.respond(() => ({ status: healthy ? 200 : 503 }));
    const env = await startEnv({
      DELIVERY_FAILURE_THRESHOLD: "2",
      DELIVERY_FAILING_COOLDOWN_MS: "300",
      DELIVERY_RETRY_BASE_DELAY_MS: "100",
      DELIVERY_RETRY_MAX_DELAY_MS: "300",
    });
    const run = start(env);
    await run.waitFor(RUNNING);
    const auth = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`http://127.0.0.1:${env.INGEST_HTTP_PORT}/v1/track`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ userId: `u${i}`, event: "First Hour", messageId: `first-hour-${i}` }),
      });
      expect(response.status).toBe(200);
    }
    await run.waitFor(/destination failing/);
    // Several more failed attempts (retries and probes) while it stays failing.
    await waitFor("more failed attempts", () => receiver.requests.length >= 12, { timeoutMs: 30_000 });
    healthy = true;
    await run.waitFor(/destination healthy again/);
    await waitFor(
      "all six calls delivered",
      () => {
        const delivered = new Set(receiver.requests.filter((r) => r.json.event === "First Hour").map((r) => r.json.messageId));
        return delivered.size === 6;
      },
      { timeoutMs: 30_000 },
    );

    const failing = run.lines(/destination failing/);
    const recovered = run.lines(/destination healthy again/);
    expect(failing).toHaveLength(1);
    expect(recovered).toHaveLength(1);
    expect(failing[0]).toMatch(/"level":"warn"/);
    expect(failing[0]).toContain("flaky-hook");
    expect(recovered[0]).toMatch(/"level":"info"/);
  });
});
