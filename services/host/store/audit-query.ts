// Reading the audit log for `audit.list` (docs/protocol.md, "Audit"): a person sees the rows of the
// sessions they own or approve (as a member now), of the projects they own, and the rows that name
// them as the member or approver a change concerns; settings admins see every row. Newest first,
// paged by row id, bounded in rows and in bytes (services/protocol/pages.ts).
import {
  AUDIT_PAGE_MAX_BYTES,
  type AuditEntryView,
  type AuditListParams,
  type AuditPage,
} from "../../protocol/audit-schemas.ts";
import { boundPage } from "./bounded-page.ts";
import type { Db } from "./db.ts";
import { ownsOrApprovesSql } from "./project-members.ts";

/**
 * The rows that concern the person `$2` by name, whoever's session or project they are about: who
 * made them (or ended them as) a member, who named them approver. They stay readable after the
 * person left the project or was removed, which ends every other row of its sessions for them.
 */
const CONCERNS_SQL = `((a.action IN ('project.members.add', 'project.members.remove', 'project.leave')
                        AND a.details->>'member' = $2)
                    OR (a.action = 'session.approvers.add' AND a.details->'approvers' ? $2))`;

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
             OR ${ownsOrApprovesSql("s", "$2")}
             OR (a.session_id IS NULL AND pr.owner = $2)
             OR ${CONCERNS_SQL})
        AND ($3::text IS NULL OR a.session_id = $3)
        AND ($4::text IS NULL OR pr.id = $4)
        AND ($5::bigint IS NULL OR a.id < $5)
      ORDER BY a.id DESC
      LIMIT $6`,
    [all, principal, p.sessionId ?? null, p.projectId ?? null, p.before ?? null, limit + 1],
  );
  const page = boundPage(r.rows, {
    limit,
    maxBytes: AUDIT_PAGE_MAX_BYTES,
    view: (row): AuditEntryView => ({
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
    }),
    // The row id is the position (a bigint id from a sequence: exact as a JS number below 2^53).
    position: (row) => row.id,
  });
  return { entries: page.items, next: page.next === null ? null : Number(page.next) };
}
