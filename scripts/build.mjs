// Bundles every service that has a services/<name>/src/main.ts into
// services/<name>/dist/main.js with esbuild, and each of its worker-thread entries
// (src/**/<name>.worker.ts) into dist/<name>.worker.js beside it. A service with a web app (services/<name>/web,
// the console) also gets it built into services/<name>/dist/web by its scripts/build-web.mjs.
//
// The @switchyard/* workspace packages export TypeScript source, so they are
// bundled. Third-party packages declared in the "dependencies" (or peer/optional
// dependencies) of any package.json in the repo stay external: they are
// installed at run time by `npm ci --omit=dev`. Anything else the code imports
// (for example a package that is only present as a dev or transitive
// dependency) is bundled, so production images do not miss it; the build lists
// those packages so the choice stays visible.
//
// Usage: node scripts/build.mjs            (npm run build)
//        import { buildServices } from "./build.mjs"

import { existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

// ESM output has no `require`; bundled CommonJS code that calls require() for
// Node built-ins or external packages needs one.
const BANNER = [
  'import { createRequire as __switchyardCreateRequire } from "node:module";',
  "const require = __switchyardCreateRequire(import.meta.url);",
].join("\n");

/** Names of the services with a src/main.ts, sorted. */
export function findServices() {
  const servicesDir = path.join(ROOT, "services");
  if (!existsSync(servicesDir)) return [];
  return readdirSync(servicesDir)
    .filter((name) => existsSync(path.join(servicesDir, name, "src", "main.ts")))
    .sort();
}

/** A service's worker-thread entries: every *.worker.ts under its src, sorted. */
function workerEntries(srcDir) {
  return readdirSync(srcDir, { recursive: true })
    .filter((file) => file.endsWith(".worker.ts"))
    .map((file) => path.join(srcDir, file))
    .sort();
}

function readJson(file) {
  return JSON.parse(readFileSync(file, "utf8"));
}

/** package.json files of the root and of every workspace package (the globs in the root's "workspaces"). */
function packageJsonFiles() {
  const files = [path.join(ROOT, "package.json")];
  const expand = (dir, parts) => {
    if (parts.length === 0) return existsSync(path.join(dir, "package.json")) ? [path.join(dir, "package.json")] : [];
    const [head, ...rest] = parts;
    if (head !== "*") return expand(path.join(dir, head), rest);
    if (!existsSync(dir)) return [];
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort()
      .flatMap((name) => expand(path.join(dir, name), rest));
  };
  for (const pattern of readJson(path.join(ROOT, "package.json")).workspaces) files.push(...expand(ROOT, pattern.split("/")));
  return files;
}

/** Third-party packages declared as run-time dependencies anywhere in the repo, sorted. */
export function externalPackages() {
  const names = new Set();
  for (const file of packageJsonFiles()) {
    const pkg = readJson(file);
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
      for (const name of Object.keys(pkg[field] ?? {})) {
        if (!name.startsWith("@switchyard/")) names.add(name);
      }
    }
  }
  return [...names].sort();
}

/** "node_modules/@scope/name/x.js" -> "@scope/name" (the innermost node_modules). */
function packageOfInput(input) {
  const parts = input.split("/");
  const at = parts.lastIndexOf("node_modules");
  if (at < 0) return undefined;
  const first = parts[at + 1];
  if (!first) return undefined;
  return first.startsWith("@") ? `${first}/${parts[at + 2]}` : first;
}

function formatSize(bytes) {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${(bytes / 1024).toFixed(1)} kB`;
}

/**
 * Builds every service. Returns [{ name, outfile }]. Throws when esbuild fails
 * (esbuild has already printed the errors).
 */
export async function buildServices({ quiet = false } = {}) {
  const started = performance.now();
  const services = findServices();
  const external = externalPackages();
  const log = quiet ? () => {} : (line) => console.log(line);

  if (services.length === 0) {
    log("build: no services/*/src/main.ts found; nothing to build");
    return [];
  }

  const results = await Promise.all(
    services.map(async (name) => {
      const serviceDir = path.join(ROOT, "services", name);
      const outdir = path.join(serviceDir, "dist");
      rmSync(outdir, { recursive: true, force: true });
      const outfile = path.join(outdir, "main.js");
      const srcDir = path.join(serviceDir, "src");
      const result = await build({
        absWorkingDir: ROOT,
        entryPoints: [path.join(srcDir, "main.ts"), ...workerEntries(srcDir)],
        // Flat: a worker entry is found beside main.js (new URL("./x.worker.js", import.meta.url)).
        outdir,
        entryNames: "[name]",
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        external,
        banner: { js: BANNER },
        sourcemap: true,
        metafile: true,
        logLevel: "warning",
      });
      const bundledThirdParty = new Set();
      for (const input of Object.keys(result.metafile.inputs)) {
        const pkg = packageOfInput(input);
        if (pkg) bundledThirdParty.add(pkg);
      }
      const web = await buildWebApp(serviceDir);
      return { name, outfile, bundledThirdParty: [...bundledThirdParty].sort(), web };
    }),
  );

  for (const { outfile, bundledThirdParty, web } of results) {
    const rel = path.relative(ROOT, outfile);
    log(`build: ${rel}  ${formatSize(statSync(outfile).size)}  (+ ${path.basename(outfile)}.map)`);
    if (web) log(`       web app: ${web.map(({ file, size }) => `${path.relative(ROOT, file)} ${formatSize(size)}`).join(", ")}`);
    if (bundledThirdParty.length > 0) {
      log(`       bundled (not a declared dependency): ${bundledThirdParty.join(", ")}`);
    }
  }
  log(`build: ${results.length} service(s) in ${Math.round(performance.now() - started)} ms; external: ${external.join(", ")}`);
  return results.map(({ name, outfile }) => ({ name, outfile }));
}

/** Builds a service's web app into its dist/web when it has one; returns the files written. */
async function buildWebApp(serviceDir) {
  const script = path.join(serviceDir, "scripts", "build-web.mjs");
  if (!existsSync(path.join(serviceDir, "web")) || !existsSync(script)) return undefined;
  const { buildConsoleWeb } = await import(pathToFileURL(script).href);
  const outdir = path.join(serviceDir, "dist", "web");
  const { files } = await buildConsoleWeb({ outdir });
  return files.map((name) => ({ file: path.join(outdir, name), size: statSync(path.join(outdir, name)).size }));
}

const invokedDirectly = process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  buildServices().catch((error) => {
    // esbuild has printed its own diagnostics; keep the tail short.
    if (!error?.errors) console.error(error);
    console.error("build failed");
    process.exit(1);
  });
}
