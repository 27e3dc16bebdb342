// Rows of project_members (docs/security.md "Projects have owners and members"): who may see a
// project, create sessions on it and approve its sessions. The owner is always a member. Every other
// store that checks an approver joins these rows through the SQL fragments below, so membership is
// checked when it is used: a removed member's approver rights end with the removal's commit.
import { AppError } from "../../protocol/app-error.ts";
import type { ProjectMembersView } from "../../protocol/schemas.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, type Tx, withTransaction } from "./db.ts";

/** `principal` is a member of `project` (both SQL expressions). */
export const isMemberSql = (project: string, principal: string) =>
  `EXISTS (SELECT 1 FROM project_members pm WHERE pm.project_id = ${project} AND pm.principal = ${principal})`;

/**
 * The approvers of session alias `s` that are members of its project, in their stored order: what
 * every read of a session's approvers selects (`... AS approvers`). One subquery, no per-row loop.
 */
export const memberApproversSql = (s: string) =>
  `ARRAY(SELECT x.a FROM unnest(${s}.approvers) WITH ORDINALITY AS x(a, i)
          WHERE ${isMemberSql(`${s}.project_id`, "x.a")} ORDER BY x.i)`;

/** `principal` owns session alias `s` or is one of its approvers still a member of its project. */
export const ownsOrApprovesSql = (s: string, principal: string) =>
  `(${s}.owner = ${principal} OR (${principal} = ANY (${s}.approvers) AND ${isMemberSql(`${s}.project_id`, principal)}))`;

/** Whether `principal` is a member of the project (false for a project that does not exist). */
export async function isMember(q: Db | Tx, projectId: string, principal: string): Promise<boolean> {
  const r = await q.query(`SELECT ${isMemberSql("$1", "$2")} AS member`, [projectId, principal]);
  return r.rows[0]?.member === true;
}

/**
 * INVALID_PARAMS (`details: {field: "approvers", notMembers}`) unless every named approver is a
 * member of the project: only members may be named approver (one query for the whole list).
 */
export async function assertApproversAreMembers(
  q: Db | Tx,
  projectId: string,
  approvers: readonly string[] | undefined,
): Promise<void> {
  if (!approvers || approvers.length === 0) return;
  const r = await q.query(
    `SELECT array_agg(a ORDER BY i) AS missing FROM unnest($2::text[]) WITH ORDINALITY AS x(a, i)
      WHERE NOT ${isMemberSql("$1", "x.a")}`,
    [projectId, [...new Set(approvers)]],
  );
  const missing: string[] | null = r.rows[0]?.missing ?? null;
  if (missing && missing.length > 0)
    throw new AppError("INVALID_PARAMS", `approvers must be members of the project: ${missing.join(", ")}`, {
      details: { field: "approvers", notMembers: missing },
    });
}

interface MemberRow {
  principal: string;
  added_by: string | null;
  added_at: Date;
}

export function createProjectMembers({ db, clock }: { db: Db; clock: Clock }) {
  async function lockProject(tx: Tx, projectId: string): Promise<{ owner: string }> {
    const r = await tx.query("SELECT owner FROM projects WHERE id = $1 FOR UPDATE", [projectId]);
    if (r.rowCount === 0) throw new AppError("PROJECT_NOT_FOUND");
    return r.rows[0];
  }

  async function list(q: Db | Tx, projectId: string, owner: string): Promise<ProjectMembersView> {
    const r = await q.query<MemberRow>(
      `SELECT principal, added_by, added_at FROM project_members WHERE project_id = $1
        ORDER BY principal = $2 DESC, added_at, principal`,
      [projectId, owner],
    );
    return {
      projectId,
      owner,
      members: r.rows.map((m) => ({
        principal: m.principal,
        addedBy: m.added_by,
        addedAt: m.added_at.toISOString(),
      })),
    };
  }

  /** The owner-only check of add and remove, under the project's row lock (FORBIDDEN otherwise). */
  async function ownerTx<T>(
    principal: string,
    projectId: string,
    body: (tx: Tx, owner: string) => Promise<T>,
  ): Promise<T> {
    return withTransaction(db, async (tx) => {
      const { owner } = await lockProject(tx, projectId);
      if (owner !== principal)
        throw new AppError("FORBIDDEN", "only the project's owner may change its members");
      return body(tx, owner);
    });
  }

  return {
    /** The owner's own member row, written in the transaction that creates the project. */
    async addOwner(tx: Tx, projectId: string, owner: string, at: Date): Promise<void> {
      await tx.query(
        `INSERT INTO project_members (project_id, principal, added_by, added_at) VALUES ($1, $2, $2, $3)
         ON CONFLICT DO NOTHING`,
        [projectId, owner, at],
      );
    },

    /** Members of a project, the owner first; a non-member is refused FORBIDDEN. */
    async list(principal: string, projectId: string): Promise<ProjectMembersView> {
      const r = await db.query(
        `SELECT owner, ${isMemberSql("projects.id", "$2")} AS member FROM projects WHERE id = $1`,
        [projectId, principal],
      );
      if (r.rowCount === 0) throw new AppError("PROJECT_NOT_FOUND");
      if (r.rows[0].member !== true) throw new AppError("FORBIDDEN");
      return list(db, projectId, r.rows[0].owner);
    },

    /** Owner only; adding a member again changes nothing (no row, no audit). */
    async add(principal: string, projectId: string, member: string): Promise<ProjectMembersView> {
      return ownerTx(principal, projectId, async (tx, owner) => {
        const at = clock.date();
        const r = await tx.query(
          `INSERT INTO project_members (project_id, principal, added_by, added_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT DO NOTHING`,
          [projectId, member, principal, at],
        );
        if (r.rowCount === 1)
          await appendAudit(tx, {
            at,
            principal,
            action: "project.members.add",
            details: { projectId, member },
          });
        return list(tx, projectId, owner);
      });
    },

    /**
     * Owner only; the owner cannot be removed (INVALID_PARAMS, `details.field: "principal"`).
     * Removing a non-member changes nothing. The removed member's approver rights end at this commit:
     * their names stay in the sessions' lists but no longer count (re-adding them restores them).
     */
    async remove(principal: string, projectId: string, member: string): Promise<ProjectMembersView> {
      return ownerTx(principal, projectId, async (tx, owner) => {
        if (member === owner)
          throw new AppError(
            "INVALID_PARAMS",
            "the project's owner is always a member and cannot be removed",
            {
              details: { field: "principal" },
            },
          );
        const r = await tx.query("DELETE FROM project_members WHERE project_id = $1 AND principal = $2", [
          projectId,
          member,
        ]);
        if (r.rowCount === 1)
          await appendAudit(tx, {
            at: clock.date(),
            principal,
            action: "project.members.remove",
            details: { projectId, member },
          });
        return list(tx, projectId, owner);
      });
    },
  };
}

export type ProjectMembers = ReturnType<typeof createProjectMembers>;
