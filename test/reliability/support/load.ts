import { status, type ServiceError } from "@grpc/grpc-js";
import { Call } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { runLanes } from "../../../bench/lib/run-support.js";
import { IngestClient } from "../../helpers/stack.js";
import { WRITE_KEY } from "./pipeline.js";

export interface LoadOptions {
  grpcTarget: string;
  httpUrl: string;
  /** Calls to send; messageIds are `<prefix>-<batch>-<index>`. */
  total: number;
  batchSize: number;
  callsPerSecond: number;
  prefix: string;
  /** Every n-th batch goes through the Segment HTTP API instead of gRPC (0: none). */
  httpEvery?: number;
  lanes?: number;
  /** A batch still refused after this long fails the run. */
  giveUpMs?: number;
}

/** gRPC codes and HTTP answers that mean "not now, send it again", as a client library treats them. */
const RETRYABLE_GRPC = new Set([status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.INTERNAL, status.UNKNOWN, status.CANCELLED]);

/**
 * A client sending `total` calls in batches at a steady rate, the way a
 * careful backend would: each batch has its own id, and a batch that was
 * refused or whose answer never came is sent again, same id and same calls,
 * until ingest accepts it. A call counts as accepted only once the client
 * received the answer that says so. Refusals are counted by kind.
 */
export class Load {
  readonly accepted = new Set<string>();
  /** Refusals seen, by `grpc:<CODE>`, `http:<status>` or `http:<error code>`. */
  readonly refusals: Record<string, number> = {};
  private readonly client: IngestClient;

  constructor(private readonly options: LoadOptions) {
    // Reconnect soon after a restarted ingest is back, instead of after grpc-js's default back-off (up to 2 minutes).
    this.client = new IngestClient(options.grpcTarget, {
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 500,
    });
  }

  get acceptedCount(): number {
    return this.accepted.size;
  }

  get refusalCount(): number {
    return Object.values(this.refusals).reduce((sum, n) => sum + n, 0);
  }

  async run(): Promise<void> {
    const { total, batchSize, callsPerSecond } = this.options;
    const batches = Math.ceil(total / batchSize);
    const startedAt = Date.now();
    try {
      await runLanes(this.options.lanes ?? 8, batches, async (batch) => {
        const due = startedAt + ((batch * batchSize) / callsPerSecond) * 1000;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const size = Math.min(batchSize, total - batch * batchSize);
        await this.sendUntilAccepted(batch, size);
      });
    } finally {
      this.client.close();
    }
  }

  private async sendUntilAccepted(batch: number, size: number): Promise<void> {
    const batchId = `${this.options.prefix}-${batch}`;
    const messageIds = Array.from({ length: size }, (_, i) => `${batchId}-${i}`);
    const viaHttp = this.options.httpEvery !== undefined && this.options.httpEvery > 0 && batch % this.options.httpEvery === 0;
    const giveUpAt = Date.now() + (this.options.giveUpMs ?? 120_000);
    for (;;) {
      const refusal = viaHttp ? await this.sendHttp(messageIds) : await this.sendGrpc(batchId, messageIds);
      if (refusal === undefined) {
        for (const id of messageIds) this.accepted.add(id);
        return;
      }
      this.refusals[refusal] = (this.refusals[refusal] ?? 0) + 1;
      if (Date.now() > giveUpAt)
        throw new Error(`batch ${batchId} still refused (${refusal}) after ${this.options.giveUpMs ?? 120_000} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Undefined when accepted, else the kind of refusal. */
  private async sendGrpc(batchId: string, messageIds: string[]): Promise<string | undefined> {
    const calls = messageIds.map((messageId, i) =>
      Call.fromPartial({
        messageId,
        userId: `user-${i % 50}`,
        payload: { $case: "track", value: { event: "Reliability Probe", properties: { batchId, index: i } } },
      }),
    );
    try {
      const response = await this.client.ingestBatch({ batchId, calls }, WRITE_KEY);
      if (response.accepted !== calls.length)
        throw new Error(`ingest refused calls of a valid batch: ${JSON.stringify(response.rejections)}`);
      return undefined;
    } catch (error) {
      const code = (error as Partial<ServiceError>).code;
      if (code === undefined || !RETRYABLE_GRPC.has(code)) throw error;
      return `grpc:${status[code]}`;
    }
  }

  private async sendHttp(messageIds: string[]): Promise<string | undefined> {
    const body = JSON.stringify({
      batch: messageIds.map((messageId, i) => ({ type: "track", messageId, userId: `user-${i % 50}`, event: "Reliability Probe HTTP" })),
    });
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.options.httpUrl}/v1/batch`, {
        method: "POST",
        headers: { authorization: basicAuthorization(WRITE_KEY), "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      text = await response.text();
    } catch (error) {
      // Refused, reset or cut off mid-answer (a killed ingest): the client cannot know, so it sends again.
      const cause = (error as { cause?: { code?: string } }).cause;
      return `http:${cause?.code ?? (error as Error).name}`;
    }
    if (response.status === 503) return "http:503";
    if (response.status !== 200) throw new Error(`HTTP ingest answered ${response.status}: ${text}`);
    // A fully accepted batch is answered {"success":true}; a partly accepted one adds counts.
    const answer = JSON.parse(text) as { success?: boolean; accepted?: number };
    if (answer.success !== true || (answer.accepted ?? messageIds.length) !== messageIds.length)
      throw new Error(`HTTP ingest refused calls of a valid batch: ${text}`);
    return undefined;
  }
}
