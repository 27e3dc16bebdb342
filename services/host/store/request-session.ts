// The session a request concerns, from the field the METHODS table names (methods.ts `session`), so
// the bus can route it to the session's owner host (bus/forward.ts). Reads only; an id that names no
// row gives null, and the request is then served (and refused) where it arrived.
import type { MethodSpec } from "../../protocol/methods.ts";
import type { Db, Tx } from "./db.ts";
import type { HostState } from "./session-leases.ts";

export type SessionField = NonNullable<MethodSpec["session"]>;

const QUERIES: Record<Exclude<SessionField, "sessionId">, string> = {
  proposalId: "SELECT session_id FROM plan_approvals WHERE id = $1",
  requestId: "SELECT session_id FROM permission_requests WHERE id = $1",
  turnId: "SELECT session_id FROM turns WHERE id = $1",
};

/** The session id behind `id` of kind `field`, or null when no row has it. */
export async function sessionOfRequest(q: Db | Tx, field: SessionField, id: string): Promise<string | null> {
  if (field === "sessionId") return id;
  const r = await q.query(QUERIES[field], [id]);
  const sessionId: unknown = r.rows[0]?.session_id;
  return typeof sessionId === "string" ? sessionId : null;
}

/** Where a request's session lives: its id, and its lease's host and that host's state (none: no lease). */
export interface RequestOwner {
  sessionId: string;
  hostId: string | null;
  hostState: HostState | null;
}

const FROM: Record<SessionField, string> = {
  sessionId: "(SELECT $1::text AS session_id) x",
  proposalId: "plan_approvals x",
  requestId: "permission_requests x",
  turnId: "turns x",
};

/**
 * The session behind `id` of kind `field` and its owner host in one read (the bus routes by it,
 * bus/forward.ts), or null when no row has it (a session id is taken as given: its own method
 * refuses one that does not exist).
 */
export async function ownerOfRequest(
  q: Db | Tx,
  field: SessionField,
  id: string,
): Promise<RequestOwner | null> {
  const where = field === "sessionId" ? "" : "WHERE x.id = $1";
  const r = await q.query(
    `SELECT x.session_id, l.host_id, h.state FROM ${FROM[field]}
       LEFT JOIN session_leases l ON l.session_id = x.session_id LEFT JOIN hosts h ON h.id = l.host_id ${where}`,
    [id],
  );
  const row = r.rows[0];
  if (!row || typeof row.session_id !== "string") return null;
  return { sessionId: row.session_id, hostId: row.host_id ?? null, hostState: row.state ?? null };
}
