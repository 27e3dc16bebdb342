// ExitPlanMode's submission (docs/architecture.md "Plans"): validate on one read, write the artifact,
// commit the pending row and its audit row in one statement; the file is removed again if the row
// does not commit. Its refusals are values (docs/architecture.md "Refusals").
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type { ProposalView } from "../../protocol/schemas.ts";
import { newId } from "../ids.ts";
import { prepared } from "./db.ts";
import {
  appendedEventsColumn,
  appendEventsCtes,
  approversColumn,
  type EventRowsWrite,
  writtenEvents,
} from "./event-store.ts";
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

export interface SubmitOptions {
  /**
   * Runs the statement in the session's order of events and publishes the plan.changed it wrote
   * (sessions/events/event-publisher.ts `publishRows`); without it nothing is published.
   */
  record?: (write: SubmitWrite) => Promise<Result<ProposalView>>;
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
 * Plan (its row locked for the statement), else nothing, with its `plan.changed` event ($16). A
 * second pending row of the session fails its unique index (23505).
 */
const INSERT_PENDING = prepared(
  "plan-submit-insert",
  `WITH s AS (
       SELECT id FROM sessions WHERE id = $3 AND mode = 'plan' FOR UPDATE
     ), a AS (
       INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
              artifact_path, artifact_sha256, artifact_size, status, created_at, deadline, version)
       SELECT $1, $2, s.id, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, 0 FROM s
       RETURNING session_id, turn_id, tool_call_id
     ), audit AS (
       INSERT INTO audit_log (at, principal, session_id, turn_id, tool_call_id, action, details)
       SELECT $12, $14, a.session_id, a.turn_id, a.tool_call_id, 'plan.submit', $15 FROM a RETURNING 1
     ), ${appendEventsCtes("$3", "$12", [{ type: "plan.changed", body: "$16" }], "EXISTS (SELECT 1 FROM a)")}
     SELECT (SELECT count(*) FROM a) AS written, ${appendedEventsColumn()},
            ${approversColumn("$3")}`,
);

/** The submission's write with the event it appended, as the event publisher runs and publishes it. */
export type SubmitWrite = EventRowsWrite<Result<ProposalView>>;

/**
 * The pending row, its audit row and its plan.changed (see INSERT_PENDING), run by `record` in the
 * session's order of events; PLAN_NOT_ACTIVE when the session left Plan (nothing written).
 */
async function insertPending(
  deps: PlanStoreDeps,
  p: SubmitParams,
  plan: Submitted & { id: string; now: Date; artifact: WrittenArtifact },
  record: (write: SubmitWrite) => Promise<Result<ProposalView>>,
): Promise<Result<ProposalView>> {
  const { id, now, artifact } = plan;
  await deps.faults?.enter("planRow");
  const deadline = new Date(now.getTime() + deps.approvalTimeoutMs);
  // The view as the row will read: the event carries it, written by the same statement.
  const proposal = proposalView({
    id,
    session_id: p.sessionId,
    turn_id: p.turnId,
    tool_call_id: p.toolCallId,
    title: plan.title,
    question: plan.question,
    artifact_path: artifact.relativePath,
    artifact_sha256: artifact.sha256,
    artifact_size: artifact.byteSize,
    status: "pending",
    action: null,
    target_permission_mode: null,
    deadline,
    version: 0,
    execution_id: null,
    execution_state: null,
    error_code: null,
    created_at: now,
    resolved_at: null,
  } as ApprovalRow);
  const changed = { state: "awaiting_approval", action: "submitted", proposal, status: "pending" };
  return record(async () => {
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
        deadline,
        p.principal,
        JSON.stringify({ proposalId: id, path: artifact.relativePath, sha256: artifact.sha256 }),
        JSON.stringify(changed),
      ]),
    );
    const x = r.rows[0];
    return {
      events: writtenEvents(x.events),
      approvers: x.approvers ?? [],
      value: Number(x.written) === 1 ? ok(proposal) : refuse("PLAN_NOT_ACTIVE"),
    };
  });
}

/**
 * ExitPlanMode: validates the arguments, writes the artifact, then commits the pending row. The
 * file is removed again if the row does not commit. The caller checked mode and live turn.
 */
async function submit(
  deps: PlanStoreDeps,
  p: SubmitParams,
  opts: SubmitOptions,
): Promise<Result<ProposalView>> {
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
  const record = opts.record ?? ((write: SubmitWrite) => write(now).then((w) => w.value));
  let row: Result<ProposalView>;
  try {
    row = await insertPending(deps, p, plan, record);
  } catch (err) {
    await artifact.remove();
    if ((err as { code?: string }).code === "23505") return refuse("PLAN_ALREADY_PENDING");
    throw err;
  }
  if (!row.ok) {
    await artifact.remove();
    return row;
  }
  deps.hints?.remember(row.value.proposalId, workspaceRoot, artifact.relativePath);
  return row;
}

export function planSubmit(deps: PlanStoreDeps) {
  return (p: SubmitParams, opts: SubmitOptions = {}): Promise<Result<ProposalView>> => submit(deps, p, opts);
}
