// Whether apps/cli/dist holds a bundle built from the current source (see switchyard.mjs).
import { readFileSync, statSync } from "node:fs";

const distDir = new URL("../dist/", import.meta.url);
const repoRoot = new URL("../../../", import.meta.url);

/** The bundle's entry module. */
export const bundleEntry = new URL("main.js", distDir);

/**
 * True when the bundle exists and none of the repository files it was built from (listed in
 * dist/inputs.json) changed after it was written. A few dozen stat calls, cheap beside loading the source.
 * @param {URL} [dir] the bundle's directory (apps/cli/dist)
 * @returns {boolean}
 */
export function bundleIsCurrent(dir = distDir) {
  const inputsFile = new URL("inputs.json", dir);
  let builtAt;
  let inputs;
  try {
    builtAt = statSync(inputsFile).mtimeMs;
    statSync(new URL("main.js", dir));
    inputs = JSON.parse(readFileSync(inputsFile, "utf8"));
  } catch {
    return false;
  }
  if (!Array.isArray(inputs)) return false;
  for (const input of inputs) {
    try {
      if (statSync(new URL(input, repoRoot)).mtimeMs > builtAt) return false;
    } catch {
      return false; // a file was removed or renamed: rebuild
    }
  }
  return true;
}
