// plan_approvals rows (docs/architecture.md "Plans"), one file per operation: submission
// (plan-submit.ts), resolution (plan-resolve.ts), the execution claim (plan-execution.ts); reads,
// abort and expiry here. The database guards hold by themselves.
import { createPlanFileHints } from "../tools/plan-file-hints.ts";
import { ok, refuse, type Result } from "../../protocol/result.ts";
import { boundPage } from "./bounded-page.ts";
import {
  PLANS_HISTORY_MAX_BYTES,
  type OperatingMode,
  type PlansPendingParams,
  type ProposalHistoryPage,
  type ProposalList,
  type ProposalView,
} from "../../protocol/schemas.ts";
import type { Clock } from "../clock.ts";
import { type Db, type Tx, withTransaction } from "./db.ts";
import { appendAudit } from "./audit-log.ts";
import { planExecution } from "./plan-execution.ts";
import { planResolve } from "./plan-resolve.ts";
import { type ApprovalRow, type PlanRows, type PlanStoreDeps, planRows, proposalView } from "./plan-rows.ts";
import { planSubmit } from "./plan-submit.ts";
import { timePosition, timeWindow } from "./keyset-sql.ts";
import { memberApproversSql, ownsOrApprovesSql } from "./project-members.ts";

export type { ClaimExecutionOutcome } from "./plan-execution.ts";
export type { ResolveOutcome } from "./plan-resolve.ts";
export { type PlanFaults, proposalView } from "./plan-rows.ts";

/** Pending rows past their deadline one plans.pending read expires at most. */
const EXPIRED_PER_READ = 100;

/** A history page's bounds: how many, and a keyset position (a previous page's `next`). */
interface HistoryParams {
  limit?: number | undefined;
  before?: string | undefined;
}

/** The expiry a read applies to a row past its deadline: under the row lock, if still pending. */
async function expireIfStillPending(
  db: Db,
  { lockRow, expireRow }: PlanRows,
  proposalId: string,
): Promise<void> {
  await withTransaction(db, async (tx) => {
    const row = await lockRow(tx, proposalId);
    if (row?.status === "pending") await expireRow(tx, row);
  });
}

async function getProposal(
  db: Db,
  proposalId: string,
): Promise<Result<ProposalView & { workspaceRoot: string; owner: string; approvers: string[] }>> {
  const r = await db.query(
    `SELECT a.*, p.workspace_root, s.owner, ${memberApproversSql("s")} AS approvers FROM plan_approvals a
     JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id WHERE a.id = $1`,
    [proposalId],
  );
  if (r.rowCount === 0) return refuse("PLAN_NOT_FOUND");
  const row = r.rows[0];
  return ok({
    ...proposalView(row),
    workspaceRoot: row.workspace_root,
    owner: row.owner,
    approvers: row.approvers,
  });
}

/** Many proposals at once (what a fence interrupted), with their session's mode: one read. */
async function viewsWithMode(
  db: Db,
  proposalIds: readonly string[],
): Promise<Array<{ view: ProposalView; mode: OperatingMode }>> {
  if (proposalIds.length === 0) return [];
  const r = await db.query(
    "SELECT a.*, s.mode AS session_mode FROM plan_approvals a JOIN sessions s ON s.id = a.session_id WHERE a.id = ANY($1)",
    [proposalIds],
  );
  return r.rows.map((row) => ({ view: proposalView(row), mode: row.session_mode }));
}

/**
 * One page of the pending rows the principal owns or approves (one session's, with
 * `sessionId`), oldest first: a keyset on (created_at, id) after `after`. Rows past their
 * deadline are never listed; up to EXPIRED_PER_READ of them are expired first (each once; the
 * sessions' own deadlines expire the rest), so one read costs a bounded number of writes.
 */
