import { Call, configApi } from "@switchyard/contracts";
import { WebhookReceiver, waitFor, type ReceivedRequest } from "@switchyard/testkit";
import { generateSigningSecret, verifyStandardWebhook, verifyXSignature } from "@switchyard/webhook-verify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminClients, FAST_RETRY_ENV } from "@switchyard/testkit/fixtures/delivery";
import { startStack, type Stack } from "../helpers/stack.js";

/**
 * Signatures made by the real pipeline (gRPC ingest -> JetStream -> delivery -> HTTP receiver),
 * checked with the receiver library @switchyard/webhook-verify: X-Signature, Standard Webhooks,
 * the same webhook-id across retries, and a signing secret rotation through the ConfigService
 * (during the grace period old and new secret both verify; after it only the new one).
 */

const WRITE_KEY = "wk_e2e_signatures_0001";
const ADMIN_TOKEN = "e2e-signatures-admin-token-01";
const SHARED_SECRET = "e2e-x-signature-secret";
const FIRST_SECRET = generateSigningSecret();
const SECOND_SECRET = generateSigningSecret();

let stack: Stack;
let receiver: WebhookReceiver;
let admin: AdminClients;
let counter = 0;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  const destination = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    settings: { webhooks: [{ url: receiver.url(`/${id}`) }], sharedSecret: SHARED_SECRET, ...extra },
  });
  stack = await startStack({
    workspace: {
      sources: [{ id: "backend", writeKeys: [WRITE_KEY] }],
      destinations: [
        destination("plain"),
        destination("standard", { standardWebhooks: { signingSecret: FIRST_SECRET } }),
        destination("short-grace", { standardWebhooks: { signingSecret: FIRST_SECRET } }),
      ],
      connections: ["plain", "standard", "short-grace"].map((destinationId) => ({ sourceId: "backend", destinationId })),
    },
    deliveryEnv: { SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN, ...FAST_RETRY_ENV },
  });
  admin = new AdminClients(`127.0.0.1:${stack.delivery.grpcPort}`);
});
afterAll(async () => {
  admin?.close();
  await stack?.dispose();
  await receiver?.close();
});

async function send(): Promise<string> {
  const messageId = `sig-${++counter}`;
  await stack.grpc.ingestCall(
    {
      call: Call.fromPartial({
        messageId,
        userId: "u-1",
        payload: { $case: "track", value: { event: "Signed", properties: { n: counter } } },
      }),
    },
    WRITE_KEY,
  );
  return messageId;
}

/** The successful (last) request for a message at one destination. */
async function arrived(messageId: string, destinationId: string): Promise<ReceivedRequest> {
  return waitFor(`${messageId} at ${destinationId}`, () =>
    receiver.requests.findLast((request) => request.path === `/${destinationId}` && request.json?.messageId === messageId),
  );
}

function signatureEntries(request: ReceivedRequest): string[] {
  return String(request.headers["webhook-signature"]).split(" ");
}

async function rotate(destinationId: string, signingSecret: string, graceSeconds: number) {
  return admin.call<configApi.RotateSigningSecretRequest, configApi.RotateSigningSecretResponse>(
    admin.config,
    "rotateSigningSecret",
    configApi.RotateSigningSecretRequest,
    { destinationId, signingSecret, graceSeconds },
    ADMIN_TOKEN,
  );
}

