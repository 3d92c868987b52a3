import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript build script, no declarations.
import { buildConsoleWeb } from "../scripts/build-web.mjs";

/**
 * The web app takes its message types from @switchyard/contracts/json with `import type`: the
 * browser bundle must hold none of the generated runtime code (nor gRPC), only the app and Preact.
 */
describe("the console's web bundle", () => {
  it("bundles no generated contracts code and no gRPC client", async () => {
    const outdir = await mkdtemp(join(tmpdir(), "switchyard-console-web-bundle-"));
    try {
      const { metafile } = (await buildConsoleWeb({ outdir })) as { metafile: { inputs: Record<string, unknown> } };
      const inputs = Object.keys(metafile.inputs);
      expect(inputs.some((input) => input.includes("services/console/web/api.ts"))).toBe(true);
      expect(inputs.filter((input) => /libs\/core\/contracts\/|node_modules\/(@grpc|@bufbuild|long)\//.test(input))).toEqual([]);
    } finally {
      await rm(outdir, { recursive: true, force: true });
    }
  });
});
