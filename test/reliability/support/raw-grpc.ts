import { Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";

export type RawOutcome = { ok: true; response: Buffer } | { ok: false; error: ServiceError };

/**
 * A gRPC client that sends any bytes as a unary call's request message, what
 * only a client writing its own protobuf (or garbage) can send.
 */
export class RawGrpcClient {
  private readonly client: Client;

  constructor(
    target: string,
    private readonly authorization: string,
  ) {
    this.client = new Client(target, credentials.createInsecure());
  }

  send(path: string, request: Uint8Array): Promise<RawOutcome> {
    const metadata = new Metadata();
    metadata.set("authorization", this.authorization);
    return new Promise((resolve) =>
      this.client.makeUnaryRequest(
        path,
        (bytes: Uint8Array) => Buffer.from(bytes),
        (bytes: Buffer) => bytes,
        request,
        metadata,
        { deadline: Date.now() + 15_000 },
        (error, response) => resolve(error ? { ok: false, error } : { ok: true, response: response ?? Buffer.alloc(0) }),
      ),
    );
  }

  close(): void {
    this.client.close();
  }
}
