import { defineConfig } from "vitest/config";
import SlowFirst from "./tests/support/slow-first.ts";

// Unit tests sit beside their modules; suites that cross process boundaries live in tests/.
// Integration files each create their own database and NATS prefix, so files run in parallel,
// but the machine has 2 cores: keep the pool small. Their Postgres and NATS: tests/support/global-setup.ts.
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
          maxWorkers: 2,
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
