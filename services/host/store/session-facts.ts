// Reads and writes of the session actor's steps that no other store owns: where a session stands
// (facts for a restarting actor, the busy check), its configuration and mode updates, and the small
// lookups of the client and agent handlers. Every write takes the host clock's time as a parameter.
import type { OperatingMode, PlanningState, TurnKind } from "../../protocol/schemas.ts";
import type { Db, Tx } from "./db.ts";

type Q = Db | Tx;

/** What the rows say about a session's running turn, pending approval and queued execution. */
export interface SessionRowFacts {
  turn: { id: string; kind: TurnKind } | null;
  pending: { id: string; deadlineMs: number } | null;
  queuedExecutionTurnId: string | null;
}

export async function readSessionFacts(q: Q, sessionId: string): Promise<SessionRowFacts> {
  const r = await q.query(
    `SELECT (SELECT row_to_json(t) FROM (SELECT id, kind FROM turns WHERE session_id = $1 AND status = 'running') t) AS turn,
            (SELECT row_to_json(a) FROM (SELECT id, deadline FROM plan_approvals WHERE session_id = $1 AND status = 'pending') a) AS pending,
            (SELECT execution_turn_id FROM plan_approvals WHERE session_id = $1 AND execution_state = 'queued') AS queued`,
    [sessionId],
  );
  const { turn, pending, queued } = r.rows[0];
  return {
    turn: turn ? { id: turn.id, kind: turn.kind } : null,
    pending: pending ? { id: pending.id, deadlineMs: new Date(pending.deadline).getTime() } : null,
    queuedExecutionTurnId: queued ?? null,
  };
}

/**
 * The one busy check: a turn runs, an approval is pending, or an approved execution is queued or
 * running. A prompt is then AGENT_BUSY and a configuration change PLAN_CONFIGURATION_BLOCKED.
 */
export async function sessionBusy(q: Q, sessionId: string): Promise<boolean> {
  const r = await q.query(
    `SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = $1 AND status = 'running')
         OR EXISTS (SELECT 1 FROM plan_approvals WHERE session_id = $1 AND (status = 'pending' OR execution_state IN ('queued', 'running'))) AS busy`,
    [sessionId],
  );
  return r.rows[0].busy === true;
}

/** Columns `session.configure` may change, by column name. */
export interface SessionChanges {
  mode?: OperatingMode;
  permission_mode?: string;
  provider?: string;
  model?: string;
  model_config?: string;
  approvers?: string[];
}

/** Applies the changes if the row is still at `version`; false when it changed concurrently. */
export async function updateSessionConfig(
  tx: Tx,
  sessionId: string,
  changes: SessionChanges,
  version: number,
  at: Date,
): Promise<boolean> {
  const cols = Object.keys(changes) as Array<keyof SessionChanges>;
  const sets = cols.map((c, i) => `${c} = $${i + 3}`).join(", ");
  const u = await tx.query(
    `UPDATE sessions SET ${sets}, version = version + 1, updated_at = $2 WHERE id = $1 AND version = $${cols.length + 3}`,
    [sessionId, at, ...cols.map((c) => changes[c]), version],
  );
  return u.rowCount === 1;
}

/** Agent -> Plan (EnterPlanMode); false when the session is not in Agent. */
export async function enterPlanMode(tx: Tx, sessionId: string, at: Date): Promise<boolean> {
  const u = await tx.query(
    "UPDATE sessions SET mode = 'plan', version = version + 1, updated_at = $2 WHERE id = $1 AND mode = 'agent'",
    [sessionId, at],
  );
  return u.rowCount === 1;
}

/** The approval an execution turn belongs to (its execution state), or null for another turn. */
export async function executionOfTurn(
  q: Q,
  turnId: string,
): Promise<{ executionState: string | null } | null> {
  const r = await q.query("SELECT execution_state FROM plan_approvals WHERE execution_turn_id = $1", [
    turnId,
  ]);
  return r.rows[0] ? { executionState: r.rows[0].execution_state ?? null } : null;
}

/** The turn a retried prompt with this idempotency key started, or null. */
export async function turnOfIdempotencyKey(q: Q, sessionId: string, key: string): Promise<string | null> {
  const r = await q.query("SELECT id FROM turns WHERE session_id = $1 AND idempotency_key = $2", [
    sessionId,
    key,
  ]);
  return r.rows[0]?.id ?? null;
}

/** Sessions this host holds a lease of (live or passivated). */
export async function countSessionLeases(q: Q, hostId: string): Promise<number> {
  const r = await q.query("SELECT count(*)::int AS n FROM session_leases WHERE host_id = $1", [hostId]);
  return r.rows[0].n;
}

/** The one derivation of a session's planning state: Agent is inactive; Plan awaits approval or plans. */
export function planningStateOf(mode: OperatingMode, approvalPending: boolean): PlanningState {
  if (mode === "agent") return "inactive";
  return approvalPending ? "awaiting_approval" : "planning";
}
