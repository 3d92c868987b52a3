import http2 from "node:http2";

/**
 * A minimal gRPC client for unary calls whose requests are already encoded:
 * gRPC over HTTP/2 as the protocol defines it (a POST to /package.Service/
 * Method, `content-type: application/grpc`, `te: trailers`, each message
 * framed by a 5-byte prefix, the outcome in the `grpc-status` trailer), on
 * node:http2 directly.
 *
 * Why not grpc-js: the throughput benchmarks run their clients on the machine
 * being measured, where every microsecond a client spends is taken from the
 * service. grpc-js spends much more CPU per request than this client (call
 * objects, interceptors, metadata, deadlines), which on a small machine is
 * taken from ingest's measured rate. Production clients run elsewhere.
 */
export class GrpcHttp2Sender {
  private constructor(
    private readonly session: http2.ClientHttp2Session,
    private readonly headers: http2.OutgoingHttpHeaders,
  ) {}

  /** Connects to a plaintext gRPC server; `metadata` goes out with every call (e.g. authorization). */
  static async connect(address: string, path: string, metadata: Record<string, string>): Promise<GrpcHttp2Sender> {
    const session = http2.connect(`http://${address}`);
    await new Promise<void>((resolve, reject) => {
      session.once("connect", () => resolve());
      session.once("error", reject);
    });
    session.on("error", () => {}); // a failed call reports it; the session's own error would be unhandled
    return new GrpcHttp2Sender(session, {
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...metadata,
    });
  }

  /** A gRPC message: the 5-byte prefix (not compressed, length) and the encoded request. */
  static frame(encoded: Uint8Array): Buffer {
    const framed = Buffer.allocUnsafe(5 + encoded.length);
    framed[0] = 0;
    framed.writeUInt32BE(encoded.length, 1);
    framed.set(encoded, 5);
    return framed;
  }

  /** Sends one framed request; resolves with the response message's bytes, rejects unless grpc-status is 0. */
  call(framedRequest: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const stream = this.session.request(this.headers);
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message = "";
      const readStatus = (fields: http2.IncomingHttpHeaders) => {
        if (fields["grpc-status"] !== undefined) status = String(fields["grpc-status"]);
        if (fields["grpc-message"] !== undefined) message = decodeURIComponent(String(fields["grpc-message"]));
      };
      stream.on("response", readStatus); // a trailers-only answer (an error) carries its status here
      stream.on("trailers", readStatus);
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", reject);
      stream.on("end", () => {
        if (status !== "0") {
          reject(new Error(`gRPC status ${status ?? "missing"}: ${message}`));
          return;
        }
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        resolve(body.subarray(5, 5 + body.readUInt32BE(1)));
      });
      stream.end(framedRequest);
    });
  }

  close(): void {
    this.session.close();
  }
}
