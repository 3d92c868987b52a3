// Run by `npm ci` / `npm install` (the root package's `prepare` lifecycle script) and by
// `npm run build`: builds what plain `node` needs from the workspace packages, so that
//  - the README's client-library snippet (`import { Analytics } from "@switchyard/analytics"`)
//    runs with `node` right after `npm ci`: the package's public export is its built
//    dist/index.js, the same file a published package ships (an export condition pointing at
//    the TypeScript source would need a loader such as tsx, which plain `node` lacks);
//  - the `switchyard` command starts from a bundle instead of transpiling its source each time.
// The `prepare` entry skips this file when it is absent: the Dockerfile runs `npm ci` on the
// package manifests alone and builds the services itself.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildCli } from "@switchyard/cli/build";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

execFileSync(process.execPath, [path.join(ROOT, "libs/sdk/analytics/scripts/build.mjs")], { stdio: "inherit", cwd: ROOT });
await buildCli();
console.log("prepare: built libs/sdk/analytics/dist and apps/cli/dist");
