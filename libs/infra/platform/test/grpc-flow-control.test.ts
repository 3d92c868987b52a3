import { mkdtemp, rm } from "node:fs/promises";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeSelfSignedCertificate, waitFor } from "@switchyard/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { CONNECTION_WINDOW_BYTES, STREAM_WINDOW_BYTES } from "../src/grpc-flow-control.js";
import { createLogger, startGrpcServer, type GrpcServerHandle, type ServerTls } from "../src/index.js";

/**
 * The windows are set through grpc-js internals (grpc-flow-control.ts), so
 * this holds the pinned grpc-js to them: a plain HTTP/2 client must see both
 * on a fresh connection, over plaintext and over TLS.
 */
describe("gRPC servers' HTTP/2 flow-control windows", () => {
  let server: GrpcServerHandle | undefined;
  let session: http2.ClientHttp2Session | undefined;
  let certificateDir: string | undefined;

  afterEach(async () => {
    session?.close();
    await server?.shutdown(1_000);
    if (certificateDir) await rm(certificateDir, { recursive: true, force: true });
  });

  it.each(["plaintext", "TLS"])(
    "let a client send a whole large batch, and several at once, without waiting for a WINDOW_UPDATE (%s)",
    async (transport) => {
      let tls: ServerTls | undefined;
      let ca: string | undefined;
      if (transport === "TLS") {
        certificateDir = await mkdtemp(join(tmpdir(), "switchyard-flow-"));
        const certificate = await makeSelfSignedCertificate(certificateDir);
        tls = { cert: Buffer.from(certificate.cert), key: Buffer.from(certificate.key) };
        ca = certificate.cert;
      }
      const logger = createLogger({ service: "test", level: "silent" });
      server = await startGrpcServer({ host: "127.0.0.1", port: 0, services: [], logger, tls });
      const client = http2.connect(`${tls ? "https" : "http"}://127.0.0.1:${server.port}`, ca ? { ca } : {});
      session = client;
      await new Promise<void>((resolve, reject) => {
        client.once("remoteSettings", () => resolve());
        client.once("error", reject);
      });
      expect(client.remoteSettings.initialWindowSize).toBe(STREAM_WINDOW_BYTES);
      // The connection window comes in a WINDOW_UPDATE right after the SETTINGS.
      await waitFor("the connection window to reach its size", () => client.state.remoteWindowSize === CONNECTION_WINDOW_BYTES, {
        timeoutMs: 5_000,
      });
    },
  );
});
