import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { status } from "@grpc/grpc-js";
import { Call, configApi } from "@switchyard/contracts";
import { basicAuthorization, kvKeys } from "@switchyard/workspace";
import { readCallBatches, waitFor, WebhookReceiver } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, grpcFailure, startDeliveryFixture, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";
import { GrpcIngestClient } from "@switchyard/testkit/fixtures/ingest";

/**
 * Blocking at the source through the whole pipeline: ConfigService (served by delivery) and the
 * `switchyard block` / `unblock` commands change a source's blocks; ingest answers blocked calls
 * as accepted and stores them on the filtered stream; delivery, reading the calls stream, never
 * sends them to the connected receiver. Real nats-server, ingest, delivery and HTTP receiver.
 */

const BIN = fileURLToPath(new URL("../../apps/cli/bin/switchyard.mjs", import.meta.url));
const WRITE_KEY = "wk_e2e_blocking_000001";
const CLI_WRITE_KEY = "wk_e2e_blocking_cli_01";
const TYPES_RULE = "must be one of identify, track, page, screen, group, alias";

let fixture: DeliveryFixture;
let receiver: WebhookReceiver;
let ingestUrl: string;
let grpc: GrpcIngestClient;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  fixture = await startDeliveryFixture({
    workspace: {
      sources: [
        { id: "web", writeKeys: [WRITE_KEY] },
        { id: "cli", writeKeys: [CLI_WRITE_KEY] },
      ],
      destinations: [{ id: "hook", settings: { webhooks: [{ url: receiver.url("/hook") }] } }],
      connections: [{ sourceId: "web", destinationId: "hook" }],
    },
  });
  ingestUrl = await fixture.startIngest();
  grpc = new GrpcIngestClient(`127.0.0.1:${fixture.ingest!.grpcPort}`);
});
afterAll(async () => {
  grpc?.close();
  await fixture?.dispose();
  await receiver?.close();
});

const blockCalls = (request: Partial<configApi.BlockCallsRequest>) =>
  fixture.admin.call<configApi.BlockCallsRequest, configApi.BlockCallsResponse>(
    fixture.admin.config,
    "blockCalls",
    configApi.BlockCallsRequest,
    request,
  );
const unblockCalls = (request: Partial<configApi.UnblockCallsRequest>) =>
  fixture.admin.call<configApi.UnblockCallsRequest, configApi.UnblockCallsResponse>(
    fixture.admin.config,
    "unblockCalls",
    configApi.UnblockCallsRequest,
    request,
  );

async function storedSource(id: string): Promise<{ revision: number; json: any }> {
  const entry = await fixture.configKv.get(kvKeys.source(id));
  return { revision: entry!.revision, json: entry!.json() };
}

async function postBatch(batch: unknown[]): Promise<{ status: number; body: any }> {
  const response = await fetch(`${ingestUrl}/v1/batch`, {
    method: "POST",
    headers: { authorization: basicAuthorization(WRITE_KEY), "content-type": "application/json" },
    body: JSON.stringify({ batch }),
  });
  return { status: response.status, body: await response.json() };
}

function grpcCall(messageId: string, payload: Call["payload"]): Call {
  return Call.fromPartial({ messageId, userId: "user-1", payload });
}

let probes = 0;
/**
 * Sends `event` tracks until one is seen where `arrived` looks (ingest applies configuration
 * changes within moments, not at once); resolves once one was.
 */
async function probeUntil(event: string, arrived: (messageId: string) => Promise<boolean>): Promise<void> {
  await waitFor(`a "${event}" probe to arrive where expected`, async () => {
    const messageId = `probe-${probes++}`;
    expect((await postBatch([{ type: "track", userId: "u-probe", event, messageId }])).status).toBe(200);
    return waitFor("the probe", () => arrived(messageId), { timeoutMs: 2_000 }).then(
      () => true,
      () => false,
    );
  });
}
const onFiltered = async (messageId: string) =>
  (await readCallBatches(fixture.nc, fixture.names, fixture.names.filteredStream)).some((s) =>
    s.batch.calls.some((call) => call.messageId === messageId),
  );
const atReceiver = async (messageId: string) => receiver.byMessageId(messageId).length > 0;

