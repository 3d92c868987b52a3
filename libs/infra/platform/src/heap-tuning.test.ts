import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BRISK_SERVICE_NODE_OPTIONS, OLD_GENERATION_V8_FLAGS } from "./heap-tuning.js";

/** Exit status of a node started with these options and flags (node refuses options it does not know). */
function nodeExitWith(nodeOptions: string, flags: readonly string[]): number | null {
  return spawnSync(process.execPath, [...flags, "-e", "0"], { env: { ...process.env, NODE_OPTIONS: nodeOptions }, stdio: "ignore" }).status;
}

const repoFile = (path: string) => readFileSync(new URL(`../../../../${path}`, import.meta.url), "utf8");

// v8.setFlagsFromString ignores a flag it does not know: a misspelt one would leave V8's default in place unnoticed.
describe("ingest's and delivery's Node options and V8 flags", () => {
  it("are all known to this node", () => {
    expect(nodeExitWith(BRISK_SERVICE_NODE_OPTIONS, OLD_GENERATION_V8_FLAGS)).toBe(0);
  });

  it("would be caught misspelt", () => {
    expect(nodeExitWith(BRISK_SERVICE_NODE_OPTIONS, ["--incremental-marking-soft-triger=80"])).not.toBe(0);
  });

  // npm start (a plain .mjs script) and docker-compose.yml cannot import the constant: they spell it out.
  it("are what npm start and docker-compose.yml run ingest and delivery with", () => {
    const start = repoFile("scripts/start.mjs");
    for (const service of ["ingest", "delivery"]) expect(start).toContain(`${service}: "${BRISK_SERVICE_NODE_OPTIONS}"`);
    const compose = repoFile("docker-compose.yml");
    for (const service of ["ingest", "delivery"]) {
      const block = compose.split(/\n {2}(?=[a-z][a-z0-9-]*:\n)/).find((part) => part.startsWith(`${service}:\n`));
      expect(block, `docker-compose.yml: service ${service}`).toBeDefined();
      expect(block).toContain(`NODE_OPTIONS: ${BRISK_SERVICE_NODE_OPTIONS}`);
    }
  });
});
