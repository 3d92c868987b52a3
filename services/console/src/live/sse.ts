import type { ServerResponse } from "node:http";

/** Comment lines keep idle connections open through proxies that close silent ones. */
const HEARTBEAT_MS = 15_000;

/**
 * A server-sent events stream to one browser. `send` reports whether the event was queued
 * without exceeding the socket's buffer; callers that produce fast (the live debugger) drop
 * events while it is false instead of buffering without bound.
 */
export class EventStream {
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly closeListeners: (() => void)[] = [];

  constructor(
    private readonly response: ServerResponse,
    /** Checked at every heartbeat: false (the session expired or was signed out) ends the stream. */
    private readonly stillAllowed: () => boolean,
  ) {
    response.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      Connection: "keep-alive",
      // Proxies that buffer responses (nginx) would hold events back.
      "X-Accel-Buffering": "no",
    });
    // Tells the browser how long to wait before reconnecting after a drop.
    response.write("retry: 2000\n\n");
    this.heartbeat = setInterval(() => {
      if (!this.stillAllowed()) {
        this.send("signed-out", {});
        this.close();
      } else {
        this.response.write(": keep-alive\n\n");
      }
    }, HEARTBEAT_MS);
    response.on("close", () => this.close());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** True when the socket can take more now. */
  get writable(): boolean {
    return !this.closed && !this.response.writableNeedDrain;
  }

  send(event: string, data: unknown): boolean {
    if (this.closed) return false;
    return this.response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.response.end();
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}
