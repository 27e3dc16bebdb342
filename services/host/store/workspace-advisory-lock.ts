// The cross-host half of the workspace lock (docs/architecture.md "Tools", "Several hosts"): file
// tools and Bash commands of one workspace run one at a time on every host, because sessions of one
// project may be owned by different hosts. A Postgres session-level advisory lock keyed by the
// workspace's real path is held on a connection of its own for the tool's duration; a host that
// dies drops its connection, and Postgres releases the lock.
import pg from "pg";
import { ok, type Result, refuse } from "../../protocol/result.ts";
import { ADVISORY_LOCKS } from "./advisory-locks.ts";

/** Advisory-lock class of workspaces (advisory-locks.ts). */
const WORKSPACE_LOCK_CLASS = ADVISORY_LOCKS.workspace.key;

export interface WorkspaceAdvisoryLocks {
  /** Runs `fn` holding the workspace's lock; waiting longer than `waitMs` is refused HOST_OVERLOADED (retriable). */
  hold<T>(workspace: string, fn: () => Promise<T>): Promise<Result<T>>;
  close(): Promise<void>;
}

export function createWorkspaceAdvisoryLocks(
  connectionString: string,
  opts: { max?: number; waitMs?: number } = {},
): WorkspaceAdvisoryLocks {
  const waitMs = Math.max(1, Math.floor(opts.waitMs ?? 330_000));
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 16,
    application_name: "pi-host workspace locks",
    // Set once per connection, so holding a lock costs two round trips (lock, unlock).
    options: `-c lock_timeout=${waitMs}`,
  });
  pool.on("error", () => {});
  // From the moment a client connects, as db.ts does: a listener added after pool.connect() resolves
  // comes too late when the backend is terminated as it connects (the FATAL arrives in the same read
  // as ReadyForQuery, after the pool dropped its idle listener), and an unheard 'error' ends the host.
  pool.on("connect", (client) => client.on("error", () => {}));
  return {
    async hold<T>(workspace: string, fn: () => Promise<T>): Promise<Result<T>> {
      const client = await pool.connect();
      let locked = false;
      try {
        try {
          await client.query("SELECT pg_advisory_lock($1, hashtext($2))", [WORKSPACE_LOCK_CLASS, workspace]);
        } catch (cause) {
          // lock_not_available: the wait ran out (lock_timeout); any other failure is not a refusal.
          if ((cause as { code?: string }).code === "55P03")
            return refuse(
              "HOST_OVERLOADED",
              "another host has been running a tool in this workspace too long",
            );
          throw cause;
        }
        locked = true;
        return ok(await fn());
      } finally {
        if (locked)
          await client
            .query("SELECT pg_advisory_unlock($1, hashtext($2))", [WORKSPACE_LOCK_CLASS, workspace])
            .then(
              () => client.release(),
              // An unlock that failed: the connection goes, and the lock with it.
              (err: Error) => client.release(err),
            );
        else client.release();
      }
    },
    close: () => pool.end(),
  };
}
