import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { waitFor } from "./wait-for.js";

const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

/**
 * A Switchyard service run as its own process from TypeScript source (via
 * tsx), as in production but without a build step. Its output is collected
 * so tests can wait for log lines and scan them.
 */
export class ServiceProcess {
  output = "";
  private exitResult: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once the process exited and its output was read to the end. */
  private readonly closed: Promise<void>;

  private constructor(private readonly child: ChildProcess) {
    child.stdout?.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    this.exitResult = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    this.closed = new Promise((resolve) => child.once("close", () => resolve()));
  }

  /** Starts services/<service>/src/main.ts with exactly the given environment (plus PATH and HOME). */
  static start(service: string, env: Record<string, string>): ServiceProcess {
    const child = spawn(process.execPath, ["--import", "tsx", `services/${service}/src/main.ts`], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new ServiceProcess(child);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Waits until a log line matches; fails at once when the process exits first. */
  async waitForOutput(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    const seen = await waitFor(
      `output matching ${pattern}`,
      () => (pattern.test(this.output) ? "matched" : this.child.exitCode !== null || this.child.signalCode !== null ? "exited" : false),
      { timeoutMs },
    );
    if (seen === "matched") return;
    await this.closed; // output written just before the exit may not have been read yet
    if (!pattern.test(this.output)) throw new Error(`process exited before printing ${pattern}:\n${this.output}`);
  }

  /**
   * Waits for the service's "<service> ready" line and returns it: the ports it bound are in it
   * (grpcPort, opsPort, ingest's httpPort), so a test can start it on port 0 rather than on a
   * port it picked, which another test may take before the child binds it.
   */
  async ready(service: string, timeoutMs?: number): Promise<Record<string, unknown>> {
    await this.waitForOutput(new RegExp(`"msg":"${service} ready"`), timeoutMs);
    return this.logLines().find((line) => line.msg === `${service} ready`)!;
  }

  /** Parsed pino JSON lines printed so far. */
  logLines(): Record<string, unknown>[] {
    return this.output
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exitResult;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  async dispose(): Promise<void> {
    this.signal("SIGKILL");
    await this.exitResult;
  }
}
