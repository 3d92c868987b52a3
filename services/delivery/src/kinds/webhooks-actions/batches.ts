import { createHash } from "node:crypto";
import { batchBody, type CompiledActionMapping, type MappedRequest } from "@switchyard/mappings";
import type { ActionsDestination } from "@switchyard/workspace";
import { TURN_HORIZON_MS, waitUntil } from "../../pipeline/rate-limits.js";
import type { SendContext, UrlAttempt } from "../kind.js";
import { maskedRequest, requestHeaders } from "./request-headers.js";

/**
 * The batches of a Webhooks (Actions) destination's batching mappings, in one delivery process.
 *
 * A call's round puts the request its mapping made into the open batch of its mapping and batch
 * key (URL, method, headers: calls that differ in any of them never share a request) and waits:
 * the bus message it came in stays unacked (heartbeated) until the batch's request is answered and
 * the round settled, so a crash loses no call (the message is delivered again). A batch goes when
 * it holds `size` calls or its first call has waited `maxWaitMs`, whichever comes first, taking one
 * of the destination's request slots as it goes; its calls take none while they wait.
 *
 * Each call's round gets the batch's attempts for its own outcome: retries, dead letters and
 * usage stay per call. A 413 (the receiver found the body too large) splits the batch in halves,
 * each sent on its own, until a single call is refused, which is then a permanent failure.
 */

/** A call waiting in an open batch. */
interface Waiting {
  readonly messageId: string;
  readonly request: MappedRequest;
  readonly done: (attempts: UrlAttempt[]) => void;
}

interface OpenBatch {
  readonly destination: ActionsDestination;
  readonly index: number;
  readonly size: number;
  readonly calls: Waiting[];
  readonly timer: NodeJS.Timeout;
}

type BatchOfAttempt = NonNullable<UrlAttempt["batch"]>;

export class ActionBatches {
  private readonly open = new Map<string, OpenBatch>();
  /** Delivery is stopping: a batch goes as soon as the calls being routed now are in it. */
  private stopping = false;

  constructor(private readonly context: SendContext) {}

  /** Puts a call's request in its batch; resolves to the attempts of the requests that carried it. */
  add(
    destination: ActionsDestination,
    index: number,
    mapping: CompiledActionMapping,
    messageId: string,
    request: MappedRequest,
  ): Promise<UrlAttempt[]> {
    const batching = mapping.batching!;
    const key = `${destination.id}\n${index}\n${request.batchKey}`;
    return new Promise((done) => {
      let batch = this.open.get(key);
      if (!batch || batch.destination !== destination) {
        // A changed destination starts new batches; the old one goes as it was built.
        if (batch) this.send(key, batch);
        const timer = setTimeout(() => this.send(key, this.open.get(key)), this.stopping ? 0 : batching.maxWaitMs);
        batch = { destination, index, size: batching.size, calls: [], timer };
        this.open.set(key, batch);
      }
      batch.calls.push({ messageId, request, done });
      if (batch.calls.length >= batch.size) this.send(key, batch);
    });
  }

  /** Delivery is stopping: every open batch goes now, and each batch opened from now on at once. */
  flush(): void {
    this.stopping = true;
    for (const [key, batch] of this.open) this.send(key, batch);
  }

  private send(key: string, batch: OpenBatch | undefined): void {
    if (!batch || this.open.get(key) !== batch) return;
    this.open.delete(key);
    clearTimeout(batch.timer);
    void this.request(batch.destination, batch.index, batch.calls);
  }

  /** One batch's request, in a request slot; never rejects (each call gets its outcome). */
  private async request(destination: ActionsDestination, index: number, calls: readonly Waiting[]): Promise<void> {
    const gate = this.context.gates.for(destination.id);
    // A failing destination is probed by a batch as by a retry, once its cool-down is over.
    const release = (await gate.acquire()) ?? gate.tryAcquire();
    if (!release) {
      // Failing or stalled: nothing is sent now, and every call goes to the retry path.
      const attempt = notSent(index, calls, "the destination is failing or not answering: the batch was not sent, its calls are retried");
      for (const call of calls) call.done([attempt]);
      return;
    }
    // The sender answers every request with an outcome; it does not reject.
    const attempts = await this.sendSplitting(destination, index, calls);
    release(attempts.some((attempt) => attempt.outcome === "delivered") ? "delivered" : attempts.at(-1)!.outcome);
  }

  /** Sends the calls as one request; on a 413, each half on its own. Gives every call its attempts; returns all made. */
  private async sendSplitting(destination: ActionsDestination, index: number, calls: readonly Waiting[]): Promise<UrlAttempt[]> {
    const attempt = await this.sendOne(destination, index, calls);
    if (attempt.status !== 413 || calls.length === 1) {
      for (const call of calls) call.done([attempt]);
      return [attempt];
    }
    const half = Math.ceil(calls.length / 2);
    const halves = [calls.slice(0, half), calls.slice(half)];
    // The refused request is each call's first attempt; its half's requests come after it.
    const withRefusal = halves.map((part) =>
      part.map((call) => ({ ...call, done: (later: UrlAttempt[]) => call.done([attempt, ...later]) })),
    );
    const made: UrlAttempt[] = [attempt];
    for (const part of withRefusal) made.push(...(await this.sendSplitting(destination, index, part)));
    return made;
  }

  /** Waits for the request's turn at a rate-limited destination: a batch is one request of its limit. Waiting drops nothing. */
  private async turn(destinationId: string, limit: number): Promise<void> {
    for (;;) {
      const turn = await this.context.rateLimits.turn(destinationId, limit, 1);
      if (turn.granted) return waitUntil(turn.pace.at);
      await waitUntil(turn.freeAt - TURN_HORIZON_MS);
    }
  }

  private async sendOne(destination: ActionsDestination, index: number, calls: readonly Waiting[]): Promise<UrlAttempt> {
    const { sender, masker } = this.context;
    if (destination.maxRequestsPerSecond !== undefined) await this.turn(destination.id, destination.maxRequestsPerSecond);
    const requests = calls.map((call) => call.request);
    const first = requests[0]!;
    const body = batchBody(requests);
    const batch: BatchOfAttempt = { messageIds: calls.map((call) => call.messageId) };
    // Over the exact bytes sent: the whole array (Segment signs only its first element's data).
    const headers = requestHeaders(first, body, destination.settings, batchId(batch));
    const result = await sender.send(first.url, headers, body, destination.id, first.method);
    return {
      ...result,
      urlIndex: index,
      url: first.url,
      batch,
      request: { method: first.method, entry: maskedRequest(first, headers, masker), headers, body },
    };
  }
}

/** A batch's id, for Standard Webhooks' webhook-id: the same for the same calls in the same order. */
function batchId(batch: BatchOfAttempt): string {
  return `batch_${createHash("sha256").update(batch.messageIds.join("\n")).digest("base64url").slice(0, 32)}`;
}

function notSent(index: number, calls: readonly Waiting[], reason: string): UrlAttempt {
  return {
    status: 0,
    error: reason,
    latencyMs: 0,
    outcome: "retryable",
    retryAfterMs: undefined,
    urlIndex: index,
    url: calls[0]!.request.url,
    batch: { messageIds: calls.map((call) => call.messageId) },
  };
}
