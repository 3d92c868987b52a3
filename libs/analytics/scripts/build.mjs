// Builds the publishable package into libs/analytics/dist (npm run build; npm pack runs it too):
//  - dist/index.js: one ESM bundle (esbuild). The workspace's @switchyard/* packages (call rules,
//    generated contracts) are bundled in, so the package stands alone; its "dependencies" stay
//    external and are installed with it.
//  - dist/*.d.ts: declarations (tsc). The public ones (index.d.ts and what it imports) name no
//    workspace package.
import { cpSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { build } from "esbuild";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(PACKAGE_DIR, "dist");
const manifest = JSON.parse(readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8"));
const require = createRequire(import.meta.url);

rmSync(DIST, { recursive: true, force: true });

await build({
  entryPoints: [path.join(PACKAGE_DIR, "src/index.ts")],
  outfile: path.join(DIST, "index.js"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: Object.keys(manifest.dependencies ?? {}),
  legalComments: "none",
  logLevel: "warning",
});

const tsc = require.resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", path.join(PACKAGE_DIR, "tsconfig.build.json")], { stdio: "inherit" });
// tsc mirrors the repository layout under rootDir; keep only this package's declarations.
cpSync(path.join(DIST, ".types/libs/analytics/src"), DIST, { recursive: true });
rmSync(path.join(DIST, ".types"), { recursive: true, force: true });
console.log(`built ${path.relative(process.cwd(), DIST)}`);
