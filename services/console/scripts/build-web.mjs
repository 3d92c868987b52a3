// Bundles the console's web app (services/console/web) with esbuild into static files the
// console serves: index.html, app-<hash>.js and app-<hash>.css. Everything is bundled (Preact
// included), so the console needs no CDN and works offline; content-hashed names let browsers
// keep the files for good. scripts/build.mjs runs it into services/console/dist/web.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = path.resolve(PACKAGE_DIR, "../..");

/** The browsers the bundle is written for: any released since 2023. */
const TARGETS = ["chrome110", "firefox115", "safari16"];

/** A small favicon, inline (the page may load images from data: URLs, nothing else outside its origin). */
const FAVICON =
  "data:image/svg+xml," +
  encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d4ed8"/><path d="M3 5h7l-2-2M13 11H6l2 2" stroke="#fff" stroke-width="1.6" fill="none"/></svg>',
  );

/**
 * Builds the web app into `outdir` (default services/console/dist/web). Returns the files
 * written (names relative to outdir) and esbuild's metafile.
 * @param {{ outdir?: string, minify?: boolean }} [options]
 */
export async function buildConsoleWeb({ outdir = path.join(PACKAGE_DIR, "dist", "web"), minify = true } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { app: path.join(PACKAGE_DIR, "web", "main.tsx") },
    outdir,
    entryNames: "[name]-[hash]",
    bundle: true,
    format: "esm",
    platform: "browser",
    target: TARGETS,
    jsx: "automatic",
    jsxImportSource: "preact",
    minify,
    define: { "process.env.NODE_ENV": '"production"' },
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
  });
  const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
  const script = outputs.find((name) => name.endsWith(".js"));
  const style = outputs.find((name) => name.endsWith(".css"));
  if (!script || !style) throw new Error(`the web build made no script or stylesheet (${outputs.join(", ")})`);
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>Switchyard console</title>
<link rel="icon" href="${FAVICON}">
<link rel="stylesheet" href="/${style}">
<script type="module" src="/${script}"></script>
</head>
<body>
<div id="app"><p class="boot">Loading the Switchyard console…</p></div>
<noscript>The Switchyard console needs JavaScript.</noscript>
</body>
</html>
`;
  writeFileSync(path.join(outdir, "index.html"), html);
  return { files: ["index.html", ...outputs], metafile: result.metafile };
}
