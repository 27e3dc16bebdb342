// What the tests of `npm start` (services/start) share: data folders the `postgres` system user can
// enter (embedded Postgres runs as it under root), removed after the file, and a logger whose JSON
// lines the test reads back.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createLogger } from "../../services/runtime/log.ts";

export function dataDirs() {
  const dirs: string[] = [];
  return {
    /** A fresh data folder, mode 0755. */
    dataDir(label: string): string {
      const dir = mkdtempSync(path.join(os.tmpdir(), `pihost-${label}-`));
      chmodSync(dir, 0o755);
      dirs.push(dir);
      return dir;
    },
    removeAll(): void {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function captureLog() {
  const events: Array<Record<string, unknown>> = [];
  const log = createLogger("test", (line) => events.push(JSON.parse(line)));
  return { log, events, find: (event: string) => events.filter((e) => e.event === event) };
}
