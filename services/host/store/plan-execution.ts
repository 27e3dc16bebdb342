// Execution turns of approved plans (docs/architecture.md "Plans"): the worker's claim (queued ->
// running after the artifact re-hash, one statement with its audit row and events) and the end of
// the execution.
import type { ProposalView } from "../../protocol/schemas.ts";
import { appendAudit } from "./audit-log.ts";
import { type Tx, prepared, withTransaction } from "./db.ts";
import {
  appendedEventsColumn,
  appendEventsCtes,
  approversColumn,
  type EventRowsWrite,
  writtenEvents,
} from "./event-store.ts";
import { hashOf } from "../tools/plan-file-hints.ts";
import { type ApprovalRow, type PlanStoreDeps, proposalView } from "./plan-rows.ts";

/**
 * A claim's outcome with the proposal as the claim left it: `running` when ok, `interrupted` on a
 * changed artifact, as read (null without a row) when stale.
 */
export type ClaimExecutionOutcome =
  | { ok: true; proposal: ProposalView }
  | { ok: false; code: "PLAN_ARTIFACT_HASH_MISMATCH"; proposal: ProposalView }
  | { ok: false; code: "PLAN_EXECUTION_STALE"; proposal: ProposalView | null };

/** The claim's write with the events it appended, as the event publisher runs and publishes it. */
export type ClaimWrite = EventRowsWrite<ClaimExecutionOutcome>;

export interface ClaimOptions {
  /** The worker taking the turn (its `turn.claimed` event is written with the claim). */
  workerId: string;
  /**
   * Runs the claim's statement in the session's order of events and publishes what it wrote
   * (sessions/events/event-publisher.ts `publishRows`); without it the statement runs and nothing
   * is published.
   */
  record?: (write: ClaimWrite) => Promise<ClaimExecutionOutcome>;
}

/**
 * queued -> running, one statement: the row (its version checked), the audit row, and the events
 * turn.started, plan.changed and turn.claimed, or nothing when the row changed since it was read.
 */
const CLAIM = prepared(
  "plan-execution-claim",
  `WITH decided AS (
       UPDATE plan_approvals SET execution_state = 'running', version = version + 1
        WHERE id = $1 AND execution_state = 'queued' AND version = $2 RETURNING id
     ), audit AS (
       INSERT INTO audit_log (at, principal, session_id, turn_id, action, details)
       SELECT $4, NULL, $3, $5, 'plan.execution.start', $6 FROM decided RETURNING 1
     ), ${appendEventsCtes(
       "$3",
       "$4",
       [
         { type: "turn.started", body: "$7" },
         { type: "plan.changed", body: "$8" },
         { type: "turn.claimed", body: "$9" },
       ],
       "EXISTS (SELECT 1 FROM decided)",
     )}
     SELECT (SELECT count(*) FROM decided) AS claimed, ${appendedEventsColumn()},
            ${approversColumn("$3")}`,
);

export function planExecution(deps: PlanStoreDeps) {
  const { db, clock, sessions, hints } = deps;
  return {
    /**
     * A worker claims the execution turn: queued -> running (version-checked), after re-hashing the
     * artifact, in one statement with its audit row and its events. A changed file interrupts the
     * execution and ends the turn; nothing runs.
     */
    async claimExecution(turnId: string, opts: ClaimOptions): Promise<ClaimExecutionOutcome> {
      // The plan file is hashed while the row is read when this host approved it (tools/plan-file-hints.ts).
      const early = hints?.hashEarly(turnId);
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
      const matches = (await hashOf(early, row.workspace_root, row.artifact_path)) === row.artifact_sha256;
      hints?.forget(turnId);
      const now = clock.date();
      if (!matches) {
        return withTransaction(db, async (tx): Promise<ClaimExecutionOutcome> => {
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
        });
      }
      const executionId = row.execution_id as string;
      const write: ClaimWrite = async (at) => {
        const w = await db.query(
          CLAIM([
            row.id,
            row.version,
            row.session_id,
            at,
            turnId,
            JSON.stringify({ proposalId: row.id, executionId }),
            JSON.stringify({ turnId, kind: "execution" }),
            JSON.stringify({ state: "inactive", execution: { executionId, state: "running" } }),
            JSON.stringify({ turnId, workerId: opts.workerId }),
          ]),
        );
        const x = w.rows[0];
        const running = proposalView({ ...row, execution_state: "running", version: row.version + 1 });
        return {
          events: writtenEvents(x.events),
          approvers: x.approvers ?? [],
          value: Number(x.claimed) === 1 ? { ok: true, proposal: running } : stale,
        };
      };
      return opts.record ? opts.record(write) : (await write(now)).value;
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
