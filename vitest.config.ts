import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Children, SQLite files and ports are per test file; two cores, so keep the fork count small.
    pool: "forks",
    maxWorkers: 2,
  },
});
