// Postgres access for the host: one pool, and transactions as the unit of every authoritative change.
import pg from "pg";

export type Db = pg.Pool;
export type Tx = pg.PoolClient;

export function createDb(connectionString: string, max = 10): Db {
  const pool = new pg.Pool({ connectionString, max });
  // An idle client's error (server restart) must not crash the host; the next query reports it.
  pool.on("error", () => {});
  return pool;
}

/** Runs fn in one transaction; rolls back on any throw and rethrows. */
export async function withTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
