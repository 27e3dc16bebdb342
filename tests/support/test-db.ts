// Per-file test databases on the Postgres of DATABASE_URL (or the local default): created fresh,
// dropped after, so test files run in parallel without seeing each other's rows.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { type Resource, track } from "./leaks.ts";

export const ADMIN_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

export function databaseUrlFor(name: string, adminUrl = ADMIN_URL): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
  /** Its entry in the leak record: open until drop(). */
  resource: Resource;
  drop(): Promise<void>;
}

/**
 * The environment variable global-setup.ts names the run's migrated template database in: a copy
 * of it is a database every migration has run on, without running them again for each file.
 */
export const TEMPLATE_ENV = "PIHOST_TEST_TEMPLATE_DB";

export interface TestDatabaseOptions {
  /**
   * "migrated": a copy of the run's template, every migration applied (the host's start finds
   * nothing to do); "empty" (the default): no schema at all, as a new installation's database.
   */
  schema?: "migrated" | "empty";
}

export async function createTestDatabase(
  label: string,
  opts: TestDatabaseOptions = {},
): Promise<TestDatabase> {
  const name = `pihost_${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
  // Without the template (a file run outside the integration projects' global setup) the host
  // migrates the empty database at its start, as before.
  const template = opts.schema === "migrated" ? process.env[TEMPLATE_ENV] : undefined;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(
      `CREATE DATABASE ${name}${template ? ` TEMPLATE ${admin.escapeIdentifier(template)}` : ""}`,
    );
  } finally {
    await admin.end();
  }
  const url = databaseUrlFor(name);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on("error", () => {});
  // A client checked out and never released dies with the forced drop: that must not crash the file.
  pool.on("connect", (client) => client.on("error", () => {}));
  let dropped = false;
  const checkedOut = () => (pool.ended ? 0 : pool.totalCount - pool.idleCount);
  const dropDatabase = async () => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  };
  const db: TestDatabase = {
    name,
    url,
    pool,
    resource: { kind: "test database", name: () => name, isOpen: () => !dropped, close: () => db.drop() },
    async drop() {
      if (dropped) return;
      dropped = true;
      // pool.end() waits for checked-out clients: a leaked one is cut off by the forced drop, and
      // the pool, which would wait for its release forever, is left to end on its own.
      if (checkedOut() > 0) {
        await dropDatabase();
        void pool.end().catch(() => {});
      } else {
        await pool.end();
        await dropDatabase();
      }
    },
  };
  track(db.resource);
  track({
    kind: "pg client",
    name: () => `${checkedOut()} checked out of the pool of ${name} and not released`,
    isOpen: () => !dropped && checkedOut() > 0,
    close: () => db.drop(),
  });
  return db;
}

/** Whether a database of this name exists on the admin server (a dropped test database must not). */
export async function databaseExists(name: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return (await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount === 1;
  } finally {
    await c.end();
  }
}

/**
 * The run's template: a database every migration has run on, which nobody may connect to (so any
 * number of files can copy it at once), dropped by the returned function.
 */
export async function createMigratedTemplate(
  adminUrl: string,
  migrate: (databaseUrl: string) => Promise<unknown>,
): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `pihost_template_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    await migrate(databaseUrlFor(name, adminUrl));
    await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
  } finally {
    await admin.end();
  }
  return {
    name,
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
