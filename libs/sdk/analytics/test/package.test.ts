import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";
import { expectStoredOnce } from "./support.js";

const run = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
const TSC = fileURLToPath(new URL("../../../../node_modules/typescript/bin/tsc", import.meta.url));

let fixture: IngestFixture;
let dir: string;

beforeAll(async () => {
  fixture = await startIngestFixture();
  dir = await mkdtemp(join(tmpdir(), "switchyard-analytics-package-"));
});

afterAll(async () => {
  await fixture.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** The consumer: plain ESM JavaScript, as an application would use the published package. */
const CONSUMER_JS = `
import { Analytics, ValidationError } from "@switchyard/analytics";
const analytics = new Analytics(process.env.WRITE_KEY, { endpoint: process.env.ENDPOINT, flushAt: 2 });
let refused;
try {
  analytics.track({ userId: "u" });
} catch (error) {
  refused = { isValidationError: error instanceof ValidationError, field: error.field, rule: error.rule };
}
const ids = [
  analytics.identify({ userId: "packaged", traits: { plan: "pro" } }),
  analytics.track({ userId: "packaged", event: "Installed From Tarball" }),
];
const result = await analytics.close();
console.log(JSON.stringify({ ids, refused, result }));
`;

/** And a TypeScript consumer, type-checked strictly against the package's declarations. */
const CONSUMER_TS = `
import { Analytics, New, type AnalyticsOptions, type CloseResult, type FailedEvent } from "@switchyard/analytics";
const options: AnalyticsOptions = { endpoint: "grpcs://ingest.example.com:443", flushAt: 50, retry: { maxElapsedMs: 30_000 } };
const analytics: Analytics = New("wk", options);
analytics.on("failed", (event: FailedEvent) => event.reason.kind);
const id: string = analytics.page({ anonymousId: "a", name: "Home", properties: { path: "/" } });
// @ts-expect-error event is required on track
analytics.track({ userId: "u" });
export const closing: Promise<CloseResult> = analytics.close(100);
export { id };
`;

// Building, packing and installing take a while on a busy machine; nothing here is timed.
it("installs from the packed tarball into a fresh folder and works against a real ingest", { timeout: 300_000 }, async () => {
  // npm pack runs the prepack build (esbuild bundle + declarations).
  await run("npm", ["pack", "--pack-destination", dir, "--silent"], { cwd: PACKAGE_DIR, maxBuffer: 16 * 1024 * 1024 });
  const tarball = (await readdir(dir)).find((name) => name.endsWith(".tgz"));
  expect(tarball).toMatch(/^switchyard-analytics-\d+\.\d+\.\d+\.tgz$/);

  const { stdout: listing } = await run("tar", ["-tzf", join(dir, tarball!)]);
  const files = listing.trim().split("\n");
  expect(files).toContain("package/dist/index.js");
  expect(files).toContain("package/dist/index.d.ts");
  expect(files).toContain("package/README.md");
  expect(files.filter((file) => file.includes("/src/") || file.includes("/test/"))).toEqual([]);

  const app = join(dir, "app");
  await run("mkdir", ["-p", app]);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // The registry is only asked when npm's cache lacks the dependencies (@grpc/grpc-js, zod).
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--silent", join(dir, tarball!)], {
    cwd: app,
    maxBuffer: 16 * 1024 * 1024,
  });
  const installed = await readdir(join(app, "node_modules"));
  expect(installed).not.toContain("@switchyard/calls");

  await writeFile(join(app, "use.mjs"), CONSUMER_JS);
  const { stdout } = await run(process.execPath, ["use.mjs"], {
    cwd: app,
    env: { PATH: process.env.PATH ?? "", ENDPOINT: `127.0.0.1:${fixture.ingest.grpcPort}`, WRITE_KEY },
  });
  const output = JSON.parse(stdout) as { ids: string[]; refused: unknown; result: { delivered: string[]; notDelivered: unknown[] } };
  expect(output.refused).toEqual({ isValidationError: true, field: "event", rule: "required" });
  expect(output.result).toEqual({ delivered: output.ids, notDelivered: [] });
  await expectStoredOnce(fixture, output.ids);

  await writeFile(join(app, "use.ts"), CONSUMER_TS);
  await run(
    process.execPath,
    [
      TSC,
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--types",
      "node",
      "use.ts",
    ],
    {
      cwd: app,
      env: { PATH: process.env.PATH ?? "", NODE_PATH: join(PACKAGE_DIR, "../../../node_modules") },
    },
  ).catch((error: { stdout?: string }) => {
    throw new Error(`the declarations do not type-check:\n${error.stdout ?? String(error)}`);
  });
});
