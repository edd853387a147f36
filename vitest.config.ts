import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["alma-source"] },
  ssr: { resolve: { conditions: ["alma-source"] } },
  test: {
    include: [
      "packages/*/test/**/*.test.ts",
      "apps/*/test/**/*.test.ts",
      "scripts/test/**/*.test.ts",
    ],
    pool: "forks",
    testTimeout: 20000,
  },
});
