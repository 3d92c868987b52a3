import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript build script, no declarations.
import { buildCli } from "../scripts/build.mjs";
// @ts-expect-error: plain JavaScript module, no declarations.
import { bundleIsCurrent } from "../bin/bundle-state.mjs";

/**
 * The `switchyard` command starts from an esbuild bundle, not from tsx transpiling the source:
 * these checks keep it that way (the start-up time itself is measured outside the tests).
 */
const execFileAsync = promisify(execFile);
const BIN_DIR = fileURLToPath(new URL("../bin/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

interface Metafile {
  inputs: Record<string, unknown>;
  outputs: Record<string, { entryPoint?: string; imports: { path: string; kind: string }[]; inputs: Record<string, unknown> }>;
}

let outdir: string;
let metafile: Metafile;
beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "switchyard-cli-bundle-"));
  metafile = (await buildCli({ outdir })) as Metafile;
});
afterAll(async () => {
  await rm(outdir, { recursive: true, force: true });
});

/** Every output file the entry chunk loads before running (static imports, transitively). */
function staticallyLoaded(): Set<string> {
  const entry = Object.keys(metafile.outputs).find((output) => metafile.outputs[output]!.entryPoint?.endsWith("apps/cli/src/main.ts"));
  expect(entry).toBeDefined();
  const seen = new Set<string>();
  const visit = (output: string) => {
    if (seen.has(output)) return;
    seen.add(output);
    for (const imported of metafile.outputs[output]?.imports ?? []) {
      if (imported.kind === "import-statement" && metafile.outputs[imported.path]) visit(imported.path);
    }
  };
  visit(entry!);
  return seen;
}

describe("switchyard CLI bundle", () => {
  it("contains no TypeScript loader", () => {
    const inputs = Object.keys(metafile.inputs);
    expect(inputs.filter((input) => /node_modules\/(tsx|esbuild|typescript)\//.test(input))).toEqual([]);
  });

  it("loads the gRPC and NATS clients only for the commands that use them", () => {
    const loadedInputs = [...staticallyLoaded()].flatMap((output) => Object.keys(metafile.outputs[output]!.inputs));
    expect(loadedInputs.filter((input) => /node_modules\/(@grpc|@nats-io)\//.test(input))).toEqual([]);
    expect(loadedInputs.filter((input) => input.includes("apps/cli/src/commands/"))).toEqual([]);
  });

  it("the bin imports no TypeScript loader up front, and uses the bundle while it is current", async () => {
    const bin = await readFile(join(BIN_DIR, "switchyard.mjs"), "utf8");
    const staticImports = [...bin.matchAll(/^import\s[^;]*?from\s+"([^"]+)"/gm)].map((match) => match[1]);
    expect(staticImports).toEqual(["./bundle-state.mjs"]);
    expect(bin).not.toMatch(/^import .*tsx/m);

    const dir = pathToFileURL(`${outdir}/`);
    expect(bundleIsCurrent(dir)).toBe(true);
    // A source file newer than the bundle (an edit since the build): the bin runs the source instead.
    await utimes(join(outdir, "inputs.json"), new Date(1_000), new Date(1_000));
    expect(bundleIsCurrent(dir)).toBe(false);
    expect(bundleIsCurrent(pathToFileURL(join(outdir, "missing/")))).toBe(false);
  });

  it("prints its help through the bin", async () => {
    const { stdout } = await execFileAsync(process.execPath, [join(BIN_DIR, "switchyard.mjs"), "--help"], { cwd: ROOT, timeout: 60_000 });
    expect(stdout).toContain("Usage: switchyard <command>");
  });
});
