import { defineConfig } from "vitest/config";

export default defineConfig({
  // Workspace packages that publish a build (libs/sdk/webhook-verify) are read from source in tests.
  resolve: { conditions: ["switchyard-source", "module", "node", "import", "default"] },
  ssr: { resolve: { conditions: ["switchyard-source", "node", "import", "default"] } },
  test: {
    include: [
      "libs/*/*/src/**/*.test.ts",
      "apps/*/src/**/*.test.ts",
      "libs/*/*/test/**/*.test.ts",
      "apps/*/test/**/*.test.ts",
      "services/*/src/**/*.test.ts",
      "services/*/test/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Integration tests start real servers; two at a time suits a 2-core machine.
    maxWorkers: 2,
  },
});
