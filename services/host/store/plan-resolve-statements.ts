// The reads and writes of plans.resolve (plan-resolve.ts decides; this file only runs SQL): one read
// of the row with its session and project, and one statement each for approve and reject that
// commits every row of the decision together with its events, or nothing (docs/architecture.md
// "Plans"). Every part is checked by version; a part that finds its row changed makes the whole
// statement roll back through `pihost_refuse` (migration 17, SQLSTATE PH003).
import type { ProposalView } from "../../protocol/schemas.ts";
import { newId } from "../ids.ts";
import { type Db, prepared } from "./db.ts";
import {
  appendedEventsColumn,
  appendEventsCtes,
  approversColumn,
  type WrittenEvent,
  writtenEvents,
} from "./event-store.ts";
import { type ApprovalRow, proposalView } from "./plan-rows.ts";
import { memberApproversSql } from "./project-members.ts";

/** SQLSTATE of `pihost_refuse`: the statement refused itself, its message is the refusal's code. */
export const STATEMENT_REFUSED_SQLSTATE = "PH003";

/** Whether a statement refused itself with this code (nothing was written). */
export function isRefused(err: unknown, code: string): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === STATEMENT_REFUSED_SQLSTATE && e.message === code;
}

/** The session of an approval as its resolution reads it: access, its version, its workspace. */
export interface ResolveSession {
  owner: string;
  /** The approvers still members of the project. */
  approvers: string[];
  version: number;
  workspace_root: string;
}

export interface ResolveRead {
  row: ApprovalRow;
  session: ResolveSession;
}

/** The approval, its session and its project in one read (no lock: the write checks versions). */
export async function readForResolve(db: Db, proposalId: string): Promise<ResolveRead | null> {
  const r = await db.query(
    `SELECT a.*, s.owner AS s_owner, ${memberApproversSql("s")} AS s_approvers, s.version AS s_version,
            p.workspace_root AS s_workspace_root
       FROM plan_approvals a JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id
      WHERE a.id = $1`,
    [proposalId],
  );
  const x = r.rows[0];
  if (!x) return null;
  const { s_owner, s_approvers, s_version, s_workspace_root, ...row } = x;
  return {
    row: row as ApprovalRow,
    session: {
      owner: s_owner,
      approvers: s_approvers,
      version: Number(s_version),
      workspace_root: s_workspace_root,
    },
  };
}

export interface ResolveInput extends ResolveRead {
  principal: string;
  /** The execution's permission mode (approve only). */
  mode: string;
  at: Date;
}

/** What a resolving statement committed: the new view, the events it wrote, who receives them. */
export interface ResolveWritten<K extends "approved" | "rejected"> {
  events: WrittenEvent[];
  approvers: string[];
  value: K extends "approved"
    ? { kind: "approved"; proposal: ProposalView; executionTurnId: string }
    : { kind: "rejected"; proposal: ProposalView };
}

/** The statement's last column: 1 when its own row change happened, else it refuses itself whole. */
const WRITTEN_OR_REFUSED = `CASE WHEN EXISTS (SELECT 1 FROM decided) THEN 1
       ELSE (SELECT 0 FROM pihost_refuse('PLAN_APPROVAL_CONFLICT')) END AS written`;

/**
 * The parked planning turn ends with the decision, and an execution it was part of with it. These
 * run first (the decision reads `nested`), so an execution that entered Plan again is completed
 * before this plan's own execution is queued (one queued or running execution per session). If the
 * decision then finds its row changed, the statement refuses itself and none of it stays.
 */
const END_PARKED = (turn: string, at: string) => `ended AS (
       UPDATE turns SET status = 'completed', error_code = NULL, ended_at = ${at}
        WHERE id = ${turn} AND status = 'running' RETURNING id
     ), nested AS (
       UPDATE plan_approvals SET execution_state = 'completed', version = version + 1
        WHERE execution_turn_id = ${turn} AND execution_state IN ('queued', 'running')
        RETURNING id
     )`;
/** What the decision waits for: the parked turn's end (see END_PARKED). */
const AFTER_END_PARKED = "(SELECT count(*) FROM nested) + (SELECT count(*) FROM ended) >= 0";

/**
 * The SELECT list both decisions end with: written or refused, the appended events, who may receive
 * them, and how many of the other parts wrote (`$2` is the session id in both).
 */
const RESOLVED_SELECT = `SELECT ${WRITTEN_OR_REFUSED}, ${appendedEventsColumn()},
            ${approversColumn("$2")},
            (SELECT count(*) FROM ended) + (SELECT count(*) FROM nested) + (SELECT count(*) FROM entry)
              + (SELECT count(*) FROM audit) AS parts`;

