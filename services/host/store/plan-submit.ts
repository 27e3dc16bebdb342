// ExitPlanMode's submission (docs/architecture.md "Plans"): validate, write the artifact, commit the
// pending row; the file is removed again if the row does not commit. Its refusals are values
// (docs/architecture.md "Refusals"): one inside the transaction rolls it back.
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type { ProposalView } from "../../protocol/schemas.ts";
import { newId } from "../ids.ts";
import { appendAudit } from "./audit-log.ts";
import { type Tx, withRefusableTransaction } from "./db.ts";
import { type WrittenArtifact, writePlanArtifact } from "../tools/plan-artifact.ts";
import { type ApprovalRow, type PlanStoreDeps, proposalView } from "./plan-rows.ts";

function isNonEmpty(v: unknown): v is string {
  return typeof v === "string" && v.trim().length > 0;
}

export interface SubmitParams {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  principal: string;
  args: Record<string, unknown>;
}

/** The submission's validated arguments. */
interface Submitted {
  title: string;
  markdown: string;
  question: string;
}

/** The pending row and its audit, in the transaction that re-checks the session is still in Plan. */
async function insertPending(
  deps: PlanStoreDeps,
  tx: Tx,
  p: SubmitParams,
  plan: Submitted & { id: string; now: Date; artifact: WrittenArtifact },
): Promise<Result<ApprovalRow>> {
  const { id, now, artifact } = plan;
  const s = await deps.sessions.getRow(tx, p.sessionId, true);
  if (s.mode !== "plan") return refuse("PLAN_NOT_ACTIVE");
  await deps.faults?.enter("planRow");
  const r = await tx.query(
    `INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
     artifact_path, artifact_sha256, artifact_size, status, created_at, deadline, version)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, 0) RETURNING *`,
    [
      id,
      newId("req"),
      p.sessionId,
      p.turnId,
      p.toolCallId,
      plan.title,
      plan.question,
      plan.markdown,
      artifact.relativePath,
      artifact.sha256,
      artifact.byteSize,
      now,
      new Date(now.getTime() + deps.approvalTimeoutMs),
    ],
  );
  await appendAudit(tx, {
    at: now,
    principal: p.principal,
    sessionId: p.sessionId,
    turnId: p.turnId,
    toolCallId: p.toolCallId,
    action: "plan.submit",
    details: { proposalId: id, path: artifact.relativePath, sha256: artifact.sha256 },
  });
  return ok(r.rows[0] as ApprovalRow);
}

/**
 * ExitPlanMode: validates the arguments, writes the artifact, then commits the pending row. The
 * file is removed again if the row does not commit. The caller checked mode and live turn.
 */
async function submit(deps: PlanStoreDeps, p: SubmitParams): Promise<Result<ProposalView>> {
  const { db, clock, sessions } = deps;
  const { title, markdown, question } = p.args;
  if (!isNonEmpty(title) || !isNonEmpty(markdown) || !isNonEmpty(question))
    return refuse("PLAN_INVALID_ARGUMENT", "ExitPlanMode needs non-empty title, markdown and question");
  const session = await sessions.getRow(db, p.sessionId);
  if (session.mode !== "plan") return refuse("PLAN_NOT_ACTIVE");
  if (!session.workspace_root) return refuse("PLAN_WORKSPACE_REQUIRED");
  const existing = await db.query(
    "SELECT 1 FROM plan_approvals WHERE session_id = $1 AND status = 'pending'",
    [p.sessionId],
  );
  if (existing.rowCount) return refuse("PLAN_ALREADY_PENDING");
  const now = clock.date();
  const written = await writePlanArtifact({
    ...(deps.sandboxUser ? { sandboxUser: deps.sandboxUser } : {}),
    workspaceRoot: session.workspace_root,
    title,
    markdown,
    now,
    ...(deps.faults ? { beforeWrite: () => deps.faults!.enter("artifactWrite") } : {}),
  });
  if (!written.ok) return written;
  const artifact = written.value;
  const plan = { title, markdown, question, id: newId("plan"), now, artifact };
  let row: Result<ApprovalRow>;
  try {
    row = await withRefusableTransaction(db, (tx) => insertPending(deps, tx, p, plan));
  } catch (err) {
    await artifact.remove();
    if ((err as { code?: string }).code === "23505") return refuse("PLAN_ALREADY_PENDING");
    throw err;
  }
  if (!row.ok) {
    await artifact.remove();
    return row;
  }
  deps.hints?.remember(row.value.id, session.workspace_root, artifact.relativePath);
  return ok(proposalView(row.value));
}

export function planSubmit(deps: PlanStoreDeps) {
  return (p: SubmitParams): Promise<Result<ProposalView>> => submit(deps, p);
}
