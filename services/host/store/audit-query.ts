// Reading the audit log for `audit.list` (docs/protocol.md, "Audit"): a person sees the rows of the
// sessions they own or approve and of the projects they own; settings admins see every row. Newest
// first, paged by row id, bounded in rows and in bytes.
import {
  AUDIT_PAGE_MAX_BYTES,
  type AuditEntryView,
  type AuditListParams,
  type AuditPage,
} from "../../protocol/audit-schemas.ts";
import type { Db } from "./db.ts";

interface AuditRow {
  id: string;
  at: Date;
  principal: string | null;
  session_id: string | null;
  project_id: string | null;
  turn_id: string | null;
  tool_call_id: string | null;
  action: string;
  decision: string | null;
  code: string | null;
  details: Record<string, unknown> | null;
}

/**
 * One page of the rows `principal` may read (`all`: a settings admin). Access is decided in the
 * same statement that reads the rows, against the sessions' and projects' rows as they are now.
 */
export async function auditPage(
  db: Db,
  principal: string,
  all: boolean,
  p: AuditListParams,
): Promise<AuditPage> {
  const limit = p.limit ?? 50;
  const r = await db.query<AuditRow>(
    `SELECT a.id, a.at, a.principal, a.session_id, pr.id AS project_id, a.turn_id, a.tool_call_id,
            a.action, a.decision, a.code, a.details
       FROM audit_log a
       LEFT JOIN sessions s ON s.id = a.session_id
       LEFT JOIN projects pr ON pr.id = COALESCE(s.project_id, a.details->>'projectId')
      WHERE ($1::boolean
             OR s.owner = $2 OR $2 = ANY (s.approvers)
             OR (a.session_id IS NULL AND pr.owner = $2))
        AND ($3::text IS NULL OR a.session_id = $3)
        AND ($4::text IS NULL OR pr.id = $4)
        AND ($5::bigint IS NULL OR a.id < $5)
      ORDER BY a.id DESC
      LIMIT $6`,
    [all, principal, p.sessionId ?? null, p.projectId ?? null, p.before ?? null, limit + 1],
  );
  const entries: AuditEntryView[] = [];
  let bytes = 0;
  let cut = false;
  for (const row of r.rows.slice(0, limit)) {
    const entry: AuditEntryView = {
      id: Number(row.id),
      at: row.at.toISOString(),
      principal: row.principal,
      sessionId: row.session_id,
      projectId: row.project_id,
      turnId: row.turn_id,
      toolCallId: row.tool_call_id,
      action: row.action,
      decision: row.decision,
      code: row.code,
      details: row.details ?? {},
    };
    const size = Buffer.byteLength(JSON.stringify(entry));
    if (entries.length > 0 && bytes + size > AUDIT_PAGE_MAX_BYTES) {
      cut = true;
      break;
    }
    bytes += size;
    entries.push(entry);
  }
  const more = cut || r.rows.length > limit;
  return { entries, next: more && entries.length ? entries[entries.length - 1]!.id : null };
}
