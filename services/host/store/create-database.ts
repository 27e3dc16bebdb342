// Creates a database unless it exists: the operation behind `npm run host:create-db` and the one
// `npm start` runs on a probed Postgres. The host itself never makes its database.
import pg from "pg";

/** Connects to adminUrl within timeoutMs and creates `name` unless it exists (a racing creator is fine). */
export async function ensureDatabase(adminUrl: string, name: string, timeoutMs: number): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: timeoutMs });
  client.on("error", () => {});
  try {
    await client.connect();
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } catch (err) {
        // 42P04 duplicate_database / 23505: another process created it between our check and here.
        const code = (err as { code?: string }).code;
        if (code !== "42P04" && code !== "23505") throw err;
      }
    }
  } finally {
    await client.end().catch(() => {});
  }
}
