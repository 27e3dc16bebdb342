// ExitPlanMode's submission (docs/architecture.md "Plans"): validate, write the artifact, commit the
// pending row; the file is removed again if the row does not commit.
import { AppError } from "../../protocol/app-error.ts";
import { refusalError } from "../../protocol/result.ts";
import { newId } from "../ids.ts";
import { appendAudit } from "./audit-log.ts";
import { withTransaction } from "./db.ts";
import { writePlanArtifact } from "./plan-artifact.ts";
import { type ApprovalRow, type PlanStoreDeps, proposalView } from "./plan-rows.ts";

function isNonEmpty(v: unknown): v is string {
  return typeof v === "string" && v.trim().length > 0;
}

export function planSubmit(deps: PlanStoreDeps) {
  const { db, clock, sessions } = deps;
  /**
   * ExitPlanMode: validates the arguments, writes the artifact, then commits the pending row. The
   * file is removed again if the row does not commit. The caller checked mode and live turn.
   */
  async function submit(p: {
    sessionId: string;
    turnId: string;
    toolCallId: string;
    principal: string;
    args: Record<string, unknown>;
  }) {
    const { title, markdown, question } = p.args;
    if (!isNonEmpty(title) || !isNonEmpty(markdown) || !isNonEmpty(question)) {
      throw new AppError(
        "PLAN_INVALID_ARGUMENT",
        "ExitPlanMode needs non-empty title, markdown and question",
      );
    }
    const session = await sessions.getRow(db, p.sessionId);
    if (session.mode !== "plan") throw new AppError("PLAN_NOT_ACTIVE");
    if (!session.workspace_root) throw new AppError("PLAN_WORKSPACE_REQUIRED");
    const existing = await db.query(
      "SELECT 1 FROM plan_approvals WHERE session_id = $1 AND status = 'pending'",
      [p.sessionId],
    );
    if (existing.rowCount) throw new AppError("PLAN_ALREADY_PENDING");
    const now = clock.date();
    const written = await writePlanArtifact({
      ...(deps.sandboxUser ? { sandboxUser: deps.sandboxUser } : {}),
      workspaceRoot: session.workspace_root,
      title,
      markdown,
      now,
      ...(deps.faults ? { beforeWrite: () => deps.faults!.enter("artifactWrite") } : {}),
    });
    if (!written.ok) throw refusalError(written.refusal);
    const artifact = written.value;
    const id = newId("plan");
    try {
      const row = await withTransaction(db, async (tx) => {
        const s = await sessions.getRow(tx, p.sessionId, true);
        if (s.mode !== "plan") throw new AppError("PLAN_NOT_ACTIVE");
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
            title,
            question,
            markdown,
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
        return r.rows[0] as ApprovalRow;
      });
      return proposalView(row);
    } catch (err) {
      await artifact.remove();
      if ((err as { code?: string }).code === "23505")
        throw new AppError("PLAN_ALREADY_PENDING", undefined, { cause: err });
      throw err;
    }
  }
  return submit;
}
