// `npm run image:proof`: tests/deploy-image.proof.ts alone, against the root filesystem that
// infra/image-rootfs.sh made (slow: not part of `npm test`). Its Postgres and NATS as every
// integration file's (tests/support/global-setup.ts).
import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: path.resolve(import.meta.dirname, "../.."),
  test: {
    include: ["tests/deploy-image.proof.ts"],
    globalSetup: ["tests/support/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