async function pending(
  { db, clock }: PlanStoreDeps,
  rows: PlanRows,
  principal: string,
  p: PlansPendingParams,
): Promise<ProposalList> {
  const now = clock.date();
  const visible = `a.status = 'pending' AND ${ownsOrApprovesSql("s", "$1")} AND ($3::text IS NULL OR a.session_id = $3)`;
  const due = await db.query(
    `SELECT a.id FROM plan_approvals a JOIN sessions s ON s.id = a.session_id
      WHERE ${visible} AND a.deadline <= $2 ORDER BY a.deadline LIMIT ${EXPIRED_PER_READ}`,
    [principal, now, p.sessionId ?? null],
  );
  for (const { id } of due.rows as Array<{ id: string }>) await expireIfStillPending(db, rows, id);
  const w = timeWindow(
    { limit: p.limit, cursor: p.after },
    { time: "a.created_at", id: "a.id", direction: "after", first: 4 },
  );
  const r = await db.query<ApprovalRow & { position_us: string }>(
    `SELECT a.*, ${w.select} FROM plan_approvals a JOIN sessions s ON s.id = a.session_id
      WHERE ${visible} AND a.deadline > $2 AND ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [principal, now, p.sessionId ?? null, ...w.params],
  );
  const page = boundPage(r.rows, { limit: w.limit, view: proposalView, position: timePosition });
  return { proposals: page.items, next: page.next };
}

/**
 * One page of a session's proposals of every status, newest first (created_at, then id), after
 * applying expiry as pending() does. `before` is a keyset position (a previous page's `next`),
 * so rows added meanwhile shift no page: no gaps, no repeats. The caller checks access.
 */
async function history(
  { db, clock }: PlanStoreDeps,
  rows: PlanRows,
  sessionId: string,
  p: HistoryParams,
): Promise<ProposalHistoryPage> {
  const due = await db.query(
    "SELECT id FROM plan_approvals WHERE session_id = $1 AND status = 'pending' AND deadline <= $2",
    [sessionId, clock.date()],
  );
  for (const { id } of due.rows as Array<{ id: string }>) await expireIfStillPending(db, rows, id);
  const w = timeWindow(
    { limit: p.limit, cursor: p.before },
    { time: "a.created_at", id: "a.id", direction: "before", first: 2 },
  );
  const r = await db.query<ApprovalRow & { position_us: string }>(
    `SELECT a.*, ${w.select} FROM plan_approvals a
      WHERE a.session_id = $1 AND ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [sessionId, ...w.params],
  );
  const page = boundPage(r.rows, {
    limit: w.limit,
    maxBytes: PLANS_HISTORY_MAX_BYTES,
    view: proposalView,
    position: timePosition,
  });
  return { proposals: page.items, next: page.next };
}

/** Abort while an approval is pending: the row becomes interrupted and the parked turn aborted. */
async function interruptPending(
  clock: Clock,
  tx: Tx,
  sessionId: string,
  principal: string,
): Promise<ProposalView | null> {
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
}

async function expireIfDue(
  { db, clock }: PlanStoreDeps,
  { expireRow }: PlanRows,
  sessionId: string,
): Promise<ProposalView | null> {
  return withTransaction(db, async (tx) => {
    const r = await tx.query(
      "SELECT * FROM plan_approvals WHERE session_id = $1 AND status = 'pending' FOR UPDATE",
      [sessionId],
    );
    const row = r.rows[0] as ApprovalRow | undefined;
    if (!row || row.deadline.getTime() > clock.now()) return null;
    return proposalView(await expireRow(tx, row));
  });
}

export function createPlanStore(given: PlanStoreDeps) {
  const deps: PlanStoreDeps = { ...given, hints: given.hints ?? createPlanFileHints() };
  const { db, clock } = deps;
  const rows = planRows(deps);
  return {
    get: (proposalId: string) => getProposal(db, proposalId),
    viewsWithMode: (proposalIds: readonly string[]) => viewsWithMode(db, proposalIds),
    pending: (principal: string, p: PlansPendingParams) => pending(deps, rows, principal, p),
    history: (sessionId: string, p: HistoryParams) => history(deps, rows, sessionId, p),
    submit: planSubmit(deps),
    resolve: planResolve(deps, rows),
    ...planExecution(deps),
    interruptPending: (tx: Tx, sessionId: string, principal: string) =>
      interruptPending(clock, tx, sessionId, principal),
    expireIfDue: (sessionId: string) => expireIfDue(deps, rows, sessionId),
  };
}

export type PlanStore = ReturnType<typeof createPlanStore>;
