// The session a request concerns, from the field the METHODS table names (methods.ts `session`), so
// the bus can route it to the session's owner host (bus/forward.ts). Reads only; an id that names no
// row gives null, and the request is then served (and refused) where it arrived.
import type { MethodSpec } from "../../protocol/methods.ts";
import type { Db, Tx } from "./db.ts";

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
