// Postgres access for the host: one pool opened as a writer (write-fenced), and transactions as the
// unit of every authoritative change (docs/architecture.md "Host start-up").
import pg from "pg";
import { AppError } from "../../protocol/app-error.ts";
import type { Result } from "../../protocol/result.ts";

export type Db = pg.Pool;
export type Tx = pg.PoolClient;

/** SQLSTATE the write fence raises for a write from a superseded incarnation. */
export const WRITE_FENCED_SQLSTATE = "PH001";
/** SQLSTATE the lease trigger raises for a write to a session another host owns (migration 13). */
export const LEASE_LOST_SQLSTATE = "PH002";

export interface Writer {
  hostId: string;
  incarnation: number;
  /** Called once, at the first write the fence refused. */
  onFenced: (message: string) => void;
  /**
   * Postgres ends a transaction left idle this long (ms): a host paused or partitioned mid-transaction
   * must not hold the locks another host's takeover waits for (docs/operations.md "Several hosts").
   */
  idleInTransactionMs?: number;
}

/**
 * A hot path's statement, prepared once per pooled connection and then only bound and executed: an
 * unnamed statement is parsed and planned on every call, which costs about as much as running it
 * (docs/performance.md "Where the time goes"). The text must be the same on every call, and the
 * result columns named, never `*` (a migration adding a column must not change the row type of a
 * statement a running host has prepared).
 */
export function prepared(name: string, text: string): (values: unknown[]) => pg.QueryConfig {
  return (values) => ({ name, text, values });
}

const fencedHandlers = new WeakMap<Db, () => (message: string) => void>();

/**
 * The host's pool. Opened as a *writer*, every connection carries the host id and the incarnation the
 * startup fence made current, and the write fence of migration 9 refuses any write from a superseded
 * incarnation (SQLSTATE PH001). The first such refusal is reported once through `onFenced`, so the
 * host stops serving; the request gets HOST_FENCED.
 */
export function createDb(connectionString: string, opts: { max?: number; writer?: Writer } = {}): Db {
  const { writer } = opts;
  if (writer && !/^[A-Za-z0-9_.-]{1,128}$/.test(writer.hostId))
    throw new Error(`host id ${JSON.stringify(writer.hostId)} may use only A-Z a-z 0-9 _ . -`);
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 10,
    // Seen in pg_stat_activity (operators, and tests that terminate the host's backends).
    application_name: writer ? `pi-host ${writer.hostId}` : "pi-host",
    ...(writer
      ? {
          options: `-c pihost.host_id=${writer.hostId} -c pihost.incarnation=${writer.incarnation}${
            writer.idleInTransactionMs
              ? ` -c idle_in_transaction_session_timeout=${Math.max(1, Math.floor(writer.idleInTransactionMs))}`
              : ""
          }`,
        }
      : {}),
  });
  // An idle client's error (server restart) must not crash the host; the next query reports it.
  pool.on("error", () => {});
  // Nor may a checked-out client's (its backend terminated mid-request): the query in flight
  // rejects with the reason, withTransaction discards the client, the reply is DATABASE_UNAVAILABLE.
  pool.on("connect", (client) => client.on("error", () => {}));
  if (writer) {
    let told = false;
    fencedHandlers.set(pool, () => (message: string) => {
      if (told) return;
      told = true;
      writer.onFenced(message);
    });
    // Single statements outside withTransaction report a refusal too.
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
    (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const r = query(...args);
      if (r instanceof Promise) r.catch((err: unknown) => noteFenced(pool, err));
      return r;
    };
  }
  return pool;
}

/** Was this error the write fence refusing a superseded incarnation? */
export function isWriteFenced(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === WRITE_FENCED_SQLSTATE;
}

/** SQLSTATE classes of a connection that is gone: 08 connection exception, 57P admin/crash shutdown. */
const LOST_SQLSTATE = /^(08|57P0[1-3])/;
const LOST_MESSAGE =
  /Connection terminated|connection error|not queryable|ECONNRESET|ECONNREFUSED|EPIPE|timeout exceeded when trying to connect/i;