describe("blocking at the source, end to end", () => {
  it("a blocked call reaches no destination; the rest of its batch does; unblocked calls flow again", async () => {
    const blocked = await blockCalls({ sourceId: "web", block: { types: ["page"], trackEvents: ["Noisy Event", "Probe"] } });
    expect(blocked.source?.blocked).toEqual({ types: ["page"], trackEvents: ["Noisy Event", "Probe"] });
    await probeUntil("Probe", onFiltered);

    const http = await postBatch([
      { type: "track", userId: "u1", event: "Signed Up", messageId: "h-pass-1" },
      { type: "track", userId: "u1", event: "Noisy Event", messageId: "h-blocked-1" },
      { type: "page", userId: "u1", name: "Pricing", messageId: "h-blocked-2" },
      { type: "identify", userId: "u1", traits: { plan: "pro" }, messageId: "h-pass-2" },
    ]);
    expect(http).toEqual({ status: 200, body: { success: true } });
    const viaGrpc = await grpc.ingestBatch(
      {
        batchId: "e2e-blocking-grpc",
        calls: [
          grpcCall("g-blocked-1", { $case: "page", value: { name: "Home", category: "", properties: undefined } }),
          grpcCall("g-pass-1", { $case: "track", value: { event: "Signed Up", properties: { plan: "pro" } } }),
          grpcCall("g-blocked-2", { $case: "track", value: { event: "Noisy Event", properties: undefined } }),
        ],
      },
      WRITE_KEY,
    );
    expect(viaGrpc).toMatchObject({ accepted: 3, messageIds: ["g-blocked-1", "g-pass-1", "g-blocked-2"], rejections: [] });

    await waitFor("the calls that pass to be delivered", () =>
      ["h-pass-1", "h-pass-2", "g-pass-1"].every((id) => receiver.byMessageId(id).length === 1),
    );
    await fixture.settled();
    const blockedIds = ["h-blocked-1", "h-blocked-2", "g-blocked-1", "g-blocked-2"];
    expect(blockedIds.filter((id) => receiver.byMessageId(id).length > 0)).toEqual([]);
    // Kept, though: on the filtered stream, each batch's blocked calls under the batch's own id.
    const filtered = await readCallBatches(fixture.nc, fixture.names, fixture.names.filteredStream);
    const grpcBlocked = filtered.find((s) => s.batch.batchId === "e2e-blocking-grpc");
    expect(grpcBlocked?.msgId).toBe("web:e2e-blocking-grpc");
    expect(grpcBlocked?.batch.calls.map((call) => call.messageId)).toEqual(["g-blocked-1", "g-blocked-2"]);
    expect(filtered.flatMap((s) => s.batch.calls.map((call) => call.messageId))).toEqual(expect.arrayContaining(blockedIds));

    const unblocked = await unblockCalls({ sourceId: "web", unblock: { types: ["page"], trackEvents: ["Noisy Event", "Not Blocked"] } });
    expect(unblocked.source?.blocked).toEqual({ types: [], trackEvents: ["Probe"] });
    await probeUntil("Noisy Event", atReceiver);
    await postBatch([
      { type: "track", userId: "u1", event: "Noisy Event", messageId: "h-after-1" },
      { type: "page", userId: "u1", name: "Pricing", messageId: "h-after-2" },
    ]);
    await waitFor("unblocked calls to be delivered", () => ["h-after-1", "h-after-2"].every((id) => receiver.byMessageId(id).length === 1));
    // Unblocking is for calls accepted after it: the calls blocked before stay undelivered.
    await fixture.settled();
    expect(blockedIds.filter((id) => receiver.byMessageId(id).length > 0)).toEqual([]);

    // The last block lifted: the record has no blocks left at all.
    const cleared = await unblockCalls({ sourceId: "web", unblock: { types: [], trackEvents: ["Probe"] } });
    expect(cleared.source?.blocked).toBeUndefined();
    expect((await storedSource("web")).json).not.toHaveProperty("blocked");
  });

  it("refuses invalid blocks naming the field and rule, and stores nothing", async () => {
    await blockCalls({ sourceId: "web", block: { types: ["alias"], trackEvents: [] } });
    const before = await storedSource("web");
    const refused: [string, () => Promise<unknown>, number, string][] = [
      [
        "unknown type",
        () => blockCalls({ sourceId: "web", block: { types: ["track", "nonsense"], trackEvents: [] } }),
        status.INVALID_ARGUMENT,
        `block.types.1: ${TYPES_RULE}`,
      ],
      [
        "delete is no client call type",
        () => unblockCalls({ sourceId: "web", unblock: { types: ["delete"], trackEvents: [] } }),
        status.INVALID_ARGUMENT,
        `unblock.types.0: ${TYPES_RULE}`,
      ],
      [
        "empty event name",
        () => blockCalls({ sourceId: "web", block: { types: [], trackEvents: ["ok", ""] } }),
        status.INVALID_ARGUMENT,
        "block.trackEvents.1: must not be empty",
      ],
      [
        "long event name",
        () => blockCalls({ sourceId: "web", block: { types: [], trackEvents: ["x".repeat(201)] } }),
        status.INVALID_ARGUMENT,
        "block.trackEvents.0: must be at most 200 characters",
      ],
      [
        "too many names",
        () => blockCalls({ sourceId: "web", block: { types: [], trackEvents: Array.from({ length: 1001 }, (_, i) => `E${i}`) } }),
        status.INVALID_ARGUMENT,
        "block.trackEvents: holds at most 1000 event names",
      ],
      [
        "nothing named",
        () => blockCalls({ sourceId: "web", block: { types: [], trackEvents: [] } }),
        status.INVALID_ARGUMENT,
        "block: must name at least one call type (types) or track event (trackEvents)",
      ],
      [
        "no block at all",
        () => blockCalls({ sourceId: "web" }),
        status.INVALID_ARGUMENT,
        "block: must name at least one call type (types) or track event (trackEvents)",
      ],
      [
        "unknown source",
        () => blockCalls({ sourceId: "nope", block: { types: ["page"], trackEvents: [] } }),
        status.NOT_FOUND,
        'source_id: no source "nope"',
      ],
      [
        "bad source id",
        () => unblockCalls({ sourceId: "a.b", unblock: { types: ["page"], trackEvents: [] } }),
        status.INVALID_ARGUMENT,
        "source_id: must be 1-64 letters, digits, '-' or '_'",
      ],
    ];
    for (const [what, request, code, details] of refused) {
      const failure = await grpcFailure(request());
      expect({ what, code: status[failure.code], details: failure.details }).toEqual({
        what,
        code: status[code],
        details,
      });
    }
    // Adding to what is blocked may not go past the limit either.
    await blockCalls({ sourceId: "web", block: { types: [], trackEvents: Array.from({ length: 600 }, (_, i) => `A${i}`) } });
    const full = await storedSource("web");
    const over = await grpcFailure(
      blockCalls({ sourceId: "web", block: { types: [], trackEvents: Array.from({ length: 600 }, (_, i) => `B${i}`) } }),
    );
    expect(over.details).toBe("block.trackEvents: holds at most 1000 event names");
    expect((await storedSource("web")).revision).toBe(full.revision);
    expect(full.revision).toBe(before.revision + 1);
    await unblockCalls({ sourceId: "web", unblock: { types: ["alias"], trackEvents: Array.from({ length: 600 }, (_, i) => `A${i}`) } });
  });
});

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<CliResult> {
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    SWITCHYARD_DELIVERY_ADDR: `127.0.0.1:${fixture.delivery.grpcPort}`,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

describe("switchyard block / unblock", () => {
  it("block adds types and events, unblock lifts them; both print the source, and config get shows its blocks", async () => {
    const blocked = await cli(["block", "cli", "--type", "page", "--type", "screen", "--event", "Debug Ping", "--event", "Heartbeat"]);
    expect(blocked).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(blocked.stdout).source).toMatchObject({
      id: "cli",
      blocked: { types: ["page", "screen"], trackEvents: ["Debug Ping", "Heartbeat"] },
    });
    expect((await storedSource("cli")).json.blocked).toEqual({ types: ["page", "screen"], trackEvents: ["Debug Ping", "Heartbeat"] });

    const unblocked = await cli(["unblock", "cli", "--type", "screen", "--event", "Heartbeat"]);
    expect(unblocked.code).toBe(0);
    expect(JSON.parse(unblocked.stdout).source.blocked).toEqual({ types: ["page"], trackEvents: ["Debug Ping"] });

    const config = await cli(["config", "get"]);
    expect(config.code).toBe(0);
    const sources = JSON.parse(config.stdout).sources as { id: string; blocked?: unknown }[];
    expect(sources.find((source) => source.id === "cli")?.blocked).toEqual({ types: ["page"], trackEvents: ["Debug Ping"] });

    await cli(["unblock", "cli", "--type", "page", "--event", "Debug Ping"]);
    expect((await storedSource("cli")).json).not.toHaveProperty("blocked");
  });

  it("reports the service's refusal, naming the field and rule, and usage mistakes with exit code 2", async () => {
    const before = await storedSource("cli");
    const bad = await cli(["block", "cli", "--type", "pages"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`switchyard.v1.ConfigService/BlockCalls: INVALID_ARGUMENT: block.types.0: ${TYPES_RULE}`);
    const missing = await cli(["unblock", "nope", "--type", "page"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('NOT_FOUND: source_id: no source "nope"');
    expect((await storedSource("cli")).revision).toBe(before.revision);

    const nothing = await cli(["block", "cli"]);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain("block: give --type or --event, or both");
    const noSource = await cli(["unblock"]);
    expect(noSource.code).toBe(2);
    expect(noSource.stderr).toContain("unblock: which source?");
    const help = await cli(["block", "--help"]);
    expect(help).toMatchObject({ code: 0 });
    expect(help.stdout).toContain("Usage: switchyard block <sourceId>");
  });
});
