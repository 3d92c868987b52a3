// @ts-check
import js from "@eslint/js";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";
import importX from "eslint-plugin-import-x";
import globals from "globals";
import tseslint from "typescript-eslint";
import { layersPlugin } from "./eslint/layers.js";

export default tseslint.config(
  {
    ignores: ["**/node_modules/**", "**/dist/**", "libs/core/contracts/src/gen/**", ".data/**", "bench/results/**"],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts", "**/*.tsx"],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "import-x": importX },
    settings: {
      // The import graph is read from TypeScript sources, so no-cycle sees across .ts files.
      ...importX.flatConfigs.typescript.settings,
      "import-x/resolver-next": [createTypeScriptImportResolver({ project: "tsconfig.json" })],
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": ["error", { ignoreRestArgs: true }],
      "import-x/no-cycle": "error",
      "import-x/no-self-import": "error",
      "no-console": ["error", { allow: ["error"] }],
    },
  },
  {
    files: ["**/*.{ts,tsx,js,mjs}"],
    plugins: { switchyard: layersPlugin },
    rules: { "switchyard/layers": "error" },
  },
  {
    // Tests read loosely typed JSON answers; scripts and benchmarks print to the console.
    files: ["**/test/**/*.ts", "**/*.test.ts", "test/**/*.ts", "libs/testing/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    files: ["bench/**/*.ts", "scripts/**/*.{js,mjs,ts}"],
    rules: { "no-console": "off" },
  },
  {
    files: ["**/*.{js,mjs}"],
    languageOptions: { globals: globals.node },
  },
);
