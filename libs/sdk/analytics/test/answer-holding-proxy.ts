import { createConnection, createServer, type AddressInfo, type Server, type Socket } from "node:net";

/**
 * A TCP proxy in front of ingest that can hold back the server's answers.
 * With answers held, a request still reaches ingest and is stored, but the
 * client never hears back; cutConnections() then drops every connection, as
 * if ingest had been killed after storing a batch and before answering. It
 * makes that window deterministic: the test cuts only once it has seen the
 * batch in JetStream.
 */
export class AnswerHoldingProxy {
  private holding = false;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();

  private constructor(
    private readonly server: Server,
    private readonly targetPort: number,
  ) {}

  static async start(targetPort: number): Promise<AnswerHoldingProxy> {
    const server = createServer();
    const proxy = new AnswerHoldingProxy(server, targetPort);
    server.on("connection", (client) => proxy.relay(client));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** From now on, bytes from ingest to its clients are dropped instead of relayed. */
  holdAnswers(): void {
    this.holding = true;
  }

  /** Destroys every open connection and relays normally again. */
  cutConnections(): void {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    this.holding = false;
  }

  async close(): Promise<void> {
    this.cutConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket): void {
    const upstream = createConnection({ host: "127.0.0.1", port: this.targetPort });
    const pair = { client, upstream };
    this.pairs.add(pair);
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk) => {
      if (!this.holding) client.write(chunk);
    });
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", end);
    upstream.on("error", end);
  }
}
