import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body bytes exactly as they arrived. */
  raw: Buffer;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: any;
  receivedAt: number;
}

/** What the receiver does with the n-th request (0-based). */
export type Responder = (request: ReceivedRequest, index: number) => ResponsePlan | Promise<ResponsePlan>;
export type ResponsePlan =
  { status: number; headers?: Record<string, string>; body?: string | Buffer; delayMs?: number } | { destroy: true };

/**
 * A real HTTP(S) webhook receiver on a loopback port for tests: it records
 * every request with its raw body and answers as the test tells it to.
 */
export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  /** TCP connections accepted so far. With TLS a connection comes before the handshake, a request only after it. */
  connections = 0;
  /** Requests handled so far (recorded or not). */
  handled = 0;
  private responder: Responder = () => ({ status: 200 });
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    private readonly scheme: "http" | "https",
    /** False for long runs that only count: requests reach the responder but are not kept. */
    private readonly record: boolean,
  ) {
    server.on("connection", (socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  /** Listens on 127.0.0.1, on `port` when given (say, one a test first saw refuse connections), else on a free one. */
  static async start(options: { tls?: { key: string; cert: string }; port?: number; record?: boolean } = {}): Promise<WebhookReceiver> {
    const handler = (request: IncomingMessage, response: ServerResponse) => void receiver.handle(request, response);
    const server = options.tls ? createHttpsServer(options.tls, handler) : createServer(handler);
    const receiver = new WebhookReceiver(server, options.tls ? "https" : "http", options.record ?? true);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = "/hook"): string {
    return `${this.scheme}://127.0.0.1:${this.port}${path}`;
  }

  /** Sets how the following requests are answered. */
  respond(responder: Responder): void {
    this.responder = responder;
  }

  /** Requests whose JSON body has this messageId. */
  byMessageId(messageId: string): ReceivedRequest[] {
    return this.requests.filter((request) => request.json?.messageId === messageId);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    let json: unknown;
    try {
      json = JSON.parse(raw.toString("utf8"));
    } catch {
      json = undefined;
    }
    const received: ReceivedRequest = {
      method: request.method ?? "",
      path: request.url ?? "",
      headers: request.headers,
      raw,
      json,
      receivedAt: Date.now(),
    };
    const index = this.record ? this.requests.push(received) - 1 : this.handled;
    this.handled++;
    const plan = await this.responder(received, index);
    if ("destroy" in plan) {
      request.socket.destroy();
      return;
    }
    if (plan.delayMs) await new Promise((resolve) => setTimeout(resolve, plan.delayMs));
    if (response.destroyed) return;
    response.writeHead(plan.status, plan.headers);
    response.end(plan.body ?? "");
  }
}