/** The approve statement (see `approveStatement`), prepared once per connection. */
const APPROVE = prepared(
  "plan-approve",
  `WITH sess AS (
       UPDATE sessions SET mode = 'agent', permission_mode = $5, version = version + 1, updated_at = $3
        WHERE id = $2 AND version = $8 RETURNING id
     ), ${END_PARKED("$7", "$3")}, decided AS (
       UPDATE plan_approvals SET status = 'approved', action = 'approve', target_permission_mode = $5, resolved_at = $3,
              resolved_by = $4, version = version + 1, execution_id = $9, execution_state = 'queued', execution_turn_id = $10
        WHERE id = $1 AND status = 'pending' AND version = $6 AND EXISTS (SELECT 1 FROM sess) AND ${AFTER_END_PARKED}
        RETURNING id
     ), xturn AS (
       INSERT INTO turns (id, session_id, kind, status, created_at, proposal_id)
       SELECT $10, $2, 'execution', 'running', $3, $1 FROM decided RETURNING id
     ), entry AS (
       INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at)
       SELECT $2, $10, 'user', $11, $3 FROM xturn RETURNING 1
     ), audit AS (
       INSERT INTO audit_log (at, principal, session_id, turn_id, action, decision, details)
       SELECT $3, $4, $2, $7, 'plan.approve', 'approve', $12 FROM decided RETURNING 1
     ), ${appendEventsCtes(
       "$2",
       "$3",
       [
         { type: "turn.ended", body: "$13" },
         { type: "plan.changed", body: "$14" },
         { type: "session.changed", body: "$15" },
       ],
       "EXISTS (SELECT 1 FROM decided)",
     )}
     ${RESOLVED_SELECT}`,
);

/** The reject statement (see `rejectStatement`), prepared once per connection. */
const REJECT = prepared(
  "plan-reject",
  `WITH ${END_PARKED("$6", "$3")}, decided AS (
       UPDATE plan_approvals SET status = 'rejected', action = 'reject', resolved_at = $3, resolved_by = $4,
              version = version + 1
        WHERE id = $1 AND status = 'pending' AND version = $5 AND ${AFTER_END_PARKED} RETURNING id
     ), entry AS (
       INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at)
       SELECT $2, $6, 'user', $7, $3 FROM decided RETURNING 1
     ), audit AS (
       INSERT INTO audit_log (at, principal, session_id, turn_id, action, decision, details)
       SELECT $3, $4, $2, $6, 'plan.reject', 'reject', $8 FROM decided RETURNING 1
     ), ${appendEventsCtes(
       "$2",
       "$3",
       [
         { type: "turn.ended", body: "$9" },
         { type: "plan.changed", body: "$10" },
       ],
       "EXISTS (SELECT 1 FROM decided)",
     )}
     ${RESOLVED_SELECT}`,
);

/**
 * Approve, one statement: the session to Agent with the chosen permission mode (its version
 * checked), the row approved with a new execution (its version checked), the parked turn ended, the
 * execution turn and its opening message, the audit row, and the events turn.ended, plan.changed
 * and session.changed.
 */
export async function approveStatement(db: Db, i: ResolveInput): Promise<ResolveWritten<"approved">> {
  const { row, session, at } = i;
  const executionId = newId("exe");
  const executionTurnId = newId("turn");
  const proposal = proposalView({
    ...row,
    status: "approved",
    action: "approve",
    target_permission_mode: i.mode,
    resolved_at: at,
    version: row.version + 1,
    execution_id: executionId,
    execution_state: "queued",
    execution_turn_id: executionTurnId,
  });
  const opening = { role: "user", content: executionPrompt(row, i.mode), timestamp: at.getTime() };
  const bodies = [
    { turnId: row.turn_id, status: "completed" },
    {
      state: "inactive",
      action: "approved",
      proposal,
      status: proposal.status,
      targetPermissionMode: i.mode,
      execution: { executionId, state: "queued" },
    },
    { mode: "agent", permissionMode: i.mode, planningState: "inactive", version: session.version + 1 },
  ];
  const r = await db.query(
    APPROVE([
      row.id,
      row.session_id,
      at,
      i.principal,
      i.mode,
      row.version,
      row.turn_id,
      session.version,
      executionId,
      executionTurnId,
      JSON.stringify(opening),
      JSON.stringify({ proposalId: row.id, targetPermissionMode: i.mode, executionId }),
      ...bodies.map((b) => JSON.stringify(b)),
    ]),
  );
  return {
    events: writtenEvents(r.rows[0].events),
    approvers: r.rows[0].approvers ?? [],
    value: { kind: "approved", proposal, executionTurnId },
  };
}

/**
 * Reject, one statement: the row rejected (its version checked), the parked turn ended with the
 * outcome in the transcript, the audit row, and the events turn.ended and plan.changed. The session
 * stays in Plan.
 */
export async function rejectStatement(db: Db, i: ResolveInput): Promise<ResolveWritten<"rejected">> {
  const { row, at } = i;
  const proposal = proposalView({
    ...row,
    status: "rejected",
    action: "reject",
    resolved_at: at,
    version: row.version + 1,
  });
  const outcome = {
    role: "user",
    content: `[The plan "${row.title}" was rejected.]`,
    timestamp: at.getTime(),
  };
  const bodies = [
    { turnId: row.turn_id, status: "completed" },
    { state: "planning", action: "rejected", proposal, status: proposal.status },
  ];
  const r = await db.query(
    REJECT([
      row.id,
      row.session_id,
      at,
      i.principal,
      row.version,
      row.turn_id,
      JSON.stringify(outcome),
      JSON.stringify({ proposalId: row.id }),
      ...bodies.map((b) => JSON.stringify(b)),
    ]),
  );
  return {
    events: writtenEvents(r.rows[0].events),
    approvers: r.rows[0].approvers ?? [],
    value: { kind: "rejected", proposal },
  };
}

/** The execution turn's opening message: the approved artifact's path and exact content. */
export function executionPrompt(row: ApprovalRow, mode: string): string {
  return [
    `The plan "${row.title}" was approved with permission mode ${mode}. Execute it now.`,
    `Plan file: ${row.artifact_path} (sha256 ${row.artifact_sha256})`,
    "",
    row.markdown,
  ].join("\n");
}
