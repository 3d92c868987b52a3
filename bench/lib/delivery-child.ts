import { spawn, type ChildProcess } from "node:child_process";
import { connect as tcpConnect } from "node:net";
import { waitFor } from "@switchyard/testkit";

export interface DeliveryChildOptions {
  /** Repository root: the child runs services/delivery/src/main.ts from there. */
  cwd: string;
  natsUrl: string;
  namespace: string;
  workspaceFile: string;
  grpcPort: number;
  /** Further environment (DELIVERY_* settings). */
  env?: Record<string, string>;
  /** Extra node flags, e.g. ["--cpu-prof", "--cpu-prof-dir=/tmp/x"]. */
  nodeFlags?: string[];
}

/**
 * The delivery service in its own process, configured like the delivery test
 * fixture. Output is kept (last 8 KB) to explain a failure.
 */
export class DeliveryChild {
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
        keep(Buffer.from(`cannot run delivery: ${error.message}`));
        resolve();
      });
    });
  }

  static start(options: DeliveryChildOptions): DeliveryChild {
    const child = spawn(process.execPath, [...(options.nodeFlags ?? []), "--import", "tsx", "services/delivery/src/main.ts"], {
      cwd: options.cwd,
      env: {
        ...process.env,
        NATS_URL: options.natsUrl,
        SWITCHYARD_NAMESPACE: options.namespace,
        SWITCHYARD_WORKSPACE_FILE: options.workspaceFile,
        DELIVERY_GRPC_PORT: String(options.grpcPort),
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
        SHUTDOWN_GRACE_MS: "5000",
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new DeliveryChild(child, options.grpcPort);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Recent stdout and stderr of the child (warnings and errors only, at LOG_LEVEL=warn). */
  get recentOutput(): string {
    return this.output;
  }

  /**
   * Waits until the gRPC port accepts connections. The service opens it after
   * its consumers started, so from then on it is delivering. Fails at once if
   * the child exits first.
   */
  async waitUntilReady(timeoutMs = 30_000): Promise<void> {
    const ready = waitFor(`delivery to accept connections on port ${this.grpcPort}`, () => acceptsConnections(this.grpcPort), {
      timeoutMs,
      intervalMs: 50,
    });
    const died = this.exit.then(() => {
      throw new Error(`delivery exited during start-up:\n${this.output}`);
    });
    await Promise.race([ready, died]);
  }

  /** SIGTERM (a graceful stop, which also writes a --cpu-prof profile), then SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
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
