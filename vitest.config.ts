import { defineConfig } from "vitest/config";
import SlowFirst from "./tests/support/slow-first.ts";

// Unit tests sit beside their modules; suites that cross process boundaries live in tests/.
// Integration files each create their own database and NATS prefix, so files run in parallel,
// on the 2 cores of the machine. Their Postgres and NATS: tests/support/global-setup.ts.
export default defineConfig({
  test: {
    // Every run ends with its 20 slowest files; files under tests/slow/ start first.
    reporters: ["default", "./tests/support/slowest-files.ts"],
    sequence: { sequencer: SlowFirst },
    projects: [
      {
        test: {
          name: "unit",
          include: ["services/**/*.test.ts", "machines/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["tests/**/*.test.ts"],
          exclude: ["tests/solo/**"],
          globalSetup: ["tests/support/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Mostly waiting on processes, leases and the database: four files at a time keep both
          // cores busy (two left them idle a third of the time). Files share a worker's module
          // cache (no per-file re-import of the host's modules): no integration file mocks a module
          // or changes process.env, and each stack is its own database and subject prefix.
          maxWorkers: 4,
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // Files that measure latency against a baseline run after every other file, one at a time,
        // so the rest of the suite's load is not what they measure.
        test: {
          name: "solo",
          include: ["tests/solo/**/*.test.ts"],
          globalSetup: ["tests/support/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
