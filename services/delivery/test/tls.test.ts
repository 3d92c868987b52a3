import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeSelfSignedCertificate, waitFor, type WebhookReceiver, type SelfSignedCertificate } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, webSourceTo, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

let certDir: string;
let certificate: SelfSignedCertificate;

beforeAll(async () => {
  certDir = await mkdtemp(join(tmpdir(), "switchyard-tls-"));
  certificate = await makeSelfSignedCertificate(certDir);
});
afterAll(async () => {
  await rm(certDir, { recursive: true, force: true });
});

const scope = deliveryPerTest();

/** An HTTPS receiver presenting the self-signed certificate, and delivery with one destination, "hook", pointing at it. */
async function startHttpsReceiverAndDelivery(env: Record<string, string> = {}): Promise<{ f: DeliveryFixture; https: WebhookReceiver }> {
  const https = await scope.receiver(undefined, { tls: { key: certificate.key, cert: certificate.cert } });
  const f = await scope.start({ workspace: webSourceTo("wk_tls_test_000001", { hook: https.url() }), env });
  return { f, https };
}

describe("TLS certificate verification", () => {
  it("sends nothing to a receiver with a self-signed certificate, does not retry, and logs the certificate reason", async () => {
    const { f, https } = await startHttpsReceiverAndDelivery();
    expect(https.url()).toMatch(/^https:/);
    await f.publishCalls("web", [busCall("m-untrusted", trackPayload())]);

    const entries = await waitFor("a dead letter", async () => {
      const list = (await f.admin.listDeadLetters({ destinationId: "hook" })).entries;
      return list.length > 0 ? list : undefined;
    });
    await f.settled();

    // One TLS handshake was tried and failed before any HTTP request was sent; none was tried again.
    expect(https.connections).toBe(1);
    expect(https.requests).toHaveLength(0);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.deadLetter).toMatchObject({ reason: "permanent_failure", attempts: 1 });

    const logged = await f.admin.loggedAttempts({ destinationId: "hook", messageId: "m-untrusted" }, 2);
    // Newest first: the dead letter, then the failed request.
    expect(logged.map((attempt) => [attempt.attempt, attempt.outcome])).toEqual([
      [1, "dead_lettered"],
      [1, "permanent"],
    ]);
    const failure = logged[1]!;
    expect(failure.status).toBe(0);
    expect(failure.url).toBe(https.url());
    expect(failure.error).toMatch(/^TLS certificate: /);
    expect(failure.error).toMatch(/self-signed/);
  });

  it("delivers to the same kind of receiver once its certificate is trusted via DELIVERY_EXTRA_CA_FILE", async () => {
    const { f, https } = await startHttpsReceiverAndDelivery({ DELIVERY_EXTRA_CA_FILE: certificate.certPath });
    await f.publishCalls("web", [busCall("m-trusted", trackPayload())]);

    await waitFor("the delivery over HTTPS", () => https.requests.length === 1);
    await f.settled();

    expect(https.byMessageId("m-trusted")).toHaveLength(1);
    expect(https.requests[0]!.headers["user-agent"]).toBe("Switchyard/1.0");
    // Once the delivered attempt is listed, so is any failure of the destination before it.
    await f.admin.loggedAttempts({ destinationId: "hook", messageId: "m-trusted", outcomes: ["delivered"] }, 1);
    expect(
      (await f.admin.listDeliveryAttempts({ destinationId: "hook", outcomes: ["retryable", "permanent", "dead_lettered"] })).attempts,
    ).toEqual([]);
    expect((await f.admin.listDeadLetters({ destinationId: "hook" })).entries).toEqual([]);
  });
});
