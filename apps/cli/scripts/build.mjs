// Bundles the `switchyard` command into apps/cli/dist with esbuild (run by the root package's
// `prepare`, so by `npm ci`, and by `npm run build`). Transpiling the TypeScript source with tsx
// at every start cost most of the command's start-up time; the bundle starts in plain Node.
//
//  - dist/main.js: the entry chunk (argument parsing, help). Each command is a chunk of its own,
//    loaded when used (`verify` does not load the gRPC and NATS clients).
//  - dist/inputs.json: the repository files the bundle was built from; bin/switchyard.mjs falls
//    back to running the source through tsx when one of them is newer than the bundle.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = path.resolve(PACKAGE_DIR, "../..");

// ESM output has no `require`; bundled CommonJS code that calls require() needs one.
const BANNER = [
  'import { createRequire as __switchyardCreateRequire } from "node:module";',
  "const require = __switchyardCreateRequire(import.meta.url);",
].join("\n");

/**
 * Builds the CLI bundle into `outdir` (default apps/cli/dist). Returns esbuild's metafile.
 * @param {{ outdir?: string }} [options]
 */
export async function buildCli({ outdir = path.join(PACKAGE_DIR, "dist") } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { main: path.join(PACKAGE_DIR, "src/main.ts") },
    outdir,
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // The workspace packages export TypeScript source under this condition.
    conditions: ["switchyard-source"],
    banner: { js: BANNER },
    chunkNames: "chunks/[name]-[hash]",
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
  });
  const inputs = Object.keys(result.metafile.inputs)
    .filter((input) => !input.includes("node_modules/") && !input.startsWith("<"))
    .sort();
  writeFileSync(path.join(outdir, "inputs.json"), `${JSON.stringify(inputs, null, 1)}\n`);
  return result.metafile;
}

const invokedDirectly = process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  await buildCli();
  console.log(`built ${path.relative(process.cwd(), path.join(PACKAGE_DIR, "dist"))}`);
}
