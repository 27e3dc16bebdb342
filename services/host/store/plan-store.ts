// plan_approvals rows (ADR 0053 §4): submission, resolution in the documented order of checks, the
// approve transaction, execution claim with the artifact re-hash, abort and expiry. Each change is
// one transaction holding the row lock, with a version bump; the database guards hold by themselves.
import { AppError } from "../../protocol/app-error.ts";
import {
  EXECUTION_PERMISSION_MODES,
  type ProposalView,
  type PlansResolveParams,
} from "../../protocol/schemas.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, type Tx, withTransaction } from "./db.ts";
import type { FaultInjector } from "../sessions/fault-injector.ts";
import { newId } from "../ids.ts";
import { readPlanArtifact, sha256Hex, writePlanArtifact } from "./plan-artifact.ts";
import { canAccess, type SessionStore } from "./session-store.ts";

interface ApprovalRow {
  id: string;
  request_id: string;
  session_id: string;
  turn_id: string;
  tool_call_id: string;
  title: string;
  question: string;
  markdown: string;
  artifact_path: string;
  artifact_sha256: string;
  artifact_size: number;
  status: ProposalView["status"];
  action: string | null;
  target_permission_mode: string | null;
  created_at: Date;
  deadline: Date;
  resolved_at: Date | null;
  version: number;
  execution_id: string | null;
  execution_state: ProposalView["executionState"];
  execution_turn_id: string | null;
  error_code: string | null;
}

export function proposalView(r: ApprovalRow): ProposalView {
  return {
    proposalId: r.id,
    sessionId: r.session_id,
    turnId: r.turn_id,
    toolCallId: r.tool_call_id,
    title: r.title,
    question: r.question,
    artifactPath: r.artifact_path,
    sha256: r.artifact_sha256,
    byteSize: r.artifact_size,
    status: r.status,
    action: r.action,
    targetPermissionMode: r.target_permission_mode,
    deadline: r.deadline.toISOString(),
    version: r.version,
    executionId: r.execution_id,
    executionState: r.execution_state,
    errorCode: r.error_code,
    createdAt: r.created_at.toISOString(),
    resolvedAt: r.resolved_at ? r.resolved_at.toISOString() : null,
  };
}

/** What a resolve did: a fresh transition, the recorded earlier result, or an expiry it applied. */
export type ResolveOutcome =
  | { kind: "approved"; proposal: ProposalView; executionTurnId: string }
  | { kind: "rejected"; proposal: ProposalView }
  | { kind: "recorded"; proposal: ProposalView };

function isNonEmpty(v: unknown): v is string {
  return typeof v === "string" && v.trim().length > 0;
}

