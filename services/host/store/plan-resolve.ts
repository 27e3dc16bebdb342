// plans.resolve (docs/architecture.md "Plans"): the checks in the documented order, then the reject
// or the approve transaction (row, execution turn, session mode and permission mode, audit).
import { AppError } from "../../protocol/app-error.ts";
import {
  EXECUTION_PERMISSION_MODES,
  type PlansResolveParams,
  type ProposalView,
} from "../../protocol/schemas.ts";
import { newId } from "../ids.ts";
import { appendAudit } from "./audit-log.ts";
import { commitOutcomeUnknown, isConnectionLost, type Tx, withTransaction } from "./db.ts";
import { readPlanArtifact, sha256Hex } from "./plan-artifact.ts";
import { type ApprovalRow, type PlanRows, type PlanStoreDeps, proposalView } from "./plan-rows.ts";
import { canAccess } from "./session-store.ts";

/** How often, and how far apart, a resolution whose COMMIT lost its connection re-reads its row. */
const LOST_COMMIT_READS = 15;
const LOST_COMMIT_RETRY_MS = 200;

/** What a resolve did: a fresh transition, the recorded earlier result, or an expiry it applied. */
export type ResolveOutcome =
  | { kind: "approved"; proposal: ProposalView; executionTurnId: string }
  | { kind: "rejected"; proposal: ProposalView }
  | { kind: "recorded"; proposal: ProposalView };

