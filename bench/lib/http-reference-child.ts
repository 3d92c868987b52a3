import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { Cleanup } from "./run-support.js";

/** The parent's side of bench/lib/http-reference.ts: starts it and waits until it listens. */
export class HttpReferenceChild {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly exit: Promise<void>,
    /** Recent stderr, to explain a failure. */
    private readonly output: () => string,
  ) {}

  /** Starts the reference from the repository root `cwd`, publishing to `subject` (a stream must hold it); stopped by `cleanup`. */
  static async start(
    cleanup: Cleanup,
    options: { cwd: string; natsUrl: string; subject: string; timeoutMs?: number },
  ): Promise<HttpReferenceChild> {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/lib/http-reference.ts"], {
      cwd: options.cwd,
      env: { ...process.env, REFERENCE_NATS_URL: options.natsUrl, REFERENCE_SUBJECT: options.subject },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    child.stderr?.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8192)));
    const exit = new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", (error) => {
        output += `cannot run the HTTP reference: ${error.message}`;
        resolve();
      });
    });
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exit;
      clearTimeout(timer);
    };
    cleanup.add("stop the HTTP reference", stop);
    const timeoutMs = options.timeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const port = await Promise.race([
      new Promise<number>((resolve) => {
        createInterface({ input: child.stdout! }).on("line", (line) => {
          try {
            const message = JSON.parse(line) as { ready?: boolean; port?: number };
            if (message.ready && message.port) resolve(message.port);
          } catch {
            output = (output + line + "\n").slice(-8192);
          }
        });
      }),
      exit.then((): never => {
        throw new Error(`the HTTP reference exited during start-up:\n${output}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the HTTP reference did not start in ${timeoutMs} ms:\n${output}`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    return new HttpReferenceChild(child, port, exit, () => output);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Waits for `work`, but fails at once if the reference exits first. */
  guard<T>(work: Promise<T>): Promise<T> {
    const died = this.exit.then((): never => {
      throw new Error(`the HTTP reference exited unexpectedly:\n${this.output()}`);
    });
    return Promise.race([work, died]);
  }
}
