import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";
import { expectStoredOnce } from "./support.js";

const SCRIPT = fileURLToPath(new URL("./scripts/one-call.ts", import.meta.url));
const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

let fixture: IngestFixture;

beforeAll(async () => {
  fixture = await startIngestFixture();
});

afterAll(async () => {
  await fixture.dispose();
});

/** Runs scripts/one-call.ts in its own Node process; resolves when it exits by itself (killed after 30 s). */
function runScript(extraEnv: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; messageId: string }> {
  const messageId = randomUUID();
  const child = spawn(process.execPath, ["--import", "tsx", SCRIPT], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      ENDPOINT: `127.0.0.1:${fixture.ingest.grpcPort}`,
      WRITE_KEY,
      MESSAGE_ID: messageId,
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  return new Promise((resolve) =>
    child.once("exit", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr, messageId });
    }),
  );
}

describe("a script that makes one call and never closes the client", () => {
  it("delivers the call and exits by itself, printing nothing without DEBUG", async () => {
    const run = await runScript({});
    expect(run).toMatchObject({ code: 0, stdout: "", stderr: "" });
    await expectStoredOnce(fixture, [run.messageId]);
  });

  it("logs what it does with DEBUG=analytics", async () => {
    const run = await runScript({ DEBUG: "analytics" });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("");
    const lines = run.stderr.trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines) expect(line).toMatch(/^analytics \S+ (debug|warn|error) /);
    // Sent when the process ran out of work, not after flushAfter (5 s): the timer never held the process.
    expect(run.stderr).toMatch(/debug process exiting: sending queued calls/);
    expect(run.stderr).toMatch(/debug sending batch/);
    expect(run.stderr).toMatch(/debug batch delivered/);
    expect(run.stderr).not.toContain(WRITE_KEY);
    await expectStoredOnce(fixture, [run.messageId]);
  });
});
