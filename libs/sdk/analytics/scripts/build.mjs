// Builds the publishable package into libs/sdk/analytics/dist (npm run build; npm pack runs it too):
//  - dist/index.js: one ESM bundle (esbuild). The workspace's @switchyard/* packages (call rules,
//    generated contracts) are bundled in, so the package stands alone; its "dependencies" stay
//    external and are installed with it.
//  - dist/*.d.ts: declarations (tsc). The public ones (index.d.ts and what it imports) name no
//    workspace package.
import { cpSync, existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { build } from "esbuild";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(PACKAGE_DIR, "dist");
const manifest = JSON.parse(readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8"));
const require = createRequire(import.meta.url);

// Built beside dist and swapped in at the end: code that imports the package while it is rebuilt
// (`npm pack` in a test, next to a test running the README's snippet) never finds dist half made.
const BUILD = path.join(PACKAGE_DIR, `dist.building-${process.pid}`);
rmSync(BUILD, { recursive: true, force: true });

await build({
  entryPoints: [path.join(PACKAGE_DIR, "src/index.ts")],
  outfile: path.join(BUILD, "index.js"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: Object.keys(manifest.dependencies ?? {}),
  legalComments: "none",
  logLevel: "warning",
});

const tsc = require.resolve("typescript/bin/tsc");
const types = path.join(BUILD, ".types");
execFileSync(process.execPath, [tsc, "-p", path.join(PACKAGE_DIR, "tsconfig.build.json"), "--outDir", types], { stdio: "inherit" });
// tsc mirrors the repository layout under rootDir; keep only this package's declarations.
cpSync(path.join(types, "libs/sdk/analytics/src"), BUILD, { recursive: true });
rmSync(types, { recursive: true, force: true });
const old = path.join(PACKAGE_DIR, `dist.old-${process.pid}`);
if (existsSync(DIST)) renameSync(DIST, old);
renameSync(BUILD, DIST);
rmSync(old, { recursive: true, force: true });
console.log(`built ${path.relative(process.cwd(), DIST)}`);
