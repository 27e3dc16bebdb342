// plan_approvals rows (docs/architecture.md "Plans"), one file per operation: submission
// (plan-submit.ts), resolution (plan-resolve.ts), the execution claim (plan-execution.ts); reads,
// abort and expiry here. The database guards hold by themselves.
import { AppError } from "../../protocol/app-error.ts";
import {
  PLANS_HISTORY_MAX_BYTES,
  type ProposalHistoryPage,
  type ProposalView,
} from "../../protocol/schemas.ts";
import { type Tx, withTransaction } from "./db.ts";
import { appendAudit } from "./audit-log.ts";
import { planExecution } from "./plan-execution.ts";
import { planResolve } from "./plan-resolve.ts";
import { type ApprovalRow, type PlanStoreDeps, planRows, proposalView } from "./plan-rows.ts";
import { planSubmit } from "./plan-submit.ts";
import { memberApproversSql, ownsOrApprovesSql } from "./project-members.ts";

export type { ClaimExecutionOutcome } from "./plan-execution.ts";
export type { ResolveOutcome } from "./plan-resolve.ts";
export { type PlanFaults, proposalView } from "./plan-rows.ts";

export function createPlanStore(deps: PlanStoreDeps) {
  const { db, clock } = deps;
  const rows = planRows(deps);
  const { lockRow, expireRow } = rows;

  /** The expiry a read applies to a row past its deadline: under the row lock, if still pending. */
  async function expireIfStillPending(proposalId: string): Promise<void> {
    await withTransaction(db, async (tx) => {
      const row = await lockRow(tx, proposalId);
      if (row?.status === "pending") await expireRow(tx, row);
    });
  }

  return {
    async get(
      proposalId: string,
    ): Promise<ProposalView & { workspaceRoot: string; owner: string; approvers: string[] }> {
      const r = await db.query(
        `SELECT a.*, p.workspace_root, s.owner, ${memberApproversSql("s")} AS approvers FROM plan_approvals a
         JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id WHERE a.id = $1`,
        [proposalId],
      );
      if (r.rowCount === 0) throw new AppError("PLAN_NOT_FOUND");
      const row = r.rows[0];
      return {
        ...proposalView(row),
        workspaceRoot: row.workspace_root,
        owner: row.owner,
        approvers: row.approvers,
      };
    },

    /** Pending rows visible to the principal, after applying expiry. */
    async pending(principal: string, sessionId?: string): Promise<ProposalView[]> {
      const now = clock.date();
      const r = await db.query(
        `SELECT a.id, a.deadline FROM plan_approvals a JOIN sessions s ON s.id = a.session_id
         WHERE a.status = 'pending' AND ${ownsOrApprovesSql("s", "$1")} AND ($2::text IS NULL OR a.session_id = $2)
         ORDER BY a.created_at`,
        [principal, sessionId ?? null],
      );
      const out: ProposalView[] = [];
      for (const { id, deadline } of r.rows as Array<{ id: string; deadline: Date }>) {
        if (deadline.getTime() <= now.getTime()) {
          await expireIfStillPending(id);
          continue;
        }
        const full = await db.query("SELECT * FROM plan_approvals WHERE id = $1 AND status = 'pending'", [
          id,
        ]);
        if (full.rows[0]) out.push(proposalView(full.rows[0]));
      }
      return out;
    },

    /**
     * One page of a session's proposals of every status, newest first (created_at, then id), after
     * applying expiry as pending() does. `before` is a keyset position (a previous page's `next`),
     * so rows added meanwhile shift no page: no gaps, no repeats. The caller checks access.
     */
    async history(
      sessionId: string,
      p: { limit?: number | undefined; before?: string | undefined },
    ): Promise<ProposalHistoryPage> {
      const due = await db.query(
        "SELECT id FROM plan_approvals WHERE session_id = $1 AND status = 'pending' AND deadline <= $2",
        [sessionId, clock.date()],
      );
      for (const { id } of due.rows as Array<{ id: string }>) await expireIfStillPending(id);
      const limit = p.limit ?? 50;
      const dot = p.before?.indexOf(".") ?? -1;
      const before = p.before && dot > 0 ? { us: p.before.slice(0, dot), id: p.before.slice(dot + 1) } : null;
      // The position is the exact microseconds Postgres stores (a JS Date keeps milliseconds only).
      const r = await db.query(
        `SELECT * FROM (
           SELECT a.*, (extract(epoch FROM a.created_at) * 1000000)::bigint AS created_us
             FROM plan_approvals a WHERE a.session_id = $1) h
          WHERE $2::bigint IS NULL OR (h.created_us, h.id) < ($2::bigint, $3::text)
          ORDER BY h.created_us DESC, h.id DESC
          LIMIT $4`,
        [sessionId, before?.us ?? null, before?.id ?? null, limit + 1],
      );
      const proposals: ProposalView[] = [];
      let last: string | null = null;
      let bytes = 0;
      let cut = false;
      for (const row of r.rows.slice(0, limit) as Array<ApprovalRow & { created_us: string }>) {
        const view = proposalView(row);
        const size = Buffer.byteLength(JSON.stringify(view));
        if (proposals.length > 0 && bytes + size > PLANS_HISTORY_MAX_BYTES) {
          cut = true;
          break;
        }
        bytes += size;
        proposals.push(view);
        last = `${row.created_us}.${row.id}`;
      }
      return { proposals, next: (cut || r.rows.length > limit) && last !== null ? last : null };
    },

    submit: planSubmit(deps),
    resolve: planResolve(deps, rows),
    ...planExecution(deps),

    /** Abort while an approval is pending: the row becomes interrupted and the parked turn aborted. */
    async interruptPending(tx: Tx, sessionId: string, principal: string): Promise<ProposalView | null> {
      const at = clock.date();
      const r = await tx.query(
        `UPDATE plan_approvals SET status = 'interrupted', error_code = 'PLAN_APPROVAL_INTERRUPTED', resolved_at = $2, version = version + 1
         WHERE session_id = $1 AND status = 'pending' RETURNING *`,
        [sessionId, at],
      );
      const row = r.rows[0] as ApprovalRow | undefined;
      if (!row) return null;
      await appendAudit(tx, {
        at,
        principal,
        sessionId,
        turnId: row.turn_id,
        action: "plan.interrupt",
        code: "PLAN_APPROVAL_INTERRUPTED",
        details: { proposalId: row.id },
      });
      return proposalView(row);
    },

    async expireIfDue(sessionId: string): Promise<ProposalView | null> {
      return withTransaction(db, async (tx) => {
        const r = await tx.query(
          "SELECT * FROM plan_approvals WHERE session_id = $1 AND status = 'pending' FOR UPDATE",
          [sessionId],
        );
        const row = r.rows[0] as ApprovalRow | undefined;
        if (!row || row.deadline.getTime() > clock.now()) return null;
        return proposalView(await expireRow(tx, row));
      });
    },
  };
}

export type PlanStore = ReturnType<typeof createPlanStore>;
