// Rows of permission_requests and permission_grants as the permission gate writes them: a new
// request, the host's conditional denial, and a person's answer (with the allow-session grant).
import type { ErrorCode } from "../../protocol/error-codes.ts";
import type { PermissionDecision, PermissionRisk } from "../../protocol/permission-schemas.ts";
import type { Db, Tx } from "./db.ts";
import { timePosition, timeWindow } from "./keyset-sql.ts";
import { memberApproversSql, ownsOrApprovesSql } from "./project-members.ts";

export interface PermissionRequestRow {
  id: string;
  session_id: string;
  turn_id: string;
  tool_call_id: string;
  tool: string;
  status: "pending" | "allowed" | "denied";
  risk: PermissionRisk | null;
  args_preview: Record<string, unknown>;
  decision: PermissionDecision | null;
  principal: string | null;
  code: ErrorCode | null;
  created_at: Date;
  deadline: Date;
  resolved_at: Date | null;
}

export async function insertPermissionRequest(
  tx: Tx,
  r: {
    id: string;
    sessionId: string;
    turnId: string;
    toolCallId: string;
    tool: string;
    createdAt: Date;
    deadline: Date;
    risk: PermissionRisk;
    preview: Record<string, unknown>;
  },
): Promise<void> {
  await tx.query(
    `INSERT INTO permission_requests (id, session_id, turn_id, tool_call_id, tool, status, created_at, deadline, risk, args_preview)
     VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9)`,
    [
      r.id,
      r.sessionId,
      r.turnId,
      r.toolCallId,
      r.tool,
      r.createdAt,
      r.deadline,
      r.risk,
      JSON.stringify(r.preview),
    ],
  );
}

/** The host denies a request that is still pending; false when an answer was committed first. */
export async function denyPendingRequest(
  tx: Tx,
  requestId: string,
  code: string,
  at: Date,
): Promise<boolean> {
  const u = await tx.query(
    `UPDATE permission_requests SET status = 'denied', decision = 'deny', code = $2, resolved_at = $3
     WHERE id = $1 AND status = 'pending'`,
    [requestId, code, at],
  );
  return u.rowCount === 1;
}

/** The request with its session's owner and approvers, locked for the answer; null if there is none. */
export async function lockRequestForAnswer(
  tx: Tx,
  requestId: string,
): Promise<(PermissionRequestRow & { owner: string; approvers: string[] }) | null> {
  const r = await tx.query<PermissionRequestRow & { owner: string; approvers: string[] }>(
    `SELECT pr.*, s.owner, ${memberApproversSql("s")} AS approvers FROM permission_requests pr JOIN sessions s ON s.id = pr.session_id
     WHERE pr.id = $1 FOR UPDATE OF pr`,
    [requestId],
  );
  return r.rows[0] ?? null;
}

/** Records the answer of a locked request; allow-session also records the (session, tool) grant. */
export async function answerRequest(
  tx: Tx,
  row: PermissionRequestRow,
  a: {
    status: string;
    decision: PermissionDecision;
    code: string | null;
    principal: string | null;
    at: Date;
  },
  grantedBy: string,
): Promise<PermissionRequestRow> {
  const u = await tx.query<PermissionRequestRow>(
    `UPDATE permission_requests SET status = $2, decision = $3, code = $4, principal = $5, resolved_at = $6
     WHERE id = $1 RETURNING *`,
    [row.id, a.status, a.decision, a.code, a.principal, a.at],
  );
  if (a.decision === "allow-session") {
    await tx.query(
      `INSERT INTO permission_grants (session_id, tool, granted_by, request_id, created_at)
       VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id, tool) DO NOTHING`,
      [row.session_id, row.tool, grantedBy, row.id, a.at],
    );
  }
  return u.rows[0]!;
}

/**
 * One page of the pending, not yet due requests of sessions the principal owns or approves,
 * oldest first: a keyset on (created_at, id) after `after`. The rows come with their position and
 * the page's `limit` (the rows are `limit + 1` at most), for boundPage.
 */
export async function pendingRequestsFor(
  q: Db | Tx,
  principal: string,
  at: Date,
  p: { sessionId?: string | undefined; limit?: number | undefined; after?: string | undefined },
): Promise<{ rows: Array<PermissionRequestRow & { position: string }>; limit: number }> {
  const w = timeWindow(
    { limit: p.limit, cursor: p.after },
    { time: "pr.created_at", id: "pr.id", direction: "after", first: 4 },
  );
  const r = await q.query<PermissionRequestRow & { position_us: string }>(
    `SELECT pr.*, ${w.select} FROM permission_requests pr JOIN sessions s ON s.id = pr.session_id
     WHERE pr.status = 'pending' AND pr.deadline > $1 AND ($2::text IS NULL OR pr.session_id = $2)
       AND ${ownsOrApprovesSql("s", "$3")} AND ${w.condition}
     ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [at, p.sessionId ?? null, principal, ...w.params],
  );
  const rows = r.rows.map((row) => ({ ...row, position: timePosition(row) }));
  return { rows, limit: w.limit };
}
