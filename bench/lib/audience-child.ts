import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { connect as tcpConnect } from "node:net";
import { waitFor } from "@switchyard/testkit";

/** USER_HZ: what /proc reports CPU times in, 100 on every common Linux build. */
const CLOCK_TICKS_PER_SECOND = 100;

export interface AudienceChildOptions {
  /** Repository root: the child runs services/audience-sync/src/main.ts from there. */
  cwd: string;
  natsUrl: string;
  namespace: string;
  workspaceFile: string;
  grpcPort: number;
  adminToken: string;
  /** Extra node flags, e.g. ["--cpu-prof", "--cpu-prof-dir=/tmp/x"]. */
  nodeFlags?: string[];
}

/**
 * The audience-sync service in its own process, so the benchmark client does
 * not share its event loop, CPU time or heap, and its memory can be read from
 * /proc. Output is kept (last 8 KB) to explain a failure.
 */
export class AudienceChild {
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
        keep(Buffer.from(`cannot run audience-sync: ${error.message}`));
        resolve();
      });
    });
  }

  static start(options: AudienceChildOptions): AudienceChild {
    const child = spawn(process.execPath, [...(options.nodeFlags ?? []), "--import", "tsx", "services/audience-sync/src/main.ts"], {
      cwd: options.cwd,
      env: {
        ...process.env,
        NATS_URL: options.natsUrl,
        SWITCHYARD_NAMESPACE: options.namespace,
        SWITCHYARD_WORKSPACE_FILE: options.workspaceFile,
        SWITCHYARD_ADMIN_TOKEN: options.adminToken,
        AUDIENCE_GRPC_PORT: String(options.grpcPort),
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
        SHUTDOWN_GRACE_MS: "5000",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new AudienceChild(child, options.grpcPort);
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Recent stdout and stderr of the child. */
  get recentOutput(): string {
    return this.output;
  }

  /**
   * The child's memory from /proc/<pid>/status, in bytes: `rss` now (VmRSS)
   * and `peak` since it started (VmHWM). Linux only; undefined elsewhere or
   * once the child is gone.
   */
  async memory(): Promise<{ rss: number; peak: number } | undefined> {
    if (this.child.pid === undefined || this.exited) return undefined;
    try {
      const status = await readFile(`/proc/${this.child.pid}/status`, "utf8");
      const kilobytes = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? Number.NaN);
      const memory = { rss: kilobytes("VmRSS") * 1024, peak: kilobytes("VmHWM") * 1024 };
      return Number.isNaN(memory.rss) || Number.isNaN(memory.peak) ? undefined : memory;
    } catch {
      return undefined;
    }
  }

  /**
   * CPU time the child has used so far (user + system), in seconds, from
   * /proc/<pid>/stat (clock ticks of 1/100 s on Linux). On a shared machine
   * this says more about the service's own cost than wall time does.
   */
  async cpuSeconds(): Promise<number | undefined> {
    if (this.child.pid === undefined || this.exited) return undefined;
    try {
      const stat = await readFile(`/proc/${this.child.pid}/stat`, "utf8");
      // Fields after the command name (which may hold spaces) start at ")"; utime and stime are the 12th and 13th of them.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    } catch {
      return undefined;
    }
  }

  /** Waits until the gRPC port accepts TCP connections; fails at once if the child exits first. */
  async waitUntilReady(timeoutMs = 30_000): Promise<void> {
    const ready = waitFor(`audience-sync to accept connections on port ${this.grpcPort}`, () => acceptsConnections(this.grpcPort), {
      timeoutMs,
      intervalMs: 50,
    });
    const died = this.exit.then(() => {
      throw new Error(`audience-sync exited during start-up:\n${this.output}`);
    });
    await Promise.race([ready, died]);
  }

  /** Waits for `work`, but fails at once if the child exits first, so a crash mid-sync fails the run instead of hanging it. */
  guard<T>(work: Promise<T>): Promise<T> {
    const died = this.exit.then((): never => {
      throw new Error(`audience-sync exited unexpectedly:\n${this.output}`);
    });
    return Promise.race([work, died]);
  }

  /** SIGTERM (a graceful stop, which also writes --cpu-prof/--heap-prof profiles), then SIGKILL after `graceMs`. */
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
