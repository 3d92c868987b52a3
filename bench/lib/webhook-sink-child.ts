import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export interface PathStats {
  count: number;
  firstAt: number;
  lastAt: number;
}

export interface SinkStats {
  badBodies: number;
  openConnections: number;
  paths: Record<string, PathStats>;
}

export interface LatencySamples {
  /** arrival − body timestamp, ms, for requests whose timestamp lies in the window. */
  samples: number[];
  before: number;
  after: number;
}

/**
 * The parent's side of bench/lib/webhook-sink.ts: starts it, sends it
 * commands over stdin and reads the answers from stdout (JSON lines).
 */
export class WebhookSinkChild {
  private output = "";
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private readonly exit: Promise<void>;
  private ready: ((port: number) => void) | undefined;
  port = 0;

  private constructor(private readonly child: ChildProcess) {
    child.stderr?.on("data", (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-8192);
    });
    createInterface({ input: child.stdout! }).on("line", (line) => this.onLine(line));
    this.exit = new Promise((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", (error) => {
        this.output += `cannot run the webhook sink: ${error.message}`;
        resolve();
      });
    });
    void this.exit.then(() => {
      for (const { reject } of this.pending.values()) reject(new Error(`webhook sink exited:\n${this.output}`));
      this.pending.clear();
    });
  }

  /** Starts the sink from the repository root `cwd` and waits until it listens. */
  static async start(cwd: string, timeoutMs = 30_000): Promise<WebhookSinkChild> {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/lib/webhook-sink.ts"], {
      cwd,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const sink = new WebhookSinkChild(child);
    const ready = new Promise<number>((resolve) => (sink.ready = resolve));
    let timer: NodeJS.Timeout | undefined;
    const failed = Promise.race([
      sink.exit.then(() => {
        throw new Error(`the webhook sink exited during start-up:\n${sink.output}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the webhook sink did not start in ${timeoutMs} ms:\n${sink.output}`)), timeoutMs);
      }),
    ]);
    try {
      sink.port = await Promise.race([ready, failed]);
    } catch (error) {
      await sink.stop();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return sink;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  hold(path: string, ms: number): Promise<unknown> {
    return this.command("hold", { path, ms });
  }

  /** Requests to `path` misbehave (see webhook-sink.ts): never answered, answered with a huge body, or reset. */
  hostile(path: string, kind: "hang" | "huge" | "reset", bytes?: number): Promise<unknown> {
    return this.command("hostile", { path, kind, ...(bytes === undefined ? {} : { bytes }) });
  }

  recordLatency(path: string): Promise<unknown> {
    return this.command("latency", { path });
  }

  /** From now on, bodies on `path` have their messageId counted (see idCounts). */
  countMessageIds(path: string): Promise<unknown> {
    return this.command("messageIds", { path });
  }

  /** Requests on `path` with a messageId, distinct messageIds among them, and bodies without one. */
  async idCounts(path: string): Promise<{ total: number; distinct: number; missing: number }> {
    return (await this.command("idCounts", { path })) as { total: number; distinct: number; missing: number };
  }

  async stats(): Promise<SinkStats> {
    return (await this.command("stats")) as SinkStats;
  }

  async count(path: string): Promise<number> {
    return (await this.stats()).paths[path]?.count ?? 0;
  }

  async arrivals(paths: string[]): Promise<Record<string, number[]>> {
    return (await this.command("arrivals", { paths })) as Record<string, number[]>;
  }

  async latencies(path: string, from: number, to: number): Promise<LatencySamples> {
    return (await this.command("latencies", { path, from, to })) as LatencySamples;
  }

  reset(): Promise<unknown> {
    return this.command("reset");
  }

  /** Asks the sink to exit; SIGKILL if it has not after `graceMs`. */
  async stop(graceMs = 3_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin?.end(`${JSON.stringify({ id: 0, cmd: "exit" })}\n`);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exit;
    clearTimeout(timer);
  }

  private command(cmd: string, args: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.child.stdin?.writable) {
        reject(new Error(`webhook sink is gone:\n${this.output}`));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.child.stdin.write(`${JSON.stringify({ id, cmd, ...args })}\n`);
    });
  }

  private onLine(line: string): void {
    let message: { id?: number; result?: unknown; error?: string; ready?: boolean; port?: number };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      this.output = (this.output + line + "\n").slice(-8192);
      return;
    }
    if (message.ready && message.port) {
      this.ready?.(message.port);
      return;
    }
    const waiter = message.id === undefined ? undefined : this.pending.get(message.id);
    if (!waiter || message.id === undefined) return;
    this.pending.delete(message.id);
    if (message.error) waiter.reject(new Error(`webhook sink: ${message.error}`));
    else waiter.resolve(message.result);
  }
}
