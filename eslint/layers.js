// @ts-check
// The house's layering as a lint rule (switchyard/layers). Every import is checked against:
//  - the layers: a package imports only packages of a lower layer (never a sibling of its own layer,
//    so services stay independent), published SDKs import no workspace package, and only tests
//    import test support;
//  - package boundaries: another package is imported by its name, never by a relative path, and
//    never from its test folder;
//  - declared dependencies: a bare import names a package the importer's package.json declares
//    (dependencies for shipped code; devDependencies too for tests, scripts and benchmarks).
import { existsSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";

/**
 * Each workspace package's layer, lowest first. A package may import packages of a lower layer only.
 * The SDKs are published on their own, so they stand apart: nothing of ours below them.
 */
const ROOT_PACKAGE = "switchyard";

export const LAYERS = [
  { name: "generated contracts", packages: ["@switchyard/contracts"] },
  { name: "call model", packages: ["@switchyard/calls"] },
  { name: "mapping languages", packages: ["@switchyard/mappings"] },
  { name: "wire codecs", packages: ["@switchyard/wire"] },
  { name: "platform", packages: ["@switchyard/platform"] },
  { name: "bus", packages: ["@switchyard/bus"] },
  { name: "workspace", packages: ["@switchyard/workspace"] },
  { name: "service parts", packages: ["@switchyard/config-service", "@switchyard/runtime"] },
  {
    name: "apps",
    packages: [
      "@switchyard/ingest",
      "@switchyard/delivery",
      "@switchyard/insights",
      "@switchyard/audience-sync",
      "@switchyard/console",
      "@switchyard/cli",
    ],
  },
  { name: "test support", packages: ["@switchyard/testkit"] },
  { name: "the repository (tests, benchmarks, scripts)", packages: [ROOT_PACKAGE] },
];
const SDKS = new Set(["@switchyard/analytics", "@switchyard/webhook-verify"]);
const TEST_SUPPORT = "@switchyard/testkit";
/** The layers a published SDK may bundle into its build (declared as its devDependencies). */
const SDK_BUNDLES = ["@switchyard/contracts", "@switchyard/calls", "@switchyard/wire"];

const BUILTINS = new Set(builtinModules);
const packageCache = new Map();

/** The package a file belongs to: its nearest package.json, read once. */
function packageOf(file) {
  let dir = path.dirname(file);
  for (;;) {
    const cached = packageCache.get(dir);
    if (cached !== undefined) return cached;
    const manifest = path.join(dir, "package.json");
    if (existsSync(manifest)) {
      const json = JSON.parse(readFileSync(manifest, "utf8"));
      const found = {
        dir,
        name: json.name,
        dependencies: new Set(Object.keys({ ...json.dependencies, ...json.peerDependencies })),
        devDependencies: new Set(Object.keys({ ...json.devDependencies })),
      };
      packageCache.set(dir, found);
      return found;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function layerOf(name) {
  return LAYERS.findIndex((layer) => layer.packages.includes(name));
}

/**
 * Tests, benchmarks, scripts and the console's browser bundle may use devDependencies (their own and
 * the repository's shared tools, declared once at the root) and test support; shipped code may not.
 */
function isTestOrTool(own, file) {
  const inside = path.relative(own.dir, file).split(path.sep);
  return (
    ["test", "bench", "scripts", "web"].includes(inside[0]) ||
    /\.test\.tsx?$/.test(file) ||
    own.name === TEST_SUPPORT ||
    own.name === ROOT_PACKAGE
  );
}

function bareName(specifier) {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** @type {import("eslint").Rule.RuleModule} */
const layersRule = {
  meta: {
    type: "problem",
    docs: { description: "Imports follow the package layers, stay out of other packages' tests, and are declared." },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const own = packageOf(file);
    if (!own) return {};
    const forTests = isTestOrTool(own, file);
    const root = packageOf(path.join(context.cwd, "package.json"));
    const sharedTools = forTests && root ? root.devDependencies : new Set();

    function check(node, specifier) {
      if (typeof specifier !== "string") return;
      if (specifier.startsWith(".")) {
        const target = path.resolve(path.dirname(file), specifier);
        const theirs = packageOf(target);
        if (!theirs || theirs.dir === own.dir) return;
        const inside = path.relative(theirs.dir, target).split(path.sep);
        const where = inside[0] === "test" ? `the test folder of ${theirs.name}` : theirs.name;
        context.report({
          node,
          message: `"${specifier}" reaches into ${where} by a relative path: import the package by its name (${theirs.name}), and keep shared test helpers in ${TEST_SUPPORT}`,
        });
        return;
      }
      if (specifier.startsWith("node:") || BUILTINS.has(specifier.split("/")[0])) return;
      const name = bareName(specifier);
      if (name === own.name) return;
      const bundled = SDKS.has(own.name) && SDK_BUNDLES.includes(name) && own.devDependencies.has(name);
      const declared = bundled || own.dependencies.has(name) || (forTests && (own.devDependencies.has(name) || sharedTools.has(name)));
      if (!declared) {
        const where = forTests ? "dependencies or devDependencies" : "dependencies";
        context.report({ node, message: `"${name}" is not declared in ${own.name}'s package.json ${where}` });
        return;
      }
      if (!name.startsWith("@switchyard/")) return;
      if (name === TEST_SUPPORT) {
        if (!forTests) context.report({ node, message: `${TEST_SUPPORT} is test support: only tests, benchmarks and scripts import it` });
        return;
      }
      if (SDKS.has(own.name)) {
        if (!forTests && !bundled) {
          context.report({
            node,
            message: `${own.name} is published on its own: it bundles only ${SDK_BUNDLES.join(", ")} (as devDependencies), not ${name}`,
          });
        }
        return;
      }
      // The SDKs are for anyone: the CLI verifies signatures with the published verifier.
      if (SDKS.has(name)) return;
      const from = layerOf(own.name);
      const to = layerOf(name);
      if (from === -1 || to === -1) {
        const unknown = from === -1 ? own.name : name;
        context.report({ node, message: `${unknown} has no layer: add it to LAYERS in eslint/layers.js` });
      } else if (to >= from) {
        const rule = to === from ? "packages of one layer do not import each other" : "a package imports only lower layers";
        context.report({
          node,
          message: `${own.name} (layer "${LAYERS[from].name}") imports ${name} (layer "${LAYERS[to].name}"): ${rule} (eslint/layers.js)`,
        });
      }
    }

    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === "Literal" && check(node.source, node.source.value),
    };
  },
};

export const layersPlugin = { rules: { layers: layersRule } };
