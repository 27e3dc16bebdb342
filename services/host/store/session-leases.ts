// Who owns a session (docs/architecture.md "Several hosts"): the lease row and its host's state.
// Writes are refused by the lease trigger of migration 13 (PH002); this module only reads, and
// claims the lease of a legacy session that has none.
import type { Db, Tx } from "./db.ts";

export type Queryable = Db | Tx;

export type HostState = "running" | "stopped" | "dead";

export interface SessionLease {
  hostId: string;
  /** The owner host's incarnation when it took the lease. */
  incarnation: number;
  /** Grows by one on every takeover. */
  epoch: number;
  /** The owner host's state now. */
  hostState: HostState;
}

/** The session's lease and its host's state, or null when the session has no lease (or no row). */
export async function leaseOf(q: Queryable, sessionId: string): Promise<SessionLease | null> {
  const r = await q.query(
    `SELECT l.host_id, COALESCE(l.incarnation, h.incarnation) AS incarnation, l.epoch, h.state
       FROM session_leases l JOIN hosts h ON h.id = l.host_id
      WHERE l.session_id = $1`,
    [sessionId],
  );
  const row = r.rows[0];
  if (!row) return null;
  return {
    hostId: row.host_id,
    incarnation: Number(row.incarnation),
    epoch: Number(row.epoch),
    hostState: row.state,
  };
}

/**
 * A session without a lease row (created before leases existed) belongs to the first host that
 * touches it: the insert does nothing when another host got there first, and the lease as it now
 * stands is returned. Null only when the session itself does not exist.
 */
export async function claimLegacyLease(
  q: Queryable,
  p: { sessionId: string; hostId: string; at: Date },
): Promise<SessionLease | null> {
  await q.query(
    `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
     SELECT s.id, h.id, 1, $3, h.incarnation FROM sessions s, hosts h WHERE s.id = $1 AND h.id = $2
     ON CONFLICT (session_id) DO NOTHING`,
    [p.sessionId, p.hostId, p.at],
  );
  return leaseOf(q, p.sessionId);
}
