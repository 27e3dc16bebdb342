// The rows `host.status` reads (issue #17 clause 4): every host with its lease count, for settings
// admins; and, for anyone else, which of their own sessions this host holds. Read only.
import type { Db } from "./db.ts";
import type { HostState } from "./session-leases.ts";

export interface HostStatusRow {
  hostId: string;
  state: HostState;
  incarnation: number;
  heartbeat: number;
  heartbeatAt: string;
  /** The package version the host wrote into `hosts.info` at its start, if it did. */
  version: string | null;
  /** Sessions whose lease this host holds. */
  leases: number;
}

/** Every host row with the number of session leases it holds, by id. */
export async function readHostStatusRows(db: Db): Promise<HostStatusRow[]> {
  const r = await db.query(
    `SELECT h.id, h.state, h.incarnation, h.heartbeat, h.heartbeat_at, h.info->>'version' AS version,
            (SELECT count(*)::int FROM session_leases l WHERE l.host_id = h.id) AS leases
       FROM hosts h ORDER BY h.id`,
  );
  return r.rows.map(
    (row: {
      id: string;
      state: HostState;
      incarnation: number;
      heartbeat: string | number;
      heartbeat_at: Date;
      version: string | null;
      leases: number;
    }) => ({
      hostId: row.id,
      state: row.state,
      incarnation: row.incarnation,
      heartbeat: Number(row.heartbeat),
      heartbeatAt: row.heartbeat_at.toISOString(),
      version: row.version,
      leases: row.leases,
    }),
  );
}

/**
 * Of `principal`'s own sessions: those whose lease `hostId` holds, and which of `candidates` (say,
 * the degraded sessions of this host) are theirs. No other principal's session id is returned.
 */
export async function ownSessionsHere(
  db: Db,
  p: { principal: string; hostId: string; candidates: readonly string[] },
): Promise<{ leased: string[]; owned: Set<string> }> {
  const r = await db.query(
    `SELECT s.id, (l.host_id IS NOT DISTINCT FROM $2) AS leased
       FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id
      WHERE s.owner = $1 AND (l.host_id = $2 OR s.id = ANY($3::text[]))`,
    [p.principal, p.hostId, [...p.candidates]],
  );
  const rows = r.rows as Array<{ id: string; leased: boolean }>;
  return { leased: rows.filter((x) => x.leased).map((x) => x.id), owned: new Set(rows.map((x) => x.id)) };
}
