// Per-file test databases on the Postgres of DATABASE_URL (or the local default): created fresh,
// dropped after, so test files run in parallel without seeing each other's rows.
import { randomBytes } from "node:crypto";
import pg from "pg";

export const ADMIN_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

export function databaseUrlFor(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
  drop(): Promise<void>;
}

export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `pihost_${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrlFor(name);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on("error", () => {});
  return {
    name,
    url,
    pool,
    async drop() {
      await pool.end();
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
