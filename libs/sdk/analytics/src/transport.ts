import { Client, credentials, Metadata, status, type ClientUnaryCall, type ServiceError } from "@grpc/grpc-js";
import { IngestServiceService, type IngestBatchResponse } from "@switchyard/contracts";
import type { ResolvedOptions } from "./options.js";

const INGEST_BATCH = IngestServiceService.ingestBatch;

/**
 * Sends encoded IngestBatchRequests over one gRPC channel. The request bytes
 * are built by the client (queue.ts), so they are passed through as they are;
 * the answer is decoded by the generated code of @switchyard/contracts.
 */
export class IngestTransport {
  private readonly client: Client;
  private readonly metadata: Metadata;

  constructor(
    writeKey: string,
    private readonly options: ResolvedOptions,
  ) {
    const { tls } = options;
    const channelCredentials = tls
      ? credentials.createSsl(tls.rootCerts ?? null, tls.privateKey ?? null, tls.certChain ?? null)
      : credentials.createInsecure();
    this.client = new Client(options.target, channelCredentials, {
      // The client retries on its own schedule; the channel should be ready to reconnect by then.
      "grpc.enable_retries": 0,
      "grpc.initial_reconnect_backoff_ms": Math.min(options.retry.initialDelayMs, 1_000),
      "grpc.max_reconnect_backoff_ms": options.retry.maxDelayMs,
    });
    this.metadata = new Metadata();
    // The write key as HTTP Basic credentials with an empty password, as ingest expects.
    this.metadata.set("authorization", `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`);
  }

  /** Sends one request with a deadline; `done` gets the answer or the error. */
  send(request: Buffer, done: (error: ServiceError | null, response?: IngestBatchResponse) => void): ClientUnaryCall {
    return this.client.makeUnaryRequest(
      INGEST_BATCH.path,
      (bytes: Buffer) => bytes,
      INGEST_BATCH.responseDeserialize,
      request,
      this.metadata,
      { deadline: Date.now() + this.options.timeout },
      (error, response) => done(error, response),
    );
  }

  close(): void {
    this.client.close();
  }
}

/** "UNAVAILABLE" for 14; the number as text for a code grpc-js does not name. */
export function statusName(code: number | undefined): string {
  if (code === undefined) return "CONNECTION_FAILED";
  return status[code] ?? String(code);
}
