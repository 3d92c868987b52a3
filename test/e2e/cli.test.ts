import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLIENT_TEXT_KEYS } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import { loadDeliveryConfig, startDelivery } from "@switchyard/delivery";
import { createLogger } from "@switchyard/platform";
import { makeSelfSignedCertificate, WebhookReceiver, waitFor } from "@switchyard/testkit";
import { signStandardWebhook, signXSignature } from "@switchyard/webhook-verify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../helpers/stack.js";

/**
 * The `switchyard` command run as users run it (the bin, as a child process) against a live
 * pipeline: real nats-server, gRPC ingest with its HTTP API, delivery with the admin APIs, and
 * an HTTP receiver that refuses one destination's calls so there are failures to list and replay.
 */

const BIN = fileURLToPath(new URL("../../apps/cli/bin/switchyard.mjs", import.meta.url));
const WRITE_KEY = "wk_e2e_cli_tests_0001";
const ADMIN_TOKEN = "e2e-cli-admin-token-000001";

let stack: Stack;
let receiver: WebhookReceiver;
let dir: string;
let env: Record<string, string>;

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], options: { input?: string; extraEnv?: Record<string, string> } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...env, ...options.extraEnv }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    );
    child.stdin?.end(options.input ?? "");
  });
}

const jsonLines = (text: string): any[] =>
  text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  // "refusing" answers 410: a permanent failure, so the call is logged and dead-lettered at once.
  receiver.respond((request) => ({ status: request.path === "/refusing" ? 410 : 200 }));
  stack = await startStack({
    workspace: {
      sources: [{ id: "backend", writeKeys: [WRITE_KEY] }],
      destinations: [
        { id: "accepting", settings: { webhooks: [{ url: receiver.url("/accepting") }] } },
        { id: "refusing", settings: { webhooks: [{ url: receiver.url("/refusing") }] } },
      ],
      connections: [
        { sourceId: "backend", destinationId: "accepting" },
        { sourceId: "backend", destinationId: "refusing" },
      ],
    },
    deliveryEnv: { SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  dir = await mkdtemp(join(tmpdir(), "switchyard-cli-"));
  env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    NATS_URL: stack.nats.url,
    SWITCHYARD_NAMESPACE: stack.names.namespace,
    SWITCHYARD_INGEST_ADDR: `127.0.0.1:${stack.ingest.grpcPort}`,
    SWITCHYARD_INGEST_URL: stack.httpUrl,
    SWITCHYARD_DELIVERY_ADDR: `127.0.0.1:${stack.delivery.grpcPort}`,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
  };
});
afterAll(async () => {
  await stack?.dispose();
  await receiver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `switchyard tail` with these arguments, once it follows its subjects; its output so far on demand. */
async function startTail(args: string[]) {
  const child = spawn(process.execPath, [BIN, "tail", ...args], { env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  try {
    await waitFor("tail to subscribe", () => stderr.includes("tail: following"), { timeoutMs: 30_000 });
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return { child, exited, stdout: () => stdout };
}

describe("switchyard tail", () => {
  it("prints the calls published on the bus as decoded JSON lines", async () => {
    const tail = await startTail(["calls", "--calls", "--count", "3"]);
    const { child, exited } = tail;
    try {
      await stack.grpc.ingestBatch(
        {
          batchId: "cli-tail-batch",
          calls: [
            Call.fromPartial({
              messageId: "tail-1",
              userId: "u-1",
              payload: { $case: "track", value: { event: "Tailed", properties: { plan: "pro" } } },
            }),
            Call.fromPartial({
              messageId: "tail-2",
              userId: "u-2",
              payload: { $case: "identify", value: { traits: { email: "u2@example.com" } } },
            }),
          ],
        },
        WRITE_KEY,
      );
      const sent = await cli(["send", "--write-key", WRITE_KEY, "--message-id", "tail-3", "--type", "page", "--name", "Pricing", "--http"]);
      expect(sent).toMatchObject({ code: 0 });
      expect(JSON.parse(sent.stdout)).toEqual({ success: true });

      expect(await exited).toBe(0);
    } finally {
      child.kill();
    }
    const lines = jsonLines(tail.stdout());
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      subject: `${stack.names.namespace}.calls.backend`,
      sourceId: "backend",
      batchId: "cli-tail-batch",
      call: { messageId: "tail-1", userId: "u-1", track: { event: "Tailed", properties: { plan: "pro" } } },
    });
    expect(lines[0].call.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(lines[1]).toMatchObject({
      sourceId: "backend",
      call: { messageId: "tail-2", identify: { traits: { email: "u2@example.com" } } },
    });
    expect(lines[2]).toMatchObject({ sourceId: "backend", call: { messageId: "tail-3", page: { name: "Pricing" } } });
  });

  it("shows every text field of the Call model a client sets, sent over gRPC and over HTTP", async () => {
    // Each of Call's own text fields (a field added to calls.proto included), set to a value naming it.
    const own = Object.fromEntries(CLIENT_TEXT_KEYS.filter((key) => key !== "messageId").map((key) => [key, `${key}-value`]));
    const tail = await startTail(["calls", "--calls", "--count", "2"]);
    const { child, exited } = tail;
    try {
      for (const [messageId, flags] of [
        ["own-grpc", []],
        ["own-http", ["--http"]],
      ] as const) {
        const json = JSON.stringify({ type: "track", event: "Own Fields", messageId, ...own });
        const sent = await cli(["send", "--write-key", WRITE_KEY, "--json", json, ...flags]);
        expect(sent, sent.stderr).toMatchObject({ code: 0 });
      }
      expect(await exited).toBe(0);
    } finally {
      child.kill();
    }
    const calls = jsonLines(tail.stdout()).map((line) => line.call);
    expect(calls.map((call) => call.messageId).sort()).toEqual(["own-grpc", "own-http"]);
    for (const call of calls) expect(call).toMatchObject({ ...own, track: { event: "Own Fields" } });
  });

  it("without a subject follows every message of the namespace, delivery's included, each with its type", async () => {
    const tail = await startTail([]);
    const { child, exited } = tail;
    try {
      await stack.grpc.ingestCall(
        { call: Call.fromPartial({ messageId: "tail-all-1", userId: "u-9", payload: { $case: "alias", value: { previousId: "old-9" } } }) },
        WRITE_KEY,
      );
      const lines = await waitFor("the batch and the refused delivery", () => {
        const out = tail.stdout();
        const seen = out.endsWith("\n") ? jsonLines(out) : [];
        const batch = seen.find((line) => line.type === "switchyard.v1.CallBatch");
        const attempt = seen.find((line) => line.type === "switchyard.v1.DeliveryAttempt" && line.payload.messageId === "tail-all-1");
        const dead = seen.find((line) => line.type === "switchyard.v1.DeadLetter");
        return batch && attempt && dead ? { batch, attempt, dead } : undefined;
      });
      expect(lines.batch).toMatchObject({
        subject: `${stack.names.namespace}.calls.backend`,
        payload: { sourceId: "backend", calls: [{ messageId: "tail-all-1" }] },
      });
      expect(lines.attempt).toMatchObject({
        subject: `${stack.names.namespace}.deliverylog.refusing`,
        payload: { destinationId: "refusing", status: 410 },
      });
      expect(lines.dead.subject).toBe(`${stack.names.namespace}.dead.refusing`);
      // Ctrl-C (here: to the bin alone) stops the command cleanly, leaving nothing running.
      child.kill("SIGINT");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("switchyard send, config and deliveries against the running services", () => {
  it("send over gRPC, config get and apply, deliveries list, list --dead, replay and stats", async () => {
    const sent = await cli([
      "send",
      "--write-key",
      WRITE_KEY,
      "--message-id",
      "cli-send-1",
      "--event",
      "Order Completed",
      "--properties",
      '{"revenue":42}',
    ]);
    expect(sent.stderr).toBe("");
    expect(JSON.parse(sent.stdout)).toEqual({ messageId: "cli-send-1" });
    const delivered = await waitFor("cli-send-1 at the receiver", () =>
      receiver.byMessageId("cli-send-1").find((r) => r.path === "/accepting"),
    );
    expect(delivered.json).toMatchObject({ type: "track", event: "Order Completed", properties: { revenue: 42 }, userId: "cli-user" });

    const workspaceFile = join(dir, "workspace.json");
    await writeFile(
      workspaceFile,
      JSON.stringify({
        destinations: [
          { id: "applied", maxRequestsPerSecond: 20, settings: { webhooks: [{ url: receiver.url("/applied") }], sharedSecret: "s" } },
          {
            id: "mapped",
            type: "webhooks_actions",
            settings: { mappings: [{ name: "Orders", trigger: 'type = "track"', url: receiver.url("/mapped"), method: "PUT" }] },
          },
        ],
      }),
    );
    const [applied, dead, attempts] = await Promise.all([
      cli(["config", "apply", workspaceFile]),
      waitFor(
        "the dead letter of cli-send-1",
        async () => {
          const result = await cli(["deliveries", "list", "--dead", "--destination", "refusing"]);
          const entry = jsonLines(result.stdout).find((line) => line.deadLetter.task.call.messageId === "cli-send-1");
          return entry ? { result, entry } : undefined;
        },
        { timeoutMs: 60_000 },
      ),
      // The attempt log lists an attempt once it is indexed, a linger after it was made.
      waitFor(
        "the refused attempt and dead letter of cli-send-1 in the attempt log",
        async () => {
          const result = await cli(["deliveries", "list", "--destination", "refusing", "--message-id", "cli-send-1"]);
          const outcomes = jsonLines(result.stdout).map((attempt) => attempt.outcome);
          return outcomes.includes("permanent") && outcomes.includes("dead_lettered") ? result : undefined;
        },
        { timeoutMs: 60_000 },
      ),
    ]);
    expect(applied.code).toBe(0);
    expect(JSON.parse(applied.stdout)).toEqual({ written: ["destination.applied", "destination.mapped"] });
    expect(dead.entry.deadLetter).toMatchObject({ reason: "permanent_failure", lastAttempt: { status: 410 } });
    expect(attempts.code).toBe(0);

    // The attempt log a page at a time, filtered, and one attempt's detail.
    const [firstPage, everyPage, deadOnly, badOutcome, badSince] = await Promise.all([
      cli(["deliveries", "list", "--destination", "refusing", "--limit", "1"]),
      cli(["deliveries", "list", "--destination", "refusing", "--limit", "1", "--all"]),
      cli(["deliveries", "list", "--destination", "refusing", "--outcome", "dead_lettered", "--since", "2020-01-01T00:00:00Z"]),
      cli(["deliveries", "list", "--outcome", "lost"]),
      cli(["deliveries", "list", "--since", "yesterday"]),
    ]);
    expect(jsonLines(firstPage.stdout)).toHaveLength(1);
    const nextToken = /--page-token (\S+)/.exec(firstPage.stderr)?.[1];
    expect(nextToken).toBeTruthy();
    const secondPage = await cli(["deliveries", "list", "--destination", "refusing", "--limit", "1", "--page-token", nextToken!]);
    expect(jsonLines(secondPage.stdout)[0].attemptId).not.toBe(jsonLines(firstPage.stdout)[0].attemptId);
    expect(jsonLines(everyPage.stdout).length).toBeGreaterThanOrEqual(2);
    const [deadAttempt] = jsonLines(deadOnly.stdout);
    expect(deadAttempt).toMatchObject({ outcome: "dead_lettered", destinationId: "refusing" });
    expect(badOutcome).toMatchObject({ code: 2, stderr: expect.stringContaining("--outcome: must be one of") });
    expect(badSince).toMatchObject({ code: 2, stderr: expect.stringContaining("--since: must be an ISO 8601 time") });
    const [shown, shownRaw, rawElsewhere] = await Promise.all([
      cli(["deliveries", "show", deadAttempt.attemptId]),
      cli(["deliveries", "show", deadAttempt.attemptId, "--raw"]),
      cli(["deliveries", "list", "--raw"]),
    ]);
    const detail = JSON.parse(shown.stdout);
    expect(detail).toMatchObject({ attemptId: deadAttempt.attemptId, exchange: { method: "POST", requestBodyEncoding: "json" } });
    // The webhook body is shown as the JSON it is; --raw gives the exact bytes in base64.
    expect(typeof detail.exchange.requestBody).toBe("object");
    const raw = JSON.parse(shownRaw.stdout);
    expect(raw.exchange.requestBodyEncoding).toBeUndefined();
    expect(JSON.stringify(detail.exchange.requestBody)).toBe(Buffer.from(raw.exchange.requestBody, "base64").toString("utf8"));
    expect(rawElsewhere).toMatchObject({ code: 2, stderr: expect.stringContaining("--raw: only for show") });

    const [config, replayed] = await Promise.all([
      cli(["config", "get"]),
      cli(["deliveries", "replay", "--sequence", String(dead.entry.sequence)]),
    ]);
    // The stats are folded from the outcome reports, about a second behind the deliveries.
    const stats = await waitFor("the accepting destination's stats", async () => {
      const answer = await cli(["deliveries", "stats", "--destination", "accepting"]);
      return jsonLines(answer.stdout).length > 0 ? answer : undefined;
    });
    const workspace = JSON.parse(config.stdout);
    expect(workspace.sources).toEqual([{ id: "backend", writeKeyCount: 1 }]);
    expect(workspace.destinations.map((d: any) => d.id).sort()).toEqual(["accepting", "applied", "mapped", "refusing"]);
    expect(workspace.destinations.find((d: any) => d.id === "applied")).toMatchObject({ sharedSecret: "[set]", maxRequestsPerSecond: 20 });
    const mapped = workspace.destinations.find((d: any) => d.id === "mapped");
    expect(mapped.webhooks).toBeUndefined();
    expect(mapped).toMatchObject({
      webhooksActionsKind: {
        mappings: [{ name: "Orders", enabled: true, trigger: 'type = "track"', url: receiver.url("/mapped"), method: "PUT" }],
      },
    });
    expect(workspace.connections).toHaveLength(2);
    expect(JSON.parse(replayed.stdout)).toEqual({ replayed: 1 });
    expect(jsonLines(stats.stdout)[0]).toMatchObject({ destinationId: "accepting" });
    await waitFor(
      "the replayed call to be refused again",
      () => receiver.byMessageId("cli-send-1").filter((r) => r.path === "/refusing").length >= 2,
    );
  });

  it("call reaches any method; missing credentials and bad input are usage errors naming the flag", async () => {
    const [listed, noToken, badJson] = await Promise.all([
      cli(["call", "ConfigService/ListConnections", '{"sourceId":"backend"}']),
      cli(["deliveries", "list"], { extraEnv: { SWITCHYARD_ADMIN_TOKEN: "" } }),
      cli(["send", "--write-key", WRITE_KEY, "--properties", "{nope"]),
    ]);
    expect(JSON.parse(listed.stdout).connections).toHaveLength(2);
    expect(noToken).toMatchObject({ code: 2, stderr: expect.stringContaining("--token or set SWITCHYARD_ADMIN_TOKEN") });
    expect(badJson).toMatchObject({ code: 2, stderr: expect.stringContaining("--properties: must be valid JSON") });
  });

  it("connect sets a connection's filter, refuses a bad one naming the field, and removes it when given none", async () => {
    const filter = {
      all: { filters: [{ field: { path: "type", equals: "track" } }, { field: { path: "properties.coupon", equals: null } }] },
    };
    try {
      const set = await cli(["connect", "backend", "accepting", "--filter", JSON.stringify(filter)]);
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse(set.stdout)).toEqual({ connection: { sourceId: "backend", destinationId: "accepting", filter } });

      const [badPath, badShape, notJson] = await Promise.all([
        cli(["connect", "backend", "accepting", "--filter", '{"field":{"path":"revenue","greaterThan":0}}']),
        cli(["connect", "backend", "accepting", "--filter", '{"field":{"path":"type","equal":"track"}}']),
        cli(["connect", "backend", "accepting", "--filter", "{type: track}"]),
      ]);
      expect(badPath.code).toBe(1);
      expect(badPath.stderr).toContain(
        'switchyard.v1.ConfigService/Connect: INVALID_ARGUMENT: filter.field.path: must be "type", "messageId", "userId",',
      );
      expect(badShape.code).toBe(2);
      expect(badShape.stderr).toContain("--filter: filter.field.equal: is not allowed here: give one test: equals, notEquals, exists,");
      expect(notJson).toMatchObject({ code: 2, stderr: expect.stringContaining("--filter: not valid JSON") });
      const listed = await cli(["call", "ConfigService/ListConnections", '{"sourceId":"backend"}']);
      expect(JSON.parse(listed.stdout).connections).toContainEqual({ sourceId: "backend", destinationId: "accepting", filter });
    } finally {
      const cleared = await cli(["connect", "backend", "accepting"]);
      expect(JSON.parse(cleared.stdout)).toEqual({ connection: { sourceId: "backend", destinationId: "accepting" } });
    }
  });
});

describe("switchyard over TLS", () => {
  it("reaches a TLS-serving service when told its CA, and says why not otherwise", async () => {
    const certificate = await makeSelfSignedCertificate(dir);
    const tlsDelivery = await startDelivery(
      loadDeliveryConfig({
        NATS_URL: stack.nats.url,
        SWITCHYARD_NAMESPACE: `${stack.names.namespace}tls`,
        DELIVERY_GRPC_PORT: "0",
        DELIVERY_OPS_PORT: "0",
        HOST: "127.0.0.1",
        LOG_LEVEL: "silent",
        SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
        SWITCHYARD_TLS_CERT_FILE: certificate.certPath,
        SWITCHYARD_TLS_KEY_FILE: certificate.keyPath,
      }),
      createLogger({ service: "delivery", level: "silent" }),
    );
    try {
      const address = `127.0.0.1:${tlsDelivery.grpcPort}`;
      const [trusted, untrusted] = await Promise.all([
        cli(["call", "ConfigService/ListSources", "--delivery", address, "--ca-file", certificate.certPath]),
        cli(["call", "ConfigService/ListSources", "--delivery", address, "--tls"]),
      ]);
      expect(trusted).toMatchObject({ code: 0, stderr: "" });
      expect(JSON.parse(trusted.stdout)).toEqual({});
      expect(untrusted).toMatchObject({ code: 1, stderr: expect.stringContaining("trust the server's CA with --ca-file") });
    } finally {
      await tlsDelivery.stop();
    }
  });
});

describe("switchyard verify", () => {
  const body = '{"type":"track","event":"Signed Up","messageId":"m-1"}';
  const whsec = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;

  it("accepts a good signature (exit 0) and rejects a bad one (exit 1), from stdin or a file", async () => {
    const file = join(dir, "body.json");
    await writeFile(file, body);
    const good = signXSignature(body, "the-secret");
    const bad = signXSignature(body, "another-secret");
    const timestamp = String(Math.floor(Date.now() / 1000));
    const standard = signStandardWebhook({ id: "m-1", timestamp: Number(timestamp), body }, whsec);
    const [fromStdin, rejected, standardGood, standardBad, help] = await Promise.all([
      cli(["verify", "--secret", "the-secret", "--signature", good], { input: body }),
      cli(["verify", "--secret", "the-secret", "--signature", bad, "--body-file", file]),
      cli([
        "verify",
        "--signing-secret",
        whsec,
        "--webhook-id",
        "m-1",
        "--webhook-timestamp",
        timestamp,
        "--webhook-signature",
        standard,
        "--body-file",
        file,
      ]),
      cli([
        "verify",
        "--signing-secret",
        whsec,
        "--webhook-id",
        "m-2",
        "--webhook-timestamp",
        timestamp,
        "--webhook-signature",
        standard,
        "--body-file",
        file,
      ]),
      cli(["verify", "--help"]),
    ]);
    expect(fromStdin).toEqual({ code: 0, stdout: "X-Signature: valid\n", stderr: "" });
    expect(rejected).toMatchObject({ code: 1, stdout: "X-Signature: invalid\n" });
    expect(standardGood).toMatchObject({ code: 0, stdout: "Standard Webhooks: valid (webhook-id m-1)\n" });
    expect(standardBad).toMatchObject({ code: 1, stdout: expect.stringContaining("invalid: no_matching_signature") });
    expect(help).toMatchObject({ code: 0, stdout: expect.stringContaining("Examples:") });
  });
});
