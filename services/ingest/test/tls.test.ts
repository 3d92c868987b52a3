import { mkdtemp, rm } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, Metadata, status, type ChannelCredentials } from "@grpc/grpc-js";
import { IngestServiceClient } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { loadServerTls } from "@switchyard/platform";
import { makeSelfSignedCertificate, signedUpCall, type SelfSignedCertificate } from "@switchyard/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

/**
 * Ingest's gRPC and HTTP servers with TLS from SWITCHYARD_TLS_CERT_FILE and
 * SWITCHYARD_TLS_KEY_FILE (and client certificates with
 * SWITCHYARD_TLS_CLIENT_CA_FILE), using certificates made for this run.
 * Delivery and audience-sync serve gRPC through the same startGrpcServer.
 */

let dir: string;
let server: SelfSignedCertificate;
let client: SelfSignedCertificate;
let fixture: IngestFixture | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-server-tls-"));
  server = await makeSelfSignedCertificate(dir);
  client = await makeSelfSignedCertificate(dir, { name: "client", commonName: "switchyard-test-client", subjectAltName: "DNS:client" });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await fixture?.dispose();
  fixture = undefined;
});

const tlsEnv = () => ({ SWITCHYARD_TLS_CERT_FILE: server.certPath, SWITCHYARD_TLS_KEY_FILE: server.keyPath });

const call = signedUpCall("m-tls");

/** One IngestCall with the given channel credentials: the gRPC status code it ended with. */
function grpcCall(port: number, channel: ChannelCredentials): Promise<number> {
  // A host name, as certificates name servers: grpc-js would send an IP address as the TLS server
  // name (SNI), which RFC 6066 forbids and Node warns about (DEP0123).
  const ingest = new IngestServiceClient(`localhost:${port}`, channel);
  const metadata = new Metadata();
  metadata.set("authorization", basicAuthorization(WRITE_KEY));
  return new Promise((resolve) =>
    ingest.ingestCall({ call }, metadata, { deadline: Date.now() + 5_000 }, (error) => {
      ingest.close();
      resolve(error?.code ?? status.OK);
    }),
  );
}

/** POST /v1/track over HTTPS: the status, or the error's code when the TLS handshake or connection failed. */
function httpsTrack(port: number, options: { ca?: string; cert?: string; key?: string }): Promise<number | string> {
  const body = JSON.stringify({ userId: "user-1", event: "Signed Up", messageId: "m-https" });
  return new Promise((resolve) => {
    const request = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        path: "/v1/track",
        method: "POST",
        headers: { authorization: basicAuthorization(WRITE_KEY), "content-type": "application/json" },
        agent: false,
        ...options,
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    request.end(body);
  });
}

describe("TLS on ingest's servers", () => {
  it("serves gRPC and HTTP over TLS: a client that trusts the CA gets in, plaintext and untrusting clients do not", async () => {
    const f = (fixture = await startIngestFixture({ env: tlsEnv() }));
    expect(await grpcCall(f.ingest.grpcPort, credentials.createSsl(Buffer.from(server.cert)))).toBe(status.OK);
    expect(await grpcCall(f.ingest.grpcPort, credentials.createInsecure())).toBe(status.UNAVAILABLE);
    // Default trust store: the self-signed certificate is not trusted.
    expect(await grpcCall(f.ingest.grpcPort, credentials.createSsl())).toBe(status.UNAVAILABLE);

    expect(await httpsTrack(f.ingest.httpPort, { ca: server.cert })).toBe(200);
    expect(await httpsTrack(f.ingest.httpPort, {})).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
    const plain = await fetch(`http://127.0.0.1:${f.ingest.httpPort}/v1/track`, { method: "POST", body: "{}" }).then(
      (response) => response.status,
      () => "refused",
    );
    expect(plain).not.toBe(200);
  });

  it("with SWITCHYARD_TLS_CLIENT_CA_FILE, requires a client certificate signed by that CA", async () => {
    const f = (fixture = await startIngestFixture({ env: { ...tlsEnv(), SWITCHYARD_TLS_CLIENT_CA_FILE: client.certPath } }));
    const ca = Buffer.from(server.cert);
    expect(await grpcCall(f.ingest.grpcPort, credentials.createSsl(ca, Buffer.from(client.key), Buffer.from(client.cert)))).toBe(status.OK);
    expect(await grpcCall(f.ingest.grpcPort, credentials.createSsl(ca))).toBe(status.UNAVAILABLE);
    // The server's own certificate is not signed by the client CA.
    expect(await grpcCall(f.ingest.grpcPort, credentials.createSsl(ca, Buffer.from(server.key), Buffer.from(server.cert)))).toBe(
      status.UNAVAILABLE,
    );

    expect(await httpsTrack(f.ingest.httpPort, { ca: server.cert, cert: client.cert, key: client.key })).toBe(200);
    expect(await httpsTrack(f.ingest.httpPort, { ca: server.cert })).not.toBe(200);
  });

  it("refuses half a TLS setting or an unreadable file, naming the variable (start-up stops on it)", async () => {
    await expect(loadServerTls({ SWITCHYARD_TLS_CERT_FILE: server.certPath })).rejects.toThrow(
      "SWITCHYARD_TLS_KEY_FILE: must be set when SWITCHYARD_TLS_CERT_FILE is",
    );
    await expect(loadServerTls({ SWITCHYARD_TLS_KEY_FILE: server.keyPath })).rejects.toThrow(
      "SWITCHYARD_TLS_CERT_FILE: must be set when SWITCHYARD_TLS_KEY_FILE is",
    );
    await expect(loadServerTls({ SWITCHYARD_TLS_CLIENT_CA_FILE: client.certPath })).rejects.toThrow(
      "SWITCHYARD_TLS_CLIENT_CA_FILE: needs SWITCHYARD_TLS_CERT_FILE and SWITCHYARD_TLS_KEY_FILE",
    );
    await expect(loadServerTls({ ...tlsEnv(), SWITCHYARD_TLS_KEY_FILE: join(dir, "missing.pem") })).rejects.toThrow(
      /^SWITCHYARD_TLS_KEY_FILE: cannot read .*missing\.pem$/,
    );
    await expect(loadServerTls({ ...tlsEnv(), SWITCHYARD_TLS_KEY_FILE: server.certPath })).rejects.toThrow(
      /^SWITCHYARD_TLS_KEY_FILE: .* holds no PEM private key$/,
    );
    expect(await loadServerTls({})).toBeUndefined();
  });
});