describe("signatures from the delivery service, verified by @switchyard/webhook-verify", () => {
  it("X-Signature verifies over the raw body; destinations that did not opt in get no Standard Webhooks headers", async () => {
    const messageId = await send();
    const request = await arrived(messageId, "plain");
    expect(verifyXSignature(request.raw, request.headers["x-signature"], SHARED_SECRET)).toBe(true);
    expect(verifyXSignature(request.raw, request.headers["x-signature"], "another-secret")).toBe(false);
    expect(verifyXSignature(Buffer.concat([request.raw, Buffer.from(" ")]), request.headers["x-signature"], SHARED_SECRET)).toBe(false);
    expect(Object.keys(request.headers).filter((name) => name.startsWith("webhook-"))).toEqual([]);
  });

  it("Standard Webhooks headers verify, next to a valid X-Signature; webhook-id is the messageId on every retry", async () => {
    const failedOnce = new Set<string>();
    receiver.respond((request) => {
      if (request.path !== "/standard" || failedOnce.has(request.json?.messageId)) return { status: 200 };
      failedOnce.add(request.json?.messageId);
      return { status: 503 };
    });
    const messageId = await send();
    const attempts = await waitFor("a retry after the 503", () => {
      const found = receiver.requests.filter((request) => request.path === "/standard" && request.json?.messageId === messageId);
      return found.length >= 2 ? found : undefined;
    });
    receiver.respond(() => ({ status: 200 }));

    for (const request of attempts) {
      expect(request.headers["webhook-id"]).toBe(messageId);
      expect(request.headers["webhook-timestamp"]).toMatch(/^\d+$/);
      expect(Math.abs(Number(request.headers["webhook-timestamp"]) - request.receivedAt / 1000)).toBeLessThan(5);
      expect(signatureEntries(request)).toHaveLength(1);
      expect(verifyStandardWebhook(request.raw, request.headers, FIRST_SECRET)).toEqual({
        valid: true,
        id: messageId,
        timestamp: Number(request.headers["webhook-timestamp"]),
      });
      expect(verifyStandardWebhook(request.raw, request.headers, SECOND_SECRET)).toMatchObject({
        valid: false,
        reason: "no_matching_signature",
      });
      expect(verifyXSignature(request.raw, request.headers["x-signature"], SHARED_SECRET)).toBe(true);
    }
  });

  it("after a rotation both secrets sign during the grace period, and only the new one after it", async () => {
    // "standard": a long grace period, to see both secrets at work.
    const longGrace = await rotate("standard", SECOND_SECRET, 3600);
    expect(longGrace.signingSecret).toBe(SECOND_SECRET);
    expect(longGrace.destination?.standardWebhooks?.signingSecret).toBe("[set]");
    expect(longGrace.destination?.standardWebhooks?.retiringSecretsExpireAt).toEqual([longGrace.previousSecretsExpireAt]);
    // Delivery learns of the change through its KV watch: probe until a request shows it.
    const during = await waitFor("a request signed with both secrets", async () => {
      const request = await arrived(await send(), "standard");
      return signatureEntries(request).length === 2 ? request : undefined;
    });
    expect(verifyStandardWebhook(during.raw, during.headers, SECOND_SECRET).valid).toBe(true);
    expect(verifyStandardWebhook(during.raw, during.headers, FIRST_SECRET).valid).toBe(true);
    expect(verifyStandardWebhook(during.raw, during.headers, generateSigningSecret()).valid).toBe(false);

    // "short-grace": the previous secret stops signing when its grace period ends.
    const shortGrace = await rotate("short-grace", SECOND_SECRET, 1);
    const graceEnd = shortGrace.previousSecretsExpireAt!.getTime();
    await waitFor("the grace period to end", () => Date.now() > graceEnd);
    const after = await arrived(await send(), "short-grace");
    expect(Number(after.headers["webhook-timestamp"]) * 1000).toBeGreaterThanOrEqual(graceEnd - 1000);
    expect(signatureEntries(after)).toHaveLength(1);
    expect(verifyStandardWebhook(after.raw, after.headers, SECOND_SECRET).valid).toBe(true);
    expect(verifyStandardWebhook(after.raw, after.headers, FIRST_SECRET)).toMatchObject({ valid: false, reason: "no_matching_signature" });
    // X-Signature is not part of the rotation: same shared secret throughout.
    expect(verifyXSignature(after.raw, after.headers["x-signature"], SHARED_SECRET)).toBe(true);
  });
});
