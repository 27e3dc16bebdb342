// Execution turns of approved plans (docs/architecture.md "Plans"): the worker's claim (queued ->
// running after the artifact re-hash) and the end of the execution.
import type { ProposalView } from "../../protocol/schemas.ts";
import { appendAudit } from "./audit-log.ts";
import { type Tx, withTransaction } from "./db.ts";
import { readPlanArtifact, sha256Hex } from "../tools/plan-artifact.ts";
import { type ApprovalRow, type PlanStoreDeps, proposalView } from "./plan-rows.ts";

/**
 * A claim's outcome with the proposal as the claim left it: `running` when ok, `interrupted` on a
 * changed artifact, as read (null without a row) when stale.
 */
export type ClaimExecutionOutcome =
  | { ok: true; proposal: ProposalView }
  | { ok: false; code: "PLAN_ARTIFACT_HASH_MISMATCH"; proposal: ProposalView }
  | { ok: false; code: "PLAN_EXECUTION_STALE"; proposal: ProposalView | null };

export function planExecution(deps: PlanStoreDeps) {
  const { db, clock, sessions } = deps;
  return {
    /**
     * A worker claims the execution turn: queued -> running (version-checked), after re-hashing the
     * artifact. A changed file interrupts the execution and ends the turn; nothing runs.
     */
    async claimExecution(turnId: string): Promise<ClaimExecutionOutcome> {
      const r = await db.query(
        `SELECT a.*, p.workspace_root FROM plan_approvals a JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id
         WHERE a.execution_turn_id = $1`,
        [turnId],
      );
      const row = r.rows[0] as (ApprovalRow & { workspace_root: string }) | undefined;
      if (row?.execution_state !== "queued")
        return { ok: false, code: "PLAN_EXECUTION_STALE", proposal: row ? proposalView(row) : null };
      const stale = {
        ok: false as const,
        code: "PLAN_EXECUTION_STALE" as const,
        proposal: proposalView(row),
      };
      let matches = false;
      try {
        const read = await readPlanArtifact(row.workspace_root, row.artifact_path);
        matches = read.ok && sha256Hex(read.value) === row.artifact_sha256;
      } catch {
        matches = false;
      }
      const now = clock.date();
      return withTransaction(db, async (tx): Promise<ClaimExecutionOutcome> => {
        if (!matches) {
          const u = await tx.query(
            `UPDATE plan_approvals SET execution_state = 'interrupted', error_code = 'PLAN_ARTIFACT_HASH_MISMATCH', version = version + 1
             WHERE id = $1 AND execution_state = 'queued' AND version = $2 RETURNING *`,
            [row.id, row.version],
          );
          if (u.rowCount !== 1) return stale;
          await sessions.endTurn(tx, turnId, "aborted", "PLAN_ARTIFACT_HASH_MISMATCH");
          await appendAudit(tx, {
            at: now,
            sessionId: row.session_id,
            turnId,
            action: "plan.execution.refuse",
            code: "PLAN_ARTIFACT_HASH_MISMATCH",
            details: { proposalId: row.id },
          });
          return { ok: false, code: "PLAN_ARTIFACT_HASH_MISMATCH", proposal: proposalView(u.rows[0]) };
        }
        const u = await tx.query(
          `UPDATE plan_approvals SET execution_state = 'running', version = version + 1 WHERE id = $1 AND execution_state = 'queued' AND version = $2 RETURNING *`,
          [row.id, row.version],
        );
        if (u.rowCount !== 1) return stale;
        await appendAudit(tx, {
          at: now,
          sessionId: row.session_id,
          turnId,
          action: "plan.execution.start",
          details: { proposalId: row.id, executionId: row.execution_id },
        });
        return { ok: true, proposal: proposalView(u.rows[0]) };
      });
    },

    /** Ends an execution turn's row: completed, or interrupted with a code. */
    async finishExecution(
      tx: Tx,
      turnId: string,
      state: "completed" | "interrupted",
      code?: string,
    ): Promise<ProposalView | null> {
      const r = await tx.query(
        `UPDATE plan_approvals SET execution_state = $2, error_code = coalesce($3, error_code), version = version + 1
         WHERE execution_turn_id = $1 AND execution_state IN ('queued', 'running') RETURNING *`,
        [turnId, state, code ?? null],
      );
      return r.rows[0] ? proposalView(r.rows[0]) : null;
    },
  };
}