export function planResolve(deps: PlanStoreDeps, rows: PlanRows) {
  const { db, clock, sessions } = deps;
  const { lockRow, endParkedTurn, expireRow } = rows;
  /**
   * plans.resolve, checks in the order of docs/protocol.md. With `readOnly` (no pending approval is held by
   * the session actor) a still-pending row is a concurrent change, never transitioned here.
   */
  async function resolve(
    principal: string,
    p: PlansResolveParams,
    opts: { readOnly: boolean },
  ): Promise<ResolveOutcome> {
    try {
      return await resolveOnce(principal, p, opts);
    } catch (err) {
      // The connection was lost in COMMIT: the resolution may have committed. Tell the truth.
      if (!commitOutcomeUnknown(err)) throw err;
      return outcomeAfterLostCommit(principal, p, err);
    }
  }

  /**
   * Re-reads the row (retrying while the database is unreachable, a few seconds at most): resolved
   * as this request asked by this principal means it committed and the outcome is that; still
   * pending means nothing committed (DATABASE_UNAVAILABLE, retry); unreadable stays unknown.
   */
  async function outcomeAfterLostCommit(
    principal: string,
    p: PlansResolveParams,
    cause: unknown,
  ): Promise<ResolveOutcome> {
    for (let attempt = 0; attempt < LOST_COMMIT_READS; attempt++) {
      let row: (ApprovalRow & { resolved_by: string | null }) | undefined;
      try {
        row = (await db.query("SELECT * FROM plan_approvals WHERE id = $1", [p.proposalId])).rows[0];
      } catch (err) {
        if (!isConnectionLost(err)) throw err;
        await new Promise((r) => setTimeout(r, LOST_COMMIT_RETRY_MS));
        continue;
      }
      if (row && row.resolved_by === principal && row.action === p.action) {
        if (
          row.status === "approved" &&
          row.execution_turn_id &&
          row.target_permission_mode === p.targetPermissionMode
        )
          return { kind: "approved", proposal: proposalView(row), executionTurnId: row.execution_turn_id };
        if (row.status === "rejected") return { kind: "rejected", proposal: proposalView(row) };
      }
      throw new AppError("DATABASE_UNAVAILABLE", "the database connection was lost; nothing was committed", {
        cause,
        details: { committed: false },
      });
    }
    throw new AppError(
      "DATABASE_UNAVAILABLE",
      "the database connection was lost while committing; read the proposal (plans.get) to see whether it was resolved",
      { cause, details: { committed: "unknown" } },
    );
  }

  async function resolveOnce(
    principal: string,
    p: PlansResolveParams,
    opts: { readOnly: boolean },
  ): Promise<ResolveOutcome> {
    return withTransaction(db, async (tx) => {
      const row = await lockRow(tx, p.proposalId);
      if (!row) throw new AppError("PLAN_NOT_FOUND");
      const session = await sessions.getRow(tx, row.session_id, !opts.readOnly);
      if (!canAccess(session, principal)) throw new AppError("FORBIDDEN");
      if (
        p.sessionId !== row.session_id ||
        p.turnId !== row.turn_id ||
        p.toolCallId !== row.tool_call_id ||
        row.status === "interrupted"
      ) {
        throw new AppError("PLAN_APPROVAL_STALE", undefined, { details: { status: row.status } });
      }
      if (p.action !== "approve" && p.action !== "reject") throw new AppError("PLAN_INVALID_ACTION");
      const mode = p.targetPermissionMode;
      if (p.action === "approve") {
        if (mode === undefined || mode === null) throw new AppError("PLAN_PERMISSION_MODE_REQUIRED");
        if (!(EXECUTION_PERMISSION_MODES as readonly string[]).includes(mode))
          throw new AppError("PLAN_PERMISSION_MODE_INVALID");
      }
      if (row.status !== "pending") {
        const same =
          row.action === p.action && (p.action === "reject" || row.target_permission_mode === mode);
        if (row.status === "expired") throw new AppError("PLAN_APPROVAL_TIMEOUT");
        if (same) return { kind: "recorded", proposal: proposalView(row) };
        throw new AppError("PLAN_ALREADY_RESOLVED", undefined, {
          details: { status: row.status, action: row.action },
        });
      }
      const now = clock.date();
      if (row.deadline.getTime() <= now.getTime()) {
        if (opts.readOnly) throw new AppError("PLAN_APPROVAL_CONFLICT");
        // The expiry commits even though the caller gets an error: the deadline is absolute.
        const expired = await expireRow(tx, row);
        return { kind: "recorded", proposal: proposalView(expired) };
      }
      // The file must still be the plan that was submitted: re-hashed here, under the row lock. A
      // mismatch changes nothing (the row stays pending, Reject still works).
      if (p.action === "approve") await assertArtifactUnchanged(tx, row, session.project_id);
      if (opts.readOnly) throw new AppError("PLAN_APPROVAL_CONFLICT");
      if (p.version !== undefined && p.version !== row.version) throw new AppError("PLAN_APPROVAL_CONFLICT");

      await endParkedTurn(tx, row.turn_id, "completed");
      if (p.action === "reject") {
        const r = await tx.query(
          `UPDATE plan_approvals SET status = 'rejected', action = 'reject', resolved_at = $2, resolved_by = $3, version = version + 1
         WHERE id = $1 AND status = 'pending' AND version = $4 RETURNING *`,
          [row.id, now, principal, row.version],
        );
        if (r.rowCount !== 1) throw new AppError("PLAN_APPROVAL_CONFLICT");
        await sessions.appendTranscript(tx, row.session_id, row.turn_id, {
          role: "user",
          content: `[The plan "${row.title}" was rejected.]`,
          timestamp: now.getTime(),
        });
        await appendAudit(tx, {
          at: now,
          principal,
          sessionId: row.session_id,
          turnId: row.turn_id,
          action: "plan.reject",
          decision: "reject",
          details: { proposalId: row.id },
        });
        return { kind: "rejected", proposal: proposalView(r.rows[0]) };
      }
      // Approve: one transaction for row, execution, session mode and permission mode, and audit.
      const executionId = newId("exe");
      const executionTurnId = await sessions.insertTurn(tx, {
        sessionId: row.session_id,
        kind: "execution",
        proposalId: row.id,
        text: executionPrompt(row, mode as string),
      });
      const r = await tx.query(
        `UPDATE plan_approvals SET status = 'approved', action = 'approve', target_permission_mode = $2, resolved_at = $3,
         resolved_by = $4, version = version + 1, execution_id = $5, execution_state = 'queued', execution_turn_id = $6
       WHERE id = $1 AND status = 'pending' AND version = $7 RETURNING *`,
        [row.id, mode, now, principal, executionId, executionTurnId, row.version],
      );
      if (r.rowCount !== 1) throw new AppError("PLAN_APPROVAL_CONFLICT");
      await tx.query(
        "UPDATE sessions SET mode = 'agent', permission_mode = $2, version = version + 1, updated_at = $3 WHERE id = $1",
        [row.session_id, mode, now],
      );
      await appendAudit(tx, {
        at: now,
        principal,
        sessionId: row.session_id,
        turnId: row.turn_id,
        action: "plan.approve",
        decision: "approve",
        details: { proposalId: row.id, targetPermissionMode: mode, executionId },
      });
      return { kind: "approved", proposal: proposalView(r.rows[0]), executionTurnId };
    });
  }
  return resolve;
}

/** PLAN_ARTIFACT_HASH_MISMATCH unless the plan file holds exactly the submitted bytes (a missing or unsafe file does not). */
async function assertArtifactUnchanged(tx: Tx, row: ApprovalRow, projectId: string): Promise<void> {
  const r = await tx.query<{ workspace_root: string }>("SELECT workspace_root FROM projects WHERE id = $1", [
    projectId,
  ]);
  let actual: string | null = null;
  try {
    actual = sha256Hex(await readPlanArtifact(r.rows[0]?.workspace_root ?? "", row.artifact_path));
  } catch {
    actual = null;
  }
  if (actual !== row.artifact_sha256)
    throw new AppError("PLAN_ARTIFACT_HASH_MISMATCH", "the plan file changed since it was submitted", {
      details: { path: row.artifact_path, expected: row.artifact_sha256, actual },
    });
}

/** The execution turn's opening message: the approved artifact's path and exact content. */
function executionPrompt(row: ApprovalRow, mode: string): string {
  return [
    `The plan "${row.title}" was approved with permission mode ${mode}. Execute it now.`,
    `Plan file: ${row.artifact_path} (sha256 ${row.artifact_sha256})`,
    "",
    row.markdown,
  ].join("\n");
}
