import http2 from "node:http2";
import { waitFor } from "@switchyard/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { CONNECTION_WINDOW_BYTES, STREAM_WINDOW_BYTES } from "../src/grpc-flow-control.js";
import { createLogger, startGrpcServer, type GrpcServerHandle } from "../src/index.js";

/**
 * The windows are set through grpc-js internals (grpc-flow-control.ts), so
 * this holds the pinned grpc-js to them: a plain HTTP/2 client must see both
 * on a fresh connection.
 */
describe("gRPC servers' HTTP/2 flow-control windows", () => {
  let server: GrpcServerHandle | undefined;
  let session: http2.ClientHttp2Session | undefined;

  afterEach(async () => {
    session?.close();
    await server?.shutdown(1_000);
  });

  it("lets a client send a whole large batch, and several at once, without waiting for a WINDOW_UPDATE", async () => {
    server = await startGrpcServer({
      host: "127.0.0.1",
      port: 0,
      services: [],
      logger: createLogger({ service: "test", level: "silent" }),
    });
    const client = http2.connect(`http://127.0.0.1:${server.port}`);
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
  });
});
