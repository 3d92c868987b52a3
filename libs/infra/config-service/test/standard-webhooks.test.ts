import { status } from "@grpc/grpc-js";
import { configApi } from "@switchyard/contracts";
import { kvKeys } from "@switchyard/workspace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configService, grpcFailure as failure, startDeliveryFixture, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

/**
 * The configuration API's side of Standard Webhooks (opt-in, secret placeholder, rotation) and
 * ApplyWorkspace. What the signatures look like on the wire is tested end to end in
 * test/e2e/signatures.test.ts.
 */

const SECRET_A = `whsec_${Buffer.alloc(32, 1).toString("base64")}`;
const SECRET_B = `whsec_${Buffer.alloc(32, 2).toString("base64")}`;
let fixture: DeliveryFixture;

beforeAll(async () => {
  fixture = await startDeliveryFixture({ workspace: { sources: [{ id: "web", writeKeys: ["wk_standard_config_1"] }] } });
});
afterAll(async () => {
  await fixture?.dispose();
});

const api = configService(() => fixture.admin);
const put = (id: string, standardWebhooks?: Partial<configApi.StandardWebhooks>, headers: Record<string, string> = {}) =>
  api.putDestination({
    destination: configApi.Destination.fromPartial({
      id,
      enabled: true,
      webhooks: [{ url: "http://127.0.0.1:9/hook", headers }],
      ...(standardWebhooks ? { standardWebhooks: configApi.StandardWebhooks.fromPartial(standardWebhooks) } : {}),
    }),
  });
const rotate = api.rotateSigningSecret;
const apply = (workspace: unknown) =>
  api.applyWorkspace({ workspaceJson: typeof workspace === "string" ? workspace : JSON.stringify(workspace) });

async function stored(id: string): Promise<any> {
  const entry = await fixture.configKv.get(kvKeys.destination(id));
  return entry?.operation === "PUT" ? entry.json() : undefined;
}

