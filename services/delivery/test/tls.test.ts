import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { WebhookReceiver, waitFor } from "@switchyard/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { busCall, startDeliveryFixture, trackPayload, type DeliveryFixture } from "./delivery-fixture.js";

/** A self-signed certificate for 127.0.0.1, made for this test run with the openssl CLI. */
interface SelfSignedCertificate {
  key: string;
  cert: string;
  certPath: string;
}

let certDir: string;
let certificate: SelfSignedCertificate;
let fixture: DeliveryFixture | undefined;
let receiver: WebhookReceiver | undefined;

beforeAll(async () => {
  certDir = await mkdtemp(join(tmpdir(), "switchyard-tls-"));
  certificate = await makeSelfSignedCertificate(certDir);
});
afterAll(async () => {
  await rm(certDir, { recursive: true, force: true });
});
afterEach(async () => {
  await fixture?.dispose();
  fixture = undefined;
  await receiver?.close();
  receiver = undefined;
});

async function makeSelfSignedCertificate(dir: string): Promise<SelfSignedCertificate> {
  const keyPath = join(dir, "key.pem");
  const certPath = join(dir, "cert.pem");
  // prettier-ignore
  await promisify(execFile)("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", keyPath, "-out", certPath, "-days", "1",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
  ]);
  return { key: await readFile(keyPath, "utf8"), cert: await readFile(certPath, "utf8"), certPath };
}

/** An HTTPS receiver presenting the self-signed certificate, and delivery with one destination, "hook", pointing at it. */
async function startHttpsReceiverAndDelivery(env: Record<string, string> = {}): Promise<{ f: DeliveryFixture; https: WebhookReceiver }> {
  receiver = await WebhookReceiver.start({ tls: { key: certificate.key, cert: certificate.cert } });
  fixture = await startDeliveryFixture({
    workspace: {
      sources: [{ id: "web", writeKeys: ["wk_tls_test_000001"] }],
      destinations: [{ id: "hook", settings: { webhooks: [{ url: receiver.url() }] } }],
      connections: [{ sourceId: "web", destinationId: "hook" }],
    },
    env,
  });
  return { f: fixture, https: receiver };
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

    const logged = (await f.admin.listDeliveryAttempts({ destinationId: "hook", messageId: "m-untrusted" })).attempts;
    expect(logged.map((attempt) => [attempt.attempt, attempt.outcome])).toEqual([
      [1, "permanent"],
      [1, "dead_lettered"],
    ]);
    const failure = logged[0]!;
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
    expect((await f.admin.listDeliveryAttempts({ destinationId: "hook" })).attempts).toEqual([]);
    expect((await f.admin.listDeadLetters({ destinationId: "hook" })).entries).toEqual([]);
  });
});
