// Runs the schema migrations in migrations/ (node-pg-migrate), advisory-locked so hosts starting
// together are safe. Each migration is its own transaction: a failed one leaves the previous schema.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { runner } from "node-pg-migrate";

export const MIGRATIONS_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../migrations",
);

export interface MigrateOptions {
  databaseUrl: string;
  /** Stop after this many migrations (tests start from the legacy layout). */
  count?: number;
  log?: (line: string) => void;
}

/** Applies pending migrations; returns the names applied (empty when up to date). */
export async function migrateUp(opts: MigrateOptions): Promise<string[]> {
  const applied = await runner({
    databaseUrl: opts.databaseUrl,
    dir: MIGRATIONS_DIR,
    migrationsTable: "pgmigrations",
    direction: "up",
    count: opts.count ?? Number.POSITIVE_INFINITY,
    singleTransaction: false,
    checkOrder: true,
    // A second host starting at the same time waits for the first one's migrations instead of failing.
    advisoryLockMode: "wait",
    log: opts.log ?? (() => {}),
    verbose: false,
  });
  return applied.map((m) => m.name);
}