describe("Standard Webhooks settings", () => {
  it("opts in with a secret that reads back as [set]; the placeholder keeps it; leaving it out opts out", async () => {
    const created = await put("sw-1", { signingSecret: SECRET_A });
    expect(created.destination?.standardWebhooks).toEqual({ signingSecret: "[set]", retiringSecretsExpireAt: [] });
    expect((await stored("sw-1")).settings.standardWebhooks).toEqual({ signingSecret: SECRET_A });

    await put("sw-1", { signingSecret: "[set]" });
    expect((await stored("sw-1")).settings.standardWebhooks).toEqual({ signingSecret: SECRET_A });
    await put("sw-1");
    expect((await stored("sw-1")).settings.standardWebhooks).toBeUndefined();
  });

  it("refuses a malformed secret, turning it on without one, and static headers it sets, naming the field", async () => {
    const malformed = await failure(put("sw-2", { signingSecret: "not-a-whsec" }));
    expect(malformed.code).toBe(status.INVALID_ARGUMENT);
    expect(malformed.details).toContain('destination.settings.standardWebhooks.signingSecret: must be "whsec_"');
    const short = await failure(put("sw-2", { signingSecret: `whsec_${Buffer.alloc(16).toString("base64")}` }));
    expect(short.details).toContain("24 to 64 bytes");
    const missing = await failure(put("sw-2", { signingSecret: "" }));
    expect(missing.details).toContain("destination.standard_webhooks.signing_secret: is required");
    const header = await failure(put("sw-2", { signingSecret: SECRET_A }, { "Webhook-Id": "x" }));
    expect(header.details).toContain("destination.settings.webhooks.0.headers.Webhook-Id: this header is set by Standard Webhooks");
    expect(await stored("sw-2")).toBeUndefined();
    // Without the opt-in, such a header is the destination's own business, as before.
    await put("sw-2", undefined, { "Webhook-Id": "x" });
    expect((await stored("sw-2")).settings.webhooks[0].headers).toEqual({ "Webhook-Id": "x" });
  });

  it("rotates: the new secret signs, the old one retires until the grace period ends; the placeholder keeps both", async () => {
    await put("sw-3", { signingSecret: SECRET_A });
    const before = Date.now();
    const rotated = await rotate({ destinationId: "sw-3", signingSecret: SECRET_B, graceSeconds: 600 });
    expect(rotated.signingSecret).toBe(SECRET_B);
    const expiresAt = rotated.previousSecretsExpireAt!.getTime();
    expect(expiresAt).toBeGreaterThanOrEqual(before + 600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000);
    expect(rotated.destination?.standardWebhooks?.retiringSecretsExpireAt).toEqual([new Date(expiresAt)]);
    const settings = (await stored("sw-3")).settings.standardWebhooks;
    expect(settings).toEqual({
      signingSecret: SECRET_B,
      retiringSigningSecrets: [{ secret: SECRET_A, expiresAt: new Date(expiresAt).toISOString() }],
    });

    await put("sw-3", { signingSecret: "[set]" });
    expect((await stored("sw-3")).settings.standardWebhooks).toEqual(settings);

    // A generated secret, and a grace of 0: both older secrets stop at once.
    const generated = await rotate({ destinationId: "sw-3", graceSeconds: 0 });
    expect(generated.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((await stored("sw-3")).settings.standardWebhooks).toEqual({ signingSecret: generated.signingSecret });
  });

  it("refuses rotations it cannot do, naming the field", async () => {
    await put("sw-off");
    await put("sw-4", { signingSecret: SECRET_A });
    expect(await failure(rotate({ destinationId: "nope", graceSeconds: 1 }))).toMatchObject({ code: status.NOT_FOUND });
    expect(await failure(rotate({ destinationId: "sw-off", graceSeconds: 1 }))).toMatchObject({
      code: status.FAILED_PRECONDITION,
      details: expect.stringContaining("destination_id: Standard Webhooks is off"),
    });
    expect(await failure(rotate({ destinationId: "sw-4", graceSeconds: 2_592_001 }))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("grace_seconds: must be 0 to 2592000"),
    });
    expect(await failure(rotate({ destinationId: "sw-4", signingSecret: "whsec_abc" }))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("signing_secret: must be"),
    });
    expect((await stored("sw-4")).settings.standardWebhooks).toEqual({ signingSecret: SECRET_A });
  });
});

describe("ApplyWorkspace", () => {
  const workspace = {
    sources: [{ id: "applied", writeKeys: ["wk_applied_source_01"] }],
    destinations: [{ id: "applied-hook", settings: { webhooks: [{ url: "http://127.0.0.1:9/applied" }], sharedSecret: "s3cret" } }],
    connections: [{ sourceId: "applied", destinationId: "applied-hook" }],
  };

  it("applies a workspace file, and applying it again changes nothing", async () => {
    const first = await apply(workspace);
    expect(first.written.sort()).toEqual(["connection.applied.applied-hook", "destination.applied-hook", "source.applied"]);
    expect(first.unchanged).toEqual([]);
    expect((await stored("applied-hook")).settings.sharedSecret).toBe("s3cret");
    const second = await apply(workspace);
    expect(second).toEqual({ written: [], unchanged: expect.arrayContaining(first.written) });
  });

  it("refuses an invalid file as a whole, naming each problem, and bad JSON", async () => {
    const invalid = await failure(
      apply({
        ...workspace,
        destinations: [{ id: "bad one", settings: { webhooks: [] } }],
        connections: [{ sourceId: "applied", destinationId: "x" }],
      }),
    );
    expect(invalid.code).toBe(status.INVALID_ARGUMENT);
    expect(invalid.details).toContain("workspace_json.destinations.0.id: must be 1-64 letters");
    expect(invalid.details).toContain("workspace_json.destinations.0.settings.webhooks: needs 1 to 5 webhook entries");
    expect(invalid.details).toContain('workspace_json.connections.0.destinationId: no destination "x" in this file');
    expect(await failure(apply("{nope"))).toMatchObject({ code: status.INVALID_ARGUMENT, details: "workspace_json: is not valid JSON" });
  });
});