export function createPlanStore(deps: {
  db: Db;
  clock: Clock;
  sessions: SessionStore;
  approvalTimeoutMs: number;
  /** Test hooks only: the artifact write ("artifactWrite") and the row insert ("planRow") can fail. */
  faults?: FaultInjector;
}) {
  const { db, clock, sessions } = deps;

  async function lockRow(tx: Tx, proposalId: string): Promise<ApprovalRow | null> {
    const r = await tx.query("SELECT * FROM plan_approvals WHERE id = $1 FOR UPDATE", [proposalId]);
    return r.rows[0] ?? null;
  }

  /**
   * Ends the turn a pending plan parked. That turn may itself be an approved execution that entered
   * Plan again: its execution ends with it (completed when the person answered, else interrupted).
   */
  async function endParkedTurn(
    tx: Tx,
    turnId: string,
    status: "completed" | "aborted",
    code?: string,
  ): Promise<void> {
    await sessions.endTurn(tx, turnId, status, code ?? null);
    await tx.query(
      `UPDATE plan_approvals SET execution_state = $2, error_code = coalesce($3, error_code), version = version + 1
       WHERE execution_turn_id = $1 AND execution_state IN ('queued', 'running')`,
      [
        turnId,
        status === "completed" ? "completed" : "interrupted",
        status === "completed" ? null : (code ?? null),
      ],
    );
  }

  /** Expires a pending row past its deadline and ends its parked turn; returns the new row. */
  async function expireRow(tx: Tx, row: ApprovalRow): Promise<ApprovalRow> {
    const at = clock.date();
    const r = await tx.query(
      `UPDATE plan_approvals SET status = 'expired', error_code = 'PLAN_APPROVAL_TIMEOUT', resolved_at = $2, version = version + 1
       WHERE id = $1 AND status = 'pending' RETURNING *`,
      [row.id, at],
    );
    await endParkedTurn(tx, row.turn_id, "aborted", "PLAN_APPROVAL_TIMEOUT");
    await appendAudit(tx, {
      at,
      sessionId: row.session_id,
      turnId: row.turn_id,
      action: "plan.expire",
      code: "PLAN_APPROVAL_TIMEOUT",
      details: { proposalId: row.id },
    });
    return r.rows[0];
  }

  return {
    async get(
      proposalId: string,
    ): Promise<ProposalView & { workspaceRoot: string; owner: string; approvers: string[] }> {
      const r = await db.query(
        `SELECT a.*, p.workspace_root, s.owner, s.approvers FROM plan_approvals a
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
         WHERE a.status = 'pending' AND (s.owner = $1 OR $1 = ANY (s.approvers)) AND ($2::text IS NULL OR a.session_id = $2)
         ORDER BY a.created_at`,
        [principal, sessionId ?? null],
      );
      const out: ProposalView[] = [];
      for (const { id, deadline } of r.rows as Array<{ id: string; deadline: Date }>) {
        if (deadline.getTime() <= now.getTime()) {
          await withTransaction(db, async (tx) => {
            const row = await lockRow(tx, id);
            if (row?.status === "pending") await expireRow(tx, row);
          });
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
     * ExitPlanMode: validates the arguments, writes the artifact, then commits the pending row. The
     * file is removed again if the row does not commit. The caller checked mode and live turn.
     */
    async submit(p: {
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
      const artifact = await writePlanArtifact({
        workspaceRoot: session.workspace_root,
        title,
        markdown,
        now,
        ...(deps.faults ? { beforeWrite: () => deps.faults!.enter("artifactWrite") } : {}),
      });
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
    },

    /**
     * plans.resolve, checks in the order of DESIGN §5. With `readOnly` (no pending approval is held by
     * the session actor) a still-pending row is a concurrent change, never transitioned here.
     */
    async resolve(
      principal: string,
      p: PlansResolveParams,
      opts: { readOnly: boolean },
    ): Promise<ResolveOutcome> {
      return withTransaction(db, async (tx) => {
        const row = await lockRow(tx, p.proposalId);
        if (!row) throw new AppError("PLAN_NOT_FOUND");
        const session = await sessions.getRow(tx, row.session_id, !opts.readOnly);
        if (!canAccess(session, principal)) throw new AppError("FORBIDDEN");
        if (
          p.sessionId !== row.session_id ||
          p.turnId !== row.turn_id ||
          p.toolCallId !== row.tool_call_id ||
          row.status === "interrupted"
        ) {
          throw new AppError("PLAN_APPROVAL_STALE", undefined, { details: { status: row.status } });
        }
        if (p.action !== "approve" && p.action !== "reject") throw new AppError("PLAN_INVALID_ACTION");
        const mode = p.targetPermissionMode;
        if (p.action === "approve") {
          if (mode === undefined || mode === null) throw new AppError("PLAN_PERMISSION_MODE_REQUIRED");
          if (!(EXECUTION_PERMISSION_MODES as readonly string[]).includes(mode))
            throw new AppError("PLAN_PERMISSION_MODE_INVALID");
        }
        if (row.status !== "pending") {
          const same =
            row.action === p.action && (p.action === "reject" || row.target_permission_mode === mode);
          if (row.status === "expired") throw new AppError("PLAN_APPROVAL_TIMEOUT");
          if (same) return { kind: "recorded", proposal: proposalView(row) };
          throw new AppError("PLAN_ALREADY_RESOLVED", undefined, {
            details: { status: row.status, action: row.action },
          });
        }
        const now = clock.date();
        if (row.deadline.getTime() <= now.getTime()) {
          if (opts.readOnly) throw new AppError("PLAN_APPROVAL_CONFLICT");
          // The expiry commits even though the caller gets an error: the deadline is absolute.
          const expired = await expireRow(tx, row);
          return { kind: "recorded", proposal: proposalView(expired) };
        }
        if (opts.readOnly) throw new AppError("PLAN_APPROVAL_CONFLICT");
        if (p.version !== undefined && p.version !== row.version)
          throw new AppError("PLAN_APPROVAL_CONFLICT");

        await endParkedTurn(tx, row.turn_id, "completed");
        if (p.action === "reject") {
          const r = await tx.query(
            `UPDATE plan_approvals SET status = 'rejected', action = 'reject', resolved_at = $2, resolved_by = $3, version = version + 1
             WHERE id = $1 AND status = 'pending' AND version = $4 RETURNING *`,
            [row.id, now, principal, row.version],
          );
          if (r.rowCount !== 1) throw new AppError("PLAN_APPROVAL_CONFLICT");
          await sessions.appendTranscript(tx, row.session_id, row.turn_id, {
            role: "user",
            content: `[The plan "${row.title}" was rejected.]`,
            timestamp: now.getTime(),
          });
          await appendAudit(tx, {
            at: now,
            principal,
            sessionId: row.session_id,
            turnId: row.turn_id,
            action: "plan.reject",
            decision: "reject",
            details: { proposalId: row.id },
          });
          return { kind: "rejected", proposal: proposalView(r.rows[0]) };
        }
        // Approve: one transaction for row, execution, session mode and permission mode, and audit.
        const executionId = newId("exe");
        const executionTurnId = await sessions.insertTurn(tx, {
          sessionId: row.session_id,
          kind: "execution",
          proposalId: row.id,
          text: executionPrompt(row, mode as string),
        });
        const r = await tx.query(
          `UPDATE plan_approvals SET status = 'approved', action = 'approve', target_permission_mode = $2, resolved_at = $3,
             resolved_by = $4, version = version + 1, execution_id = $5, execution_state = 'queued', execution_turn_id = $6
           WHERE id = $1 AND status = 'pending' AND version = $7 RETURNING *`,
          [row.id, mode, now, principal, executionId, executionTurnId, row.version],
        );
        if (r.rowCount !== 1) throw new AppError("PLAN_APPROVAL_CONFLICT");
        await tx.query(
          "UPDATE sessions SET mode = 'agent', permission_mode = $2, version = version + 1, updated_at = $3 WHERE id = $1",
          [row.session_id, mode, now],
        );
        await appendAudit(tx, {
          at: now,
          principal,
          sessionId: row.session_id,
          turnId: row.turn_id,
          action: "plan.approve",
          decision: "approve",
          details: { proposalId: row.id, targetPermissionMode: mode, executionId },
        });
        return { kind: "approved", proposal: proposalView(r.rows[0]), executionTurnId };
      });
    },

    /**
     * A worker claims the execution turn: queued -> running (version-checked), after re-hashing the
     * artifact. A changed file interrupts the execution and ends the turn; nothing runs.
     */
    async claimExecution(
      turnId: string,
    ): Promise<{ ok: true } | { ok: false; code: "PLAN_ARTIFACT_HASH_MISMATCH" | "PLAN_EXECUTION_STALE" }> {
      const r = await db.query(
        `SELECT a.*, p.workspace_root FROM plan_approvals a JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id
         WHERE a.execution_turn_id = $1`,
        [turnId],
      );
      const row = r.rows[0] as (ApprovalRow & { workspace_root: string }) | undefined;
      if (row?.execution_state !== "queued") return { ok: false, code: "PLAN_EXECUTION_STALE" };
      let matches = false;
      try {
        matches =
          sha256Hex(await readPlanArtifact(row.workspace_root, row.artifact_path)) === row.artifact_sha256;
      } catch {
        matches = false;
      }
      const now = clock.date();
      return withTransaction(db, async (tx) => {
        if (!matches) {
          const u = await tx.query(
            `UPDATE plan_approvals SET execution_state = 'interrupted', error_code = 'PLAN_ARTIFACT_HASH_MISMATCH', version = version + 1
             WHERE id = $1 AND execution_state = 'queued' AND version = $2`,
            [row.id, row.version],
          );
          if (u.rowCount !== 1) return { ok: false as const, code: "PLAN_EXECUTION_STALE" as const };
          await sessions.endTurn(tx, turnId, "aborted", "PLAN_ARTIFACT_HASH_MISMATCH");
          await appendAudit(tx, {
            at: now,
            sessionId: row.session_id,
            turnId,
            action: "plan.execution.refuse",
            code: "PLAN_ARTIFACT_HASH_MISMATCH",
            details: { proposalId: row.id },
          });
          return { ok: false as const, code: "PLAN_ARTIFACT_HASH_MISMATCH" as const };
        }
        const u = await tx.query(
          `UPDATE plan_approvals SET execution_state = 'running', version = version + 1 WHERE id = $1 AND execution_state = 'queued' AND version = $2`,
          [row.id, row.version],
        );
        if (u.rowCount !== 1) return { ok: false as const, code: "PLAN_EXECUTION_STALE" as const };
        await appendAudit(tx, {
          at: now,
          sessionId: row.session_id,
          turnId,
          action: "plan.execution.start",
          details: { proposalId: row.id, executionId: row.execution_id },
        });
        return { ok: true as const };
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

/** The execution turn's opening message: the approved artifact's path and exact content. */
function executionPrompt(row: ApprovalRow, mode: string): string {
  return [
    `The plan "${row.title}" was approved with permission mode ${mode}. Execute it now.`,
    `Plan file: ${row.artifact_path} (sha256 ${row.artifact_sha256})`,
    "",
    row.markdown,
  ].join("\n");
}

export type PlanStore = ReturnType<typeof createPlanStore>;
