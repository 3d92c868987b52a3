import { Worker } from "node:worker_threads";
import type { SendMethod, Sender, SendResult } from "./webhook-sender.js";

/** What the sender thread is made with (see sender-thread.worker.ts): SenderOptions in a form a thread can receive. */
export interface SenderThreadSettings {
  timeoutMs: number;
  maxResponseBytes: number;
  connectionsPerOrigin: number;
  extraCaCertificates?: string[];
  /** AddressPolicy.allowlist. */
  allowlist: readonly string[];
}

/** Main thread to sender thread. */
export type ThreadRequest =
  { id: number; method: SendMethod; url: string; headers: string[]; body: Uint8Array; poolKey: string } | { close: true };

/** A SendResult as it crosses from the thread: its Buffers arrive as Uint8Arrays. */
export type ThreadResult = Omit<SendResult, "responseHeaders" | "responseBody"> & {
  responseHeaders?: Uint8Array[] | undefined;
  responseBody?: Uint8Array | undefined;
};

/** Sender thread to main thread: a result, or the answer to `close`. */
export type ThreadReply = { id: number; result: ThreadResult } | { closed: true };

/** How long close() waits for the thread to close its connections before it stops it anyway. */
const CLOSE_WAIT_MS = 5_000;

/**
 * A WebhookSender on a thread of its own: what a request costs there (connecting, TLS, closing,
 * parsing the answer, the garbage) is not spent on the main thread's event loop, and so delays no
 * other destination's answers. Started on first use. A thread that dies answers its requests in
 * flight as failed (retryable) and is started again on the next one.
 */
export class SenderThread implements Sender {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, (result: SendResult) => void>();
  private closing: (() => void) | undefined;

  constructor(private readonly settings: SenderThreadSettings) {}

  send(url: string, headers: string[], body: Buffer, poolKey = "", method: SendMethod = "POST"): Promise<SendResult> {
    const worker = this.started();
    const id = this.nextId++;
    // A copy of the body's own bytes, handed over rather than cloned: a Buffer is often a view of a
    // larger one (the whole stored batch), all of which a clone would copy.
    const bytes = new Uint8Array(body);
    return new Promise((resolve) => {
      // Requests in flight keep the process alive, as sockets of its own would; an idle thread does not.
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, resolve);
      worker.postMessage({ id, method, url, headers, body: bytes, poolKey } satisfies ThreadRequest, [bytes.buffer]);
    });
  }

  /** Closes the thread's connections and stops it. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    const closed = new Promise<void>((resolve) => (this.closing = resolve));
    worker.postMessage({ close: true } satisfies ThreadRequest);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
    await worker.terminate();
  }

  /** Whether the thread is running (for tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = newWorker(this.settings);
    worker.on("message", (reply: ThreadReply) => this.received(reply));
    worker.on("error", (error) => this.stopped(worker, `sender thread failed: ${error.message}`));
    worker.on("exit", (code) => this.stopped(worker, `sender thread exited (${code})`));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private received(reply: ThreadReply): void {
    if ("closed" in reply) {
      this.closing?.();
      return;
    }
    const resolve = this.pending.get(reply.id);
    if (!resolve) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker?.unref();
    const { responseHeaders, responseBody, ...result } = reply.result;
    resolve({ ...result, responseHeaders: responseHeaders?.map(asBuffer), responseBody: responseBody && asBuffer(responseBody) });
  }

  private stopped(worker: Worker, reason: string): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.closing?.();
    for (const resolve of this.pending.values()) resolve({ status: 0, error: reason, latencyMs: 0, outcome: "retryable" });
    this.pending.clear();
  }
}

/**
 * Built, the thread's entry is dist/sender-thread.worker.js beside dist/main.js. From source (the
 * tests), it is the .ts beside this file, loaded through tsx, whose hooks must be registered in the
 * thread before the entry is imported (`--import tsx` in execArgv comes too late for the entry itself).
 */
function newWorker(settings: SenderThreadSettings): Worker {
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./sender-thread.worker.js", import.meta.url), { workerData: settings });
  const entry = new URL("./sender-thread.worker.ts", import.meta.url).href;
  const code = `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData: settings });
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
