// ExitPlanMode's submission (docs/architecture.md "Plans"): validate on one read, write the artifact,
// commit the pending row and its audit row in one statement; the file is removed again if the row
// does not commit. Its refusals are values (docs/architecture.md "Refusals").
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type { ProposalView } from "../../protocol/schemas.ts";
import { newId } from "../ids.ts";
import { prepared } from "./db.ts";
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

/** Where the session stands before its plan file is written: mode, workspace, a pending proposal. */
const BEFORE_SUBMIT = prepared(
  "plan-submit-read",
  `SELECT s.mode, p.workspace_root,
          EXISTS (SELECT 1 FROM plan_approvals WHERE session_id = s.id AND status = 'pending') AS pending
     FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = $1`,
);

/**
 * The pending row and its audit row, one statement: written only while the session is still in
 * Plan (its row locked for the statement), else nothing. A second pending row of the session fails
 * its unique index (23505).
 */
const INSERT_PENDING = prepared(
  "plan-submit-insert",
  `WITH s AS (
       SELECT id FROM sessions WHERE id = $3 AND mode = 'plan' FOR UPDATE
     ), a AS (
       INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
              artifact_path, artifact_sha256, artifact_size, status, created_at, deadline, version)
       SELECT $1, $2, s.id, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, 0 FROM s RETURNING *
     ), audit AS (
       INSERT INTO audit_log (at, principal, session_id, turn_id, tool_call_id, action, details)
       SELECT $12, $14, a.session_id, a.turn_id, a.tool_call_id, 'plan.submit', $15 FROM a RETURNING 1
     )
     SELECT * FROM a`,
);

/** The pending row and its audit (see INSERT_PENDING); PLAN_NOT_ACTIVE when the session left Plan. */
async function insertPending(
  deps: PlanStoreDeps,
  p: SubmitParams,
  plan: Submitted & { id: string; now: Date; artifact: WrittenArtifact },
): Promise<Result<ApprovalRow>> {
  const { id, now, artifact } = plan;
  await deps.faults?.enter("planRow");
  const r = await deps.db.query(
    INSERT_PENDING([
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
      p.principal,
      JSON.stringify({ proposalId: id, path: artifact.relativePath, sha256: artifact.sha256 }),
    ]),
  );
  return r.rows[0] ? ok(r.rows[0] as ApprovalRow) : refuse("PLAN_NOT_ACTIVE");
}

/**
 * ExitPlanMode: validates the arguments, writes the artifact, then commits the pending row. The
 * file is removed again if the row does not commit. The caller checked mode and live turn.
 */
async function submit(deps: PlanStoreDeps, p: SubmitParams): Promise<Result<ProposalView>> {
  const { db, clock } = deps;
  const { title, markdown, question } = p.args;
  if (!isNonEmpty(title) || !isNonEmpty(markdown) || !isNonEmpty(question))
    return refuse("PLAN_INVALID_ARGUMENT", "ExitPlanMode needs non-empty title, markdown and question");
  const session = (await db.query(BEFORE_SUBMIT([p.sessionId]))).rows[0] as
    | { mode: string; workspace_root: string | null; pending: boolean }
    | undefined;
  if (!session) return refuse("SESSION_NOT_FOUND");
  if (session.mode !== "plan") return refuse("PLAN_NOT_ACTIVE");
  if (!session.workspace_root) return refuse("PLAN_WORKSPACE_REQUIRED");
  if (session.pending) return refuse("PLAN_ALREADY_PENDING");
  const workspaceRoot = session.workspace_root;
  const now = clock.date();
  const written = await writePlanArtifact({
    ...(deps.sandboxUser ? { sandboxUser: deps.sandboxUser } : {}),
    workspaceRoot,
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
    row = await insertPending(deps, p, plan);
  } catch (err) {
    await artifact.remove();
    if ((err as { code?: string }).code === "23505") return refuse("PLAN_ALREADY_PENDING");
    throw err;
  }
  if (!row.ok) {
    await artifact.remove();
    return row;
  }
  deps.hints?.remember(row.value.id, workspaceRoot, artifact.relativePath);
  return ok(proposalView(row.value));
}

export function planSubmit(deps: PlanStoreDeps) {
  return (p: SubmitParams): Promise<Result<ProposalView>> => submit(deps, p);
}