/** Was this error the database connection going away (not a refusal by the database)? */
export function isConnectionLost(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e) return false;
  if (typeof e.code === "string" && LOST_SQLSTATE.test(e.code)) return true;
  if (typeof e.code === "string" && /^E(CONNRESET|CONNREFUSED|PIPE|TIMEDOUT)$/.test(e.code)) return true;
  return typeof e.message === "string" && LOST_MESSAGE.test(e.message);
}

/** The wire error for a lost database connection (retriable). */
export function lostConnectionAppError(err: unknown): AppError | null {
  return isConnectionLost(err)
    ? new AppError("DATABASE_UNAVAILABLE", undefined, { details: { reason: (err as Error).message } })
    : null;
}

/** Was this error the lease trigger refusing a write to a session another host owns? */
export function isLeaseLost(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === LEASE_LOST_SQLSTATE;
}

/**
 * The wire error for a fenced write (retriable: the current incarnation serves the retry), or for a
 * write to a session another host took over (SESSION_LEASE_LOST, retriable: the owner serves it).
 */
export function fencedAppError(err: unknown): AppError | null {
  if (isWriteFenced(err))
    return new AppError("HOST_FENCED", undefined, { details: { reason: (err as Error).message } });
  if (isLeaseLost(err))
    return new AppError("SESSION_LEASE_LOST", undefined, { details: { reason: (err as Error).message } });
  return null;
}

function noteFenced(db: Db, err: unknown): void {
  if (isWriteFenced(err)) fencedHandlers.get(db)?.()((err as Error).message);
}

/**
 * Runs fn in one transaction; rolls back on any throw and rethrows. A client whose connection was
 * lost (or whose rollback failed) is discarded, never handed to the next transaction. When COMMIT
 * itself fails with a lost connection the outcome is unknown: the error carries
 * `commitOutcomeUnknown`, and a caller that must tell the truth re-reads (plan-actors.ts).
 */
export async function withTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await db.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    try {
      await client.query("COMMIT");
    } catch (err) {
      if (isConnectionLost(err)) Object.assign(err as object, { commitOutcomeUnknown: true });
      throw err;
    }
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    if (isConnectionLost(err)) broken = true;
    noteFenced(db, err);
    throw err;
  } finally {
    client.release(broken);
  }
}

/** How a refusal leaves withRefusableTransaction's body: never seen outside it. */
class Refused {
  constructor(readonly result: Result<never>) {}
}

/**
 * A transaction whose body answers a Result: committed when it is ok, rolled back when it is a
 * refusal (nothing the body wrote stays), and the refusal returned as the value it is. Expected
 * refusals inside a transaction travel this way, never as a thrown AppError (docs/architecture.md
 * "Refusals").
 */
export async function withRefusableTransaction<T>(
  db: Db,
  fn: (tx: Tx) => Promise<Result<T>>,
): Promise<Result<T>> {
  try {
    return await withTransaction(db, async (tx) => {
      const result = await fn(tx);
      if (!result.ok) throw new Refused(result);
      return result;
    });
  } catch (err) {
    if (err instanceof Refused) return err.result;
    throw err;
  }
}

/** Whether a transaction failed in its COMMIT with the connection lost: it may or may not have committed. */
export function commitOutcomeUnknown(err: unknown): boolean {
  return (err as { commitOutcomeUnknown?: unknown } | null)?.commitOutcomeUnknown === true;
}

/**
 * Refuses to go on without the host's database: one connection within 5 s, else an error that names
 * the URL (password hidden), Postgres's own reason and the two ways to provide one.
 */
export async function checkDatabase(connectionString: string): Promise<void> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (cause) {
    const u = new URL(connectionString);
    if (u.password) u.password = "***";
    throw new Error(
      `cannot use the database ${u.toString()}: ${(cause as Error).message}. Set DATABASE_URL to the host's database, or run \`npm start\`, which finds or starts one (docs/operations.md)`,
      { cause },
    );
  } finally {
    await client.end().catch(() => {});
  }
}
