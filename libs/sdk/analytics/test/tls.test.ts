import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeSelfSignedCertificate, type SelfSignedCertificate } from "@switchyard/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";
import { Analytics, type FailedEvent } from "../src/index.js";
import { expectStoredOnce } from "./support.js";

/**
 * Ingest serving gRPC over TLS with a certificate made for this run, and client certificates required.
 * The client connects to `localhost`, a host name as certificates name servers: with an IP address,
 * grpc-js sends it as the TLS server name (SNI), which RFC 6066 forbids and Node warns about (DEP0123).
 */
const tlsWarnings: string[] = [];
const onWarning = (warning: Error & { code?: string }) => {
  if (warning.code === "DEP0123") tlsWarnings.push(warning.message);
};
process.on("warning", onWarning);
let dir: string;
let server: SelfSignedCertificate;
let client: SelfSignedCertificate;
let fixture: IngestFixture;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-analytics-tls-"));
  server = await makeSelfSignedCertificate(dir);
  client = await makeSelfSignedCertificate(dir, { name: "client", commonName: "analytics-test-client", subjectAltName: "DNS:client" });
  fixture = await startIngestFixture({
    env: {
      SWITCHYARD_TLS_CERT_FILE: server.certPath,
      SWITCHYARD_TLS_KEY_FILE: server.keyPath,
      SWITCHYARD_TLS_CLIENT_CA_FILE: client.certPath,
    },
  });
});

afterAll(async () => {
  process.off("warning", onWarning);
  expect(tlsWarnings).toEqual([]);
  await fixture.dispose();
  await rm(dir, { recursive: true, force: true });
});

it("delivers over TLS to a server its rootCerts trust, with a client certificate", async () => {
  const analytics = new Analytics(WRITE_KEY, {
    endpoint: `grpcs://localhost:${fixture.ingest.grpcPort}`,
    tls: { rootCerts: server.cert, certChain: client.cert, privateKey: client.key },
  });
  const id = analytics.track({ userId: "u", event: "Over TLS" });
  const result = await analytics.close();
  expect(result).toEqual({ delivered: [id], notDelivered: [] });
  await expectStoredOnce(fixture, [id]);
});

it("sends nothing to a server whose certificate it does not trust, and says so", async () => {
  const analytics = new Analytics(WRITE_KEY, {
    endpoint: `grpcs://localhost:${fixture.ingest.grpcPort}`,
    retry: { initialDelayMs: 10, maxDelayMs: 20, maxElapsedMs: 200 },
  });
  const failed: FailedEvent[] = [];
  analytics.on("failed", (event) => failed.push(event));
  const id = analytics.track({ userId: "u", event: "Untrusted" });
  await analytics.flush();
  expect(failed).toEqual([
    { batchId: expect.any(String), messageIds: [id], reason: expect.objectContaining({ kind: "retries_exhausted", code: "UNAVAILABLE" }) },
  ]);
  await analytics.close();
});
