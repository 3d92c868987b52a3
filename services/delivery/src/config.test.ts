import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { DELIVERY_NODE_OPTIONS, DELIVERY_V8_FLAGS } from "./config.js";

/** Exit status of a node started with these options and flags (node refuses options it does not know). */
function nodeExitWith(nodeOptions: string, flags: readonly string[]): number | null {
  return spawnSync(process.execPath, [...flags, "-e", "0"], { env: { ...process.env, NODE_OPTIONS: nodeOptions }, stdio: "ignore" }).status;
}

// v8.setFlagsFromString ignores a flag it does not know: a misspelt one would leave V8's default in place unnoticed.
describe("delivery's Node options and V8 flags", () => {
  it("are all known to this node", () => {
    expect(nodeExitWith(DELIVERY_NODE_OPTIONS, DELIVERY_V8_FLAGS)).toBe(0);
  });

  it("would be caught misspelt", () => {
    expect(nodeExitWith(DELIVERY_NODE_OPTIONS, ["--incremental-marking-soft-triger=80"])).not.toBe(0);
  });
});
