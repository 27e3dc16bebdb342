// plan_approvals rows as the plan operations share them (docs/architecture.md "Plans"): the row, its
// wire view, the row lock, the expiry and the end of a parked turn. Every change is one transaction
// holding the row lock, with a version bump.
import type { PlanFileHints } from "../tools/plan-file-hints.ts";
import type { ProposalView } from "../../protocol/schemas.ts";
import type { Clock } from "../clock.ts";
import { appendAudit } from "./audit-log.ts";
import type { Db, Tx } from "./db.ts";
import type { SessionStore } from "./session-store.ts";

export interface ApprovalRow {
  id: string;
  request_id: string;
  session_id: string;
  turn_id: string;
  tool_call_id: string;
  title: string;
  question: string;
  markdown: string;
  artifact_path: string;
  artifact_sha256: string;
  artifact_size: number;
  status: ProposalView["status"];
  action: string | null;
  target_permission_mode: string | null;
  created_at: Date;
  deadline: Date;
  resolved_at: Date | null;
  version: number;
  execution_id: string | null;
  execution_state: ProposalView["executionState"];
  execution_turn_id: string | null;
  error_code: string | null;
}

export function proposalView(r: ApprovalRow): ProposalView {
  return {
    proposalId: r.id,
    sessionId: r.session_id,
    turnId: r.turn_id,
    toolCallId: r.tool_call_id,
    title: r.title,
    question: r.question,
    artifactPath: r.artifact_path,
    sha256: r.artifact_sha256,
    byteSize: r.artifact_size,
    status: r.status,
    action: r.action,
    targetPermissionMode: r.target_permission_mode,
    deadline: r.deadline.toISOString(),
    version: r.version,
    executionId: r.execution_id,
    executionState: r.execution_state,
    errorCode: r.error_code,
    createdAt: r.created_at.toISOString(),
    resolvedAt: r.resolved_at ? r.resolved_at.toISOString() : null,
  };
}

/** A test-hooks fault point (sessions/actors/fault-injector.ts satisfies it): throws or waits when armed. */
export interface PlanFaults {
  enter(point: string): Promise<void>;
}

export interface PlanStoreDeps {
  db: Db;
  clock: Clock;
  sessions: SessionStore;
  approvalTimeoutMs: number;
  /** The sandbox user the plan folder's seal is checked against (the host's config). */
  sandboxUser?: string;
  /** Test hooks only: the artifact write ("artifactWrite") and the row insert ("planRow") can fail. */
  faults?: PlanFaults;
  /** Where this host's proposals keep their plan files (tools/plan-file-hints.ts); the store makes one. */
  hints?: PlanFileHints;
}

/** The row operations every plan operation shares, bound to the store's dependencies. */
export function planRows(deps: PlanStoreDeps) {
  const { clock, sessions } = deps;
  async function lockRow(tx: Tx, proposalId: string): Promise<ApprovalRow | null> {
    const r = await tx.query("SELECT * FROM plan_approvals WHERE id = $1 FOR UPDATE", [proposalId]);
    return r.rows[0] ?? null;
  }

  /**
   * Ends the turn a pending plan parked. That turn may itself be an approved execution that entered
   * Plan again: its execution ends with it (completed when the person answered, else interrupted).
   */
  async function endParkedTurn(
    tx: Tx,
    turnId: string,
    status: "completed" | "aborted",
    code?: string,
  ): Promise<void> {
    await sessions.endTurn(tx, turnId, status, code ?? null);
    await tx.query(
      `UPDATE plan_approvals SET execution_state = $2, error_code = coalesce($3, error_code), version = version + 1
       WHERE execution_turn_id = $1 AND execution_state IN ('queued', 'running')`,
      [
        turnId,
        status === "completed" ? "completed" : "interrupted",
        status === "completed" ? null : (code ?? null),
      ],
    );
  }

  /** Expires a pending row past its deadline and ends its parked turn; returns the new row. */
  async function expireRow(tx: Tx, row: ApprovalRow): Promise<ApprovalRow> {
    const at = clock.date();
    const r = await tx.query(
      `UPDATE plan_approvals SET status = 'expired', error_code = 'PLAN_APPROVAL_TIMEOUT', resolved_at = $2, version = version + 1
       WHERE id = $1 AND status = 'pending' RETURNING *`,
      [row.id, at],
    );
    await endParkedTurn(tx, row.turn_id, "aborted", "PLAN_APPROVAL_TIMEOUT");
    await appendAudit(tx, {
      at,
      sessionId: row.session_id,
      turnId: row.turn_id,
      action: "plan.expire",
      code: "PLAN_APPROVAL_TIMEOUT",
      details: { proposalId: row.id },
    });
    return r.rows[0];
  }

  return { lockRow, endParkedTurn, expireRow };
}

export type PlanRows = ReturnType<typeof planRows>;
