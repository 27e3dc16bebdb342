// plans.resolve (docs/architecture.md "Plans"): one read, the checks in the documented order on it,
// the plan file hashed outside any lock, then the reject or the approve as one statement with its
// events (plan-resolve-statements.ts: row, execution turn, session mode and permission mode, audit).
// Its refusals are values (docs/architecture.md "Refusals"); a refusal writes nothing.
import { ok, type Result, refuse } from "../../protocol/result.ts";
import {
  EXECUTION_PERMISSION_MODES,
  type PlansResolveParams,
  type ProposalView,
} from "../../protocol/schemas.ts";
import { commitOutcomeUnknown, isConnectionLost, withTransaction } from "./db.ts";
import type { EventRowsWrite } from "./event-store.ts";
import { hashOf } from "../tools/plan-file-hints.ts";
import {
  approveStatement,
  isRefused,
  type ResolveRead,
  readForResolve,
  rejectStatement,
} from "./plan-resolve-statements.ts";
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

/** A statement's write with the events it appended, as the event publisher runs and publishes it. */
export type ResolveWrite = EventRowsWrite<ResolveOutcome>;

export interface ResolveOptions {
  /** No pending approval is held by the session actor: a still-pending row is never transitioned. */
  readOnly: boolean;
  /**
   * Runs the decision's statement in the session's order of events and publishes what it wrote
   * (sessions/events/event-publisher.ts `publishRows`); without it the statement runs and nothing is
   * published (the rows and events are written all the same).
   */
  record?: (write: ResolveWrite) => Promise<ResolveOutcome>;
}

/**
 * plans.resolve, checks in the order of docs/protocol.md. With `readOnly` (no pending approval is held by
 * the session actor) a still-pending row is a concurrent change, never transitioned here.
 */
async function resolve(
  deps: PlanStoreDeps,
  rows: PlanRows,
  principal: string,
  p: PlansResolveParams,
  opts: ResolveOptions,
): Promise<Result<ResolveOutcome>> {
  try {
    // A decision that lost a race to another (its row changed between the read and the write) reads
    // again: the row is then resolved, and the checks answer as for any later request (the recorded
    // result, or PLAN_ALREADY_RESOLVED); only a caller that named a version gets the conflict.
    for (let attempt = 1; ; attempt++) {
      const r = await resolveOnce(deps, rows, principal, p, opts);
      const raced = !r.ok && r.refusal.details?.raced === true;
      if (!raced || p.version !== undefined || attempt >= 3) return r;
    }
  } catch (err) {
    // The connection was lost while the decision's statement ran (or in a COMMIT): it may have
    // committed. Tell the truth.
    if (
      !commitOutcomeUnknown(err) &&
      !(isConnectionLost(err) && (err as { inDecision?: boolean }).inDecision)
    )
      throw err;
    return outcomeAfterLostCommit(deps, principal, p);
  }
}

/**
 * Re-reads the row (retrying while the database is unreachable, a few seconds at most): resolved
 * as this request asked by this principal means it committed and the outcome is that; still
 * pending means nothing committed (DATABASE_UNAVAILABLE, retry); unreadable stays unknown.
 */
async function outcomeAfterLostCommit(
  { db }: PlanStoreDeps,
  principal: string,
  p: PlansResolveParams,
): Promise<Result<ResolveOutcome>> {
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
        return ok({ kind: "approved", proposal: proposalView(row), executionTurnId: row.execution_turn_id });
      if (row.status === "rejected") return ok({ kind: "rejected", proposal: proposalView(row) });
    }
    return refuse("DATABASE_UNAVAILABLE", "the database connection was lost; nothing was committed", {
      committed: false,
    });
  }
  return refuse(
    "DATABASE_UNAVAILABLE",
    "the database connection was lost while committing; read the proposal (plans.get) to see whether it was resolved",
    { committed: "unknown" },
  );
}

/**
 * The checks of docs/protocol.md on the one read, before any write: a refusal, the recorded result
 * of a row already resolved as asked, or null (a pending row the request may transition).
 */
