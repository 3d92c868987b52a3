import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

export interface NatsServerOptions {
  /** Extra nats-server arguments (cluster settings, for instance). */
  args?: string[];
  port?: number;
}

/**
 * A real nats-server with JetStream on a free loopback port and a temp store.
 * It can be stopped and started again on the same port and store, to test
 * outages. Dispose (or stop with removeStore) to clean up.
 */
export class NatsServer {
  private process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly storeDir: string,
    private readonly args: string[],
  ) {}

  static async start(options: NatsServerOptions = {}): Promise<NatsServer> {
    const port = options.port ?? (await freePort());
    const storeDir = await mkdtemp(join(tmpdir(), "switchyard-nats-"));
    const server = new NatsServer(port, storeDir, options.args ?? []);
    await server.start();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  /** The server's process id while it runs (benchmarks read its CPU time). */
  get pid(): number | undefined {
    return this.process?.pid;
  }

  async start(): Promise<void> {
    if (this.process) return;
    const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir, ...this.args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      let output = "";
      const timer = setTimeout(() => reject(new Error(`nats-server did not get ready in 15 s:\n${output}`)), 15_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Server is ready")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(new Error("cannot start nats-server: is it on PATH? (apt-get install -y nats-server)", { cause: error }));
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited with ${code}:\n${output}`));
      });
    });
    // Keep draining its output so the pipe never fills up.
    child.stdout?.resume();
    child.stderr?.resume();
  }

  /** Stops the server (SIGTERM, or SIGKILL with `kill`), keeping its store for a later start(). */
  async stop({ kill = false }: { kill?: boolean } = {}): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill(kill ? "SIGKILL" : "SIGTERM");
    await exited;
  }

  async dispose(): Promise<void> {
    await this.stop({ kill: true });
    await rm(this.storeDir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
