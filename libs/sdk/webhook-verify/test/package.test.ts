import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";

/**
 * The published package is the ESM build in dist/ (with .d.ts) behind the exports map,
 * not the TypeScript source the workspace uses. Build it into a temporary folder and
 * check it loads in plain Node with nothing but node: built-ins.
 */
const run = promisify(execFile);
const packageDir = resolve(import.meta.dirname, "..");
let outDir: string | undefined;

afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

it("builds to dependency-free ESM with type declarations", async () => {
  const pkg = JSON.parse(await readFile(join(packageDir, "package.json"), "utf8"));
  expect(pkg.dependencies ?? {}).toEqual({});
  expect(pkg.exports["."]).toMatchObject({ types: "./dist/index.d.ts", import: "./dist/index.js" });

  outDir = await mkdtemp(join(tmpdir(), "webhook-verify-build-"));
  const tsc = resolve(packageDir, "../../../node_modules/typescript/bin/tsc");
  await run(process.execPath, [tsc, "-p", join(packageDir, "tsconfig.build.json"), "--outDir", outDir]);
  const files = await readdir(outDir);
  expect(files).toEqual(expect.arrayContaining(["index.js", "index.d.ts", "x-signature.js", "standard-webhooks.d.ts"]));

  for (const file of files.filter((name) => name.endsWith(".js"))) {
    const code = await readFile(join(outDir, file), "utf8");
    const imports = [...code.matchAll(/from "([^"]+)"/g)].map((match) => match[1]);
    for (const specifier of imports) expect(specifier, `${file} imports ${specifier}`).toMatch(/^(node:|\.\/)/);
  }

  const script = `import { signXSignature } from ${JSON.stringify(join(outDir, "index.js"))}; process.stdout.write(signXSignature("what do ya want for nothing?", "Jefe"));`;
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script]);
  expect(stdout).toBe("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
});