function checkRequest(
  { row, session }: ResolveRead,
  principal: string,
  p: PlansResolveParams,
): Result<ResolveOutcome> | null {
  if (!canAccess(session, principal)) return refuse("FORBIDDEN");
  if (
    p.sessionId !== row.session_id ||
    p.turnId !== row.turn_id ||
    p.toolCallId !== row.tool_call_id ||
    row.status === "interrupted"
  ) {
    return refuse("PLAN_APPROVAL_STALE", undefined, { status: row.status });
  }
  if (p.action !== "approve" && p.action !== "reject") return refuse("PLAN_INVALID_ACTION");
  const mode = p.targetPermissionMode;
  if (p.action === "approve") {
    if (mode === undefined || mode === null) return refuse("PLAN_PERMISSION_MODE_REQUIRED");
    if (!(EXECUTION_PERMISSION_MODES as readonly string[]).includes(mode))
      return refuse("PLAN_PERMISSION_MODE_INVALID");
  }
  if (row.status !== "pending") {
    const same = row.action === p.action && (p.action === "reject" || row.target_permission_mode === mode);
    if (row.status === "expired") return refuse("PLAN_APPROVAL_TIMEOUT");
    if (same) return ok({ kind: "recorded", proposal: proposalView(row) });
    return refuse("PLAN_ALREADY_RESOLVED", undefined, { status: row.status, action: row.action });
  }
  return null;
}

async function resolveOnce(
  { db, clock, hints }: PlanStoreDeps,
  { lockRow, expireRow }: PlanRows,
  principal: string,
  p: PlansResolveParams,
  opts: ResolveOptions,
): Promise<Result<ResolveOutcome>> {
  // One read of the row, its session and its project: every check below is decided on it, and the
  // write re-checks by version that nothing changed since.
  // An approval's plan file is hashed while the row is read when this host knows where it is.
  const early = p.action === "approve" ? hints?.hashEarly(p.proposalId) : null;
  const found = await readForResolve(db, p.proposalId);
  if (!found) return refuse("PLAN_NOT_FOUND");
  const checked = checkRequest(found, principal, p);
  if (checked) return checked;
  const { row, session } = found;
  const now = clock.date();
  if (row.deadline.getTime() <= now.getTime()) {
    if (opts.readOnly) return refuse("PLAN_APPROVAL_CONFLICT");
    // The expiry commits even though the caller gets an error: the deadline is absolute.
    const expired = await withTransaction(db, async (tx) => {
      const locked = await lockRow(tx, row.id);
      return locked?.status === "pending" ? expireRow(tx, locked) : locked;
    });
    return ok({ kind: "recorded", proposal: proposalView(expired ?? row) });
  }
  // The file must still be the plan that was submitted: hashed now, outside any lock, and the
  // write below commits only if the row is still the version that hash was compared with. A
  // mismatch changes nothing (the row stays pending, Reject still works).
  if (p.action === "approve") {
    const unchanged = await artifactUnchanged(
      row,
      await hashOf(early, session.workspace_root, row.artifact_path),
    );
    if (!unchanged.ok) return unchanged;
  }
  if (opts.readOnly) return refuse("PLAN_APPROVAL_CONFLICT");
  if (p.version !== undefined && p.version !== row.version) return refuse("PLAN_APPROVAL_CONFLICT");
  const record = opts.record ?? ((write: ResolveWrite) => write(now).then((w) => w.value));
  const statement = p.action === "reject" ? rejectStatement : approveStatement;
  const mode = p.targetPermissionMode ?? "";
  const write: ResolveWrite = (at) =>
    statement(db, { row, session, principal, mode, at }).catch((err: unknown) => {
      if (isConnectionLost(err)) Object.assign(err as object, { inDecision: true });
      throw err;
    });
  try {
    const outcome = await record(write);
    // The execution's claim hashes the same file: where it is, by the execution turn.
    if (outcome.kind === "approved") {
      hints?.remember(outcome.executionTurnId, session.workspace_root, row.artifact_path);
      hints?.forget(row.id);
    } else if (outcome.kind === "rejected") hints?.forget(row.id);
    return ok(outcome);
  } catch (err) {
    // The statement refused itself (its row changed since the read) and wrote nothing.
    if (isRefused(err, "PLAN_APPROVAL_CONFLICT"))
      return refuse("PLAN_APPROVAL_CONFLICT", undefined, { raced: true });
    throw err;
  }
}
/** plans.resolve over the store's pool and clock and its row helpers (plan-rows.ts). */
export function planResolve(deps: PlanStoreDeps, rows: PlanRows) {
  return (principal: string, p: PlansResolveParams, opts: ResolveOptions): Promise<Result<ResolveOutcome>> =>
    resolve(deps, rows, principal, p, opts);
}

/**
 * PLAN_ARTIFACT_HASH_MISMATCH unless the plan file holds exactly the submitted bytes: `actual` is
 * its hash now (null: missing, unsafe or unreadable, which never matches).
 */
function artifactUnchanged(row: ApprovalRow, actual: string | null): Result<null> {
  if (actual === row.artifact_sha256) return ok(null);
  return refuse("PLAN_ARTIFACT_HASH_MISMATCH", "the plan file changed since it was submitted", {
    path: row.artifact_path,
    expected: row.artifact_sha256,
    actual,
  });
}
