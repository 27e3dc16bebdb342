// Database faults for tests: terminating the host's Postgres backends (the pool names them
// `pi-host ...` in pg_stat_activity) from an admin connection of the test's own.
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import type { Stack } from "./stack.ts";
import { ADMIN_URL } from "./test-db.ts";

/** For the calling file: `terminate(ms)` ends every backend of the host after `ms`; returns how many. */
export function useBackendTerminator(stack: Stack): (ms: number) => Promise<number> {
  let admin: pg.Client | undefined;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: ADMIN_URL });
    admin.on("error", () => {});
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
  });
  return async (ms) => {
    await new Promise((r) => setTimeout(r, ms));
    const r = await admin!.query(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND application_name LIKE 'pi-host%'`,
      [stack.db.name],
    );
    return r.rows[0].n;
  };
}
