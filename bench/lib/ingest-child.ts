import { spawn, type ChildProcess } from "node:child_process";
import { connect as tcpConnect } from "node:net";
import { waitFor } from "@switchyard/testkit";

export interface IngestChildOptions {
  /** Repository root: the child runs services/ingest/src/main.ts from there. */
  cwd: string;
  natsUrl: string;
  namespace: string;
  workspaceFile: string;
  grpcPort: number;
  httpPort: number;
  /** Extra node flags, e.g. ["--cpu-prof", "--cpu-prof-dir=/tmp/x"]. */
  nodeFlags?: string[];
}

/**
 * The ingest service in its own process, so the benchmark clients do not share
 * its event loop or CPU time. Output is kept (last 8 KB) to explain a failure.
 */
export class IngestChild {
  private output = "";
  private readonly exit: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly grpcPort: number,
  ) {
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-8192);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.exit = new Promise((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", (error) => {
        keep(Buffer.from(`cannot run ingest: ${error.message}`));
        resolve();
      });
    });
  }

  static start(options: IngestChildOptions): IngestChild {
    const child = spawn(process.execPath, [...(options.nodeFlags ?? []), "--import", "tsx", "services/ingest/src/main.ts"], {
      cwd: options.cwd,
      env: {
        ...process.env,
        NATS_URL: options.natsUrl,
        SWITCHYARD_NAMESPACE: options.namespace,
        SWITCHYARD_WORKSPACE_FILE: options.workspaceFile,
        INGEST_GRPC_PORT: String(options.grpcPort),
        INGEST_HTTP_PORT: String(options.httpPort),
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
        SHUTDOWN_GRACE_MS: "5000",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new IngestChild(child, options.grpcPort);
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Recent stdout and stderr of the child. */
  get recentOutput(): string {
    return this.output;
  }

  /** Waits until the gRPC port accepts TCP connections; fails at once if the child exits first. */
  async waitUntilReady(timeoutMs = 30_000): Promise<void> {
    const ready = waitFor(`ingest to accept connections on port ${this.grpcPort}`, () => acceptsConnections(this.grpcPort), {
      timeoutMs,
      intervalMs: 50,
    });
    const died = this.exit.then(() => {
      throw new Error(`ingest exited during start-up:\n${this.output}`);
    });
    await Promise.race([ready, died]);
  }

  /** SIGTERM (a graceful stop, which also writes a --cpu-prof profile), then SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.exited) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exit;
    clearTimeout(timer);
  }
}

function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => {
      socket.destroy();
      resolve(false);
    });
  });
}
