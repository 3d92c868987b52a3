import { createHmac } from "node:crypto";
import { configApi } from "@switchyard/contracts";
import { waitFor, type ReceivedRequest, type WebhookReceiver } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import {
  busCall,
  configService,
  deliveryPerTest,
  trackPayload,
  webSourceTo,
  type DeliveryFixture,
} from "@switchyard/testkit/fixtures/delivery";

/**
 * Changes to a destination made through the configuration API while the
 * delivery service runs: each must take effect without a restart. The
 * service learns of a change through a KV watch, so each test first polls
 * with probe calls until one shows the change, then checks a whole batch.
 */

const OLD_SECRET = "old-shared-secret-1";
const NEW_SECRET = "new-shared-secret-2";
const BATCH_SIZE = 5;

const scope = deliveryPerTest();
let callCounter = 0;

function startReceivers(count: number): Promise<WebhookReceiver[]> {
  return Promise.all(Array.from({ length: count }, () => scope.receiver()));
}

/**
 * Source "web" connected to "hook" (the destination the tests change) and to
 * "witness" (never changed), so every call also proves it was processed.
 */
function startDelivery(hook: { url: string; sharedSecret?: string }, witness: WebhookReceiver): Promise<DeliveryFixture> {
  return scope.start({
    workspace: webSourceTo("wk_config_change_01", {
      hook: { webhooks: [{ url: hook.url }], ...(hook.sharedSecret ? { sharedSecret: hook.sharedSecret } : {}) },
      witness: witness.url(),
    }),
  });
}

/** Stores the "hook" destination through the ConfigService gRPC API, as an operator would. */
async function putHook(f: DeliveryFixture, hook: { url: string; sharedSecret?: string; enabled: boolean }): Promise<void> {
  await configService(() => f.admin).putDestination({
    destination: configApi.Destination.fromPartial({
      id: "hook",
      enabled: hook.enabled,
      webhooks: [{ url: hook.url, headers: {} }],
      sharedSecret: hook.sharedSecret ?? "",
    }),
  });
}

/** Publishes calls in one batch and waits until that batch (and any retry) is fully settled. */
async function publishSettled(f: DeliveryFixture, prefix: string, count: number): Promise<string[]> {
  const messageIds = Array.from({ length: count }, () => `${prefix}-${++callCounter}`);
  await f.publishCalls(
    "web",
    messageIds.map((messageId) => busCall(messageId, trackPayload())),
  );
  await f.settled();
  return messageIds;
}

/** Publishes one probe call at a time until `changed(probeId)` holds once the probe is settled. */
async function probeUntil(f: DeliveryFixture, change: string, changed: (probeId: string) => boolean): Promise<void> {
  await waitFor(
    `the service to apply: ${change}`,
    async () => {
      const [probeId] = await publishSettled(f, "probe", 1);
      return changed(probeId!);
    },
    { timeoutMs: 15_000, intervalMs: 50 },
  );
}

function signedWith(request: ReceivedRequest, secret: string): boolean {
  return request.headers["x-signature"] === createHmac("sha1", secret).update(request.raw).digest("hex");
}

describe("destination changes while the service runs", () => {
  it("a new URL: the second receiver starts getting the calls, the first no longer does", async () => {
    const [first, second, witness] = await startReceivers(3);
    const f = await startDelivery({ url: first!.url() }, witness!);
    const before = await publishSettled(f, "before", 1);
    expect(first!.byMessageId(before[0]!)).toHaveLength(1);

    await putHook(f, { url: second!.url(), enabled: true });
    await probeUntil(f, "the new URL", (probeId) => second!.byMessageId(probeId).length === 1);

    const firstCountAfterChange = first!.requests.length;
    const after = await publishSettled(f, "after", BATCH_SIZE);
    for (const messageId of after) expect(second!.byMessageId(messageId)).toHaveLength(1);
    expect(first!.requests.length).toBe(firstCountAfterChange);
    for (const messageId of after) expect(witness!.byMessageId(messageId)).toHaveLength(1);
  });

  it("a new shared secret: X-Signature verifies with the new secret, not the old", async () => {
    const [hook, witness] = await startReceivers(2);
    const f = await startDelivery({ url: hook!.url(), sharedSecret: OLD_SECRET }, witness!);
    const before = await publishSettled(f, "before", 1);
    expect(signedWith(hook!.byMessageId(before[0]!)[0]!, OLD_SECRET)).toBe(true);

    await putHook(f, { url: hook!.url(), sharedSecret: NEW_SECRET, enabled: true });
    await probeUntil(f, "the new secret", (probeId) => hook!.byMessageId(probeId).some((r) => signedWith(r, NEW_SECRET)));

    const after = await publishSettled(f, "after", BATCH_SIZE);
    for (const messageId of after) {
      const [request] = hook!.byMessageId(messageId);
      expect(request, messageId).toBeDefined();
      expect(signedWith(request!, NEW_SECRET)).toBe(true);
      expect(signedWith(request!, OLD_SECRET)).toBe(false);
    }
  });

  it("disabled: calls no longer reach it while another destination still gets them; re-enabled: they do again", async () => {
    const [hook, witness] = await startReceivers(2);
    const f = await startDelivery({ url: hook!.url() }, witness!);

    await putHook(f, { url: hook!.url(), enabled: false });
    // A probe is settled, and the witness got it from the same batch, yet the hook did not: it is disabled.
    await probeUntil(f, "disabling", (probeId) => witness!.byMessageId(probeId).length === 1 && hook!.byMessageId(probeId).length === 0);
    const whileDisabled = await publishSettled(f, "disabled", BATCH_SIZE);
    for (const messageId of whileDisabled) {
      expect(witness!.byMessageId(messageId)).toHaveLength(1);
      expect(hook!.byMessageId(messageId)).toHaveLength(0);
    }

    await putHook(f, { url: hook!.url(), enabled: true });
    await probeUntil(f, "re-enabling", (probeId) => hook!.byMessageId(probeId).length === 1);
    const afterReEnabling = await publishSettled(f, "enabled", BATCH_SIZE);
    for (const messageId of afterReEnabling) expect(hook!.byMessageId(messageId)).toHaveLength(1);
    // Calls accepted while it was disabled are not sent later: disabling skips them, it does not queue them.
    for (const messageId of whileDisabled) expect(hook!.byMessageId(messageId)).toHaveLength(0);
    expect((await f.admin.listDeadLetters({ destinationId: "hook" })).entries).toEqual([]);
  });
});
