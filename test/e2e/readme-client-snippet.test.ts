import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { WebhookReceiver, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../helpers/stack.js";

/**
 * The README's client-library snippet, as written there, run with plain `node` (no tsx, no
 * source export condition) against a real ingest and delivery, its call reaching a real receiver.
 * `@switchyard/analytics` resolves to its built dist/index.js, which `npm ci` builds through the
 * root package's `prepare` script.
 */
const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const README_WRITE_KEY = "wk_example_web_0123456789";

let receiver: WebhookReceiver;
let stack: Stack;
let dir: string;
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  stack = await startStack({
    workspace: {
      sources: [{ id: "web-backend", writeKeys: [README_WRITE_KEY] }],
      destinations: [{ id: "example-receiver", settings: { webhooks: [{ url: receiver.url("/webhook") }] } }],
      connections: [{ sourceId: "web-backend", destinationId: "example-receiver" }],
    },
  });
  dir = await mkdtemp(join(tmpdir(), "switchyard-readme-"));
  // Resolves packages as a file in the repository would.
  await symlink(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
});
afterAll(async () => {
  await stack?.dispose();
  await receiver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The first ```ts block of the README's "Client library" section. */
function readmeSnippet(): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Client library"));
  const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!snippet) throw new Error("README.md: no ```ts block under ## Client library");
  return snippet;
}

describe("README client-library snippet", () => {
  it("is built by npm ci (the root package's prepare script)", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.prepare).toContain("scripts/prepare.mjs");
    expect(readFileSync(join(ROOT, "scripts/prepare.mjs"), "utf8")).toContain("libs/sdk/analytics/scripts/build.mjs");
    expect(
      existsSync(join(ROOT, "libs/sdk/analytics/dist/index.js")),
      "libs/sdk/analytics/dist/index.js: run npm ci (or npm run prepare)",
    ).toBe(true);
  });

  it("runs with plain node and its call reaches the receiver", async () => {
    const snippet = readmeSnippet();
    expect(snippet).toContain('endpoint: "127.0.0.1:50051"');
    // Only the address changes: the test's ingest listens on a port of its own.
    const program = `${snippet.replace("127.0.0.1:50051", `127.0.0.1:${stack.ingest.grpcPort}`)}\nconsole.log(JSON.stringify({ notDelivered }));\n`;
    const file = join(dir, "snippet.mjs");
    await writeFile(file, program);
    const { stdout } = await execFileAsync(process.execPath, [file], {
      cwd: dir,
      timeout: 60_000,
      env: { ...process.env, NODE_OPTIONS: "" },
    });
    expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual({ notDelivered: [] });

    const request = await waitFor("the README's call at the receiver", () =>
      receiver.requests.find((r) => r.json.event === "Signed Up" && r.json.userId === "u1"),
    );
    expect(request.json.properties).toEqual({ plan: "pro" });
  });
});
