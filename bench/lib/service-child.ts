import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { connect as tcpConnect } from "node:net";
import { BRISK_SERVICE_NODE_OPTIONS } from "@switchyard/platform";
import { freePort, waitFor } from "@switchyard/testkit";
import { processCpuMs, type Cleanup } from "./run-support.js";

export interface ServiceChildOptions {
  /** ingest, delivery or audience-sync: the child runs services/<service>/dist/main.js. */
  service: string;
  /** Repository root. */
  cwd: string;
  /** The service's settings, on top of this process's environment and its Node options (SERVICE_NODE_OPTIONS). */
  env: Record<string, string>;
  /** The gRPC port it was given, to wait for. */
  grpcPort: number;
  /** Extra node flags, e.g. ["--cpu-prof", "--cpu-prof-dir=/tmp/x"]. */
  nodeFlags?: string[];
}

/** The Node options npm start and docker-compose.yml run a service with. */
const SERVICE_NODE_OPTIONS: Record<string, string> = { ingest: BRISK_SERVICE_NODE_OPTIONS, delivery: BRISK_SERVICE_NODE_OPTIONS };

/** Repository roots whose services this process has built. */
const built = new Set<string>();

/**
 * The services are measured as npm start and the Docker image run them: the
 * esbuild bundles in services/<name>/dist, built once per benchmark run. (Run
 * from source through tsx they would do extra work, such as naming every
 * named closure at run time.)
 */
function buildOnce(cwd: string): void {
  if (built.has(cwd)) return;
  execFileSync(process.execPath, ["scripts/build.mjs"], { cwd, stdio: ["ignore", "ignore", "inherit"] });
  built.add(cwd);
}

/**
 * A Switchyard service in its own process, so the benchmark's clients do not
 * share its event loop, CPU time or heap, and its memory and CPU time can be
 * read from /proc. Output is kept (last 8 KB) to explain a failure.
 */
export class ServiceChild {
  private output = "";
  private readyLines = 0;
  private readonly exit: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly service: string,
    readonly grpcPort: number,
  ) {
    const keep = (chunk: Buffer) => {
      const text = chunk.toString();
      this.readyLines += text.match(/"msg":"[a-z-]+ ready"/g)?.length ?? 0;
      this.output = (this.output + text).slice(-8192);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.exit = new Promise((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", (error) => {
        keep(Buffer.from(`cannot run ${service}: ${error.message}`));
        resolve();
      });
    });
  }

  static start(options: ServiceChildOptions): ServiceChild {
    buildOnce(options.cwd);
    const child = spawn(process.execPath, [...(options.nodeFlags ?? []), `services/${options.service}/dist/main.js`], {
      cwd: options.cwd,
      env: {
        ...process.env,
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
        SHUTDOWN_GRACE_MS: "5000",
        // Free ops ports, so a bench never collides with a suite already running on the defaults.
        INGEST_OPS_PORT: "0",
        DELIVERY_OPS_PORT: "0",
        AUDIENCE_OPS_PORT: "0",
        ...(SERVICE_NODE_OPTIONS[options.service] ? { NODE_OPTIONS: SERVICE_NODE_OPTIONS[options.service] } : {}),
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new ServiceChild(child, options.service, options.grpcPort);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Recent stdout and stderr of the child. */
  get recentOutput(): string {
    return this.output;
  }

  /**
   * Waits until the gRPC port accepts TCP connections (services open it last,
   * once they are working) and, with `workers` > 1, until that many workers
   * logged "<service> ready" (which needs LOG_LEVEL=info): the cluster's
   * primary hands a new connection only to workers already listening, so a
   * client connecting early would land every channel on the first worker.
   * Fails at once if the child exits first.
   */
  async waitUntilReady(options: { workers?: number; timeoutMs?: number } = {}): Promise<void> {
    const { workers = 1, timeoutMs = 30_000 } = options;
    const ready = waitFor(
      `${this.service} to accept connections on port ${this.grpcPort}${workers > 1 ? ` with ${workers} workers ready` : ""}`,
      async () => (workers <= 1 || this.readyLines >= workers) && (await acceptsConnections(this.grpcPort)),
      { timeoutMs, intervalMs: 50 },
    );
    await this.guard(ready);
  }

  /** Waits for `work`, but fails at once if the child exits first, so a crash fails the run instead of hanging it. */
  guard<T>(work: Promise<T>): Promise<T> {
    const died = this.exit.then((): never => {
      throw new Error(`${this.service} exited unexpectedly:\n${this.output}`);
    });
    return Promise.race([work, died]);
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

  /** CPU time the child has used so far (user + system), in seconds; see processCpuMs. */
  async cpuSeconds(): Promise<number | undefined> {
    if (this.exited) return undefined;
    const ms = await processCpuMs(this.child.pid);
    return ms === undefined ? undefined : ms / 1000;
  }

  /** SIGTERM (a graceful stop, which also writes --cpu-prof/--heap-prof profiles), then SIGKILL after `graceMs`. */
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

/**
 * One ingest process (`workers` worker processes under it when more than 1) on free gRPC and HTTP
 * ports, against `natsUrl` and `namespace`, seeded from `workspaceFile`; stopped by `cleanup`.
 * Resolves once it is ready.
 */
export async function startIngestChild(
  cleanup: Cleanup,
  options: { cwd: string; natsUrl: string; namespace: string; workspaceFile: string; nodeFlags?: string[]; workers?: number },
): Promise<{ ingest: ServiceChild; grpcPort: number; httpPort: number }> {
  const workers = options.workers ?? 1;
  const grpcPort = await freePort();
  const httpPort = await freePort();
  const ingest = ServiceChild.start({
    service: "ingest",
    cwd: options.cwd,
    grpcPort,
    env: {
      NATS_URL: options.natsUrl,
      SWITCHYARD_NAMESPACE: options.namespace,
      SWITCHYARD_WORKSPACE_FILE: options.workspaceFile,
      INGEST_GRPC_PORT: String(grpcPort),
      INGEST_HTTP_PORT: String(httpPort),
      // Info, so waitUntilReady can count the workers' "ingest ready" lines; ingest logs nothing per request at info.
      ...(workers > 1 ? { SWITCHYARD_WORKERS: String(workers), LOG_LEVEL: "info" } : {}),
    },
    nodeFlags: options.nodeFlags ?? [],
  });
  cleanup.add("stop ingest", () => ingest.stop());
  await ingest.waitUntilReady({ workers });
  return { ingest, grpcPort, httpPort };
}
