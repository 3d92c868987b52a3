import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { ConfigError } from "@switchyard/platform";

/** One file of the web app, held in memory with its gzip form. */
export interface WebAsset {
  body: Buffer;
  gzip: Buffer | undefined;
  contentType: string;
  etag: string;
  /** Content-hashed names (app-3F2A....js) never change: browsers may keep them for a year. */
  immutable: boolean;
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".map": "application/json",
  ".json": "application/json",
};

/** esbuild's [name]-[hash] output names. */
const HASHED_NAME = /-[A-Z0-9]{8}\.[a-z]+$/;

/**
 * The built web app (scripts/build-web.mjs writes it), read once at start-up: a handful of
 * files, a few hundred kilobytes. Keys are URL paths ("/", "/app-XXXX.js").
 */
export function loadWebAssets(dir: string): Map<string, WebAsset> {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => statSync(path.join(dir, name)).isFile());
  } catch (error) {
    throw new ConfigError(`the console's web app is not built at ${dir}: run npm run build (or set CONSOLE_WEB_DIR)`, { cause: error });
  }
  if (!names.includes("index.html")) throw new ConfigError(`${dir} has no index.html: run npm run build (or set CONSOLE_WEB_DIR)`);
  const assets = new Map<string, WebAsset>();
  for (const name of names) {
    const body = readFileSync(path.join(dir, name));
    const contentType = CONTENT_TYPES[path.extname(name)] ?? "application/octet-stream";
    const compressible = /^(text\/|application\/json|image\/svg)/.test(contentType) && body.length > 512;
    assets.set(name === "index.html" ? "/" : `/${name}`, {
      body,
      gzip: compressible ? gzipSync(body, { level: 9 }) : undefined,
      contentType,
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
      immutable: HASHED_NAME.test(name),
    });
  }
  return assets;
}
