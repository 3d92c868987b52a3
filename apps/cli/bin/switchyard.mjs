#!/usr/bin/env node
// The `switchyard` command. It runs the bundle in ../dist (built by `npm ci` through the root
// package's `prepare`, or `npm run build`) in this process: plain Node starts it in a fraction of
// the time tsx takes to transpile the source.
//
// Without a bundle, or when a source file it was built from is newer (an edit since the last
// build), it runs the TypeScript source through tsx instead, so the command always matches the
// source. A child Node process is used then because the workspace packages are read from source
// through the `switchyard-source` export condition, which only a command-line flag can turn on.
import { bundleIsCurrent, bundleEntry } from "./bundle-state.mjs";

// Node's notices (e.g. about TLS to an IP address) are not the command's output.
process.noDeprecation = true;

if (bundleIsCurrent()) {
  await import(bundleEntry.href);
} else {
  const { runFromSource } = await import("./run-from-source.mjs");
  runFromSource(process.argv.slice(2));
}
