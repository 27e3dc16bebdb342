// Rows of project_members (docs/security.md "Projects have owners and members"): who may see a
// project, create sessions on it and approve its sessions. The owner is always a member; anyone else
// may leave. Every other store that checks an approver joins these rows through the SQL fragments
// below, so membership is checked when it is used: a removed (or departed) member's approver rights
// end with that commit.
import { boundPage } from "./bounded-page.ts";
import { encodePosition } from "../../protocol/pages.ts";
import type { ProjectLeft } from "../../protocol/project-schemas.ts";
import type { ProjectMembersView } from "../../protocol/schemas.ts";
import { ok, refuse, type Result } from "../../protocol/result.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, type Tx, withRefusableTransaction } from "./db.ts";
import { keysetWindow, microsSql } from "./keyset-sql.ts";

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
 * Refused INVALID_PARAMS (`details: {field: "approvers", notMembers}`) unless every named approver
 * is a member of the project: only members may be named approver (one query for the whole list).
 */
export async function approversAreMembers(
  q: Db | Tx,
  projectId: string,
  approvers: readonly string[] | undefined,
): Promise<Result<void>> {
  if (!approvers || approvers.length === 0) return ok(undefined);
  const r = await q.query(
    `SELECT array_agg(a ORDER BY i) AS missing FROM unnest($2::text[]) WITH ORDINALITY AS x(a, i)
      WHERE NOT ${isMemberSql("$1", "x.a")}`,
    [projectId, [...new Set(approvers)]],
  );
  const missing: string[] | null = r.rows[0]?.missing ?? null;
  if (missing && missing.length > 0)
    return refuse("INVALID_PARAMS", `approvers must be members of the project: ${missing.join(", ")}`, {
      field: "approvers",
      notMembers: missing,
    });
  return ok(undefined);
}

/**
 * The audit row of people newly named approver of a session (`session.approvers.add`, by the owner
 * `principal`), in the transaction that names them; it concerns each of them, and they read it with
 * audit.list (audit-query.ts). Nobody new: no row.
 */
export async function auditApproversAdded(
  tx: Tx,
  e: { at: Date; principal: string; sessionId: string; approvers: readonly string[] },
): Promise<void> {
  const approvers = [...new Set(e.approvers)];
  if (approvers.length === 0) return;
  await appendAudit(tx, {
    at: e.at,
    principal: e.principal,
    sessionId: e.sessionId,
    action: "session.approvers.add",
    details: { approvers },
  });
}

interface MemberRow {
  principal: string;
  added_by: string | null;
  added_at: Date;
  rank: number;
  added_us: string;
}

/** A page of members is asked for with these (add and remove answer the first page). */
export interface MembersPage {
  limit?: number | undefined;
  after?: string | undefined;
}

/**
 * One page of a project's members: the owner first (rank 0), then by when each was added and by
 * name, a keyset on (rank, added_at, principal) so members added meanwhile shift no page.
 */
async function membersPage(
  q: Db | Tx,
  projectId: string,
  owner: string,
  p: MembersPage,
): Promise<ProjectMembersView> {
  const w = keysetWindow(
    { limit: p.limit, cursor: p.after },
    { keys: ["m.rank", "m.added_us", "m.principal"], direction: "after", first: 3 },
  );
  const r = await q.query<MemberRow>(
    `SELECT * FROM (
       SELECT principal, added_by, added_at, (principal <> $2)::int AS rank, ${microsSql("added_at")} AS added_us
         FROM project_members WHERE project_id = $1) m
      WHERE ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [projectId, owner, ...w.params],
  );
  const page = boundPage(r.rows, {
    limit: w.limit,
    view: (m) => ({ principal: m.principal, addedBy: m.added_by, addedAt: m.added_at.toISOString() }),
    position: (m) => encodePosition([m.rank, m.added_us], m.principal),
  });
  return { projectId, owner, members: page.items, next: page.next };
}

/** What the members operations read: the pool and the host clock (every audit row's time). */
interface ProjectMembersDeps {
  db: Db;
  clock: Clock;
}

async function lockProject(tx: Tx, projectId: string): Promise<Result<{ owner: string }>> {
  const r = await tx.query("SELECT owner FROM projects WHERE id = $1 FOR UPDATE", [projectId]);
  return r.rowCount === 0 ? refuse("PROJECT_NOT_FOUND") : ok(r.rows[0]);
}

/** The owner-only check of add and remove, under the project's row lock (FORBIDDEN otherwise). */
async function ownerTx<T>(
  db: Db,
  principal: string,
  projectId: string,
  body: (tx: Tx, owner: string) => Promise<Result<T>>,
): Promise<Result<T>> {
  return withRefusableTransaction(db, async (tx) => {
    const project = await lockProject(tx, projectId);
    if (!project.ok) return project;
    if (project.value.owner !== principal)
      return refuse("FORBIDDEN", "only the project's owner may change its members");
    return body(tx, project.value.owner);
  });
}

/** The owner's own member row, written in the transaction that creates the project. */
async function addOwner(tx: Tx, projectId: string, owner: string, at: Date): Promise<void> {
  await tx.query(
    `INSERT INTO project_members (project_id, principal, added_by, added_at) VALUES ($1, $2, $2, $3)
     ON CONFLICT DO NOTHING`,
    [projectId, owner, at],
  );
}

/** One page of a project's members, the owner first; a non-member is refused FORBIDDEN. */
async function listMembers(
  db: Db,
  principal: string,
  projectId: string,
  page: MembersPage = {},
): Promise<Result<ProjectMembersView>> {
  const r = await db.query(
    `SELECT owner, ${isMemberSql("projects.id", "$2")} AS member FROM projects WHERE id = $1`,
    [projectId, principal],
  );
  if (r.rowCount === 0) return refuse("PROJECT_NOT_FOUND");
  if (r.rows[0].member !== true) return refuse("FORBIDDEN");
  return ok(await membersPage(db, projectId, r.rows[0].owner, page));
}

/**
 * Owner only; adding a member again changes nothing (no row, no audit). The audit row names the
 * member, who reads it with audit.list (audit-query.ts).
 */
async function addMember(
  { db, clock }: ProjectMembersDeps,
  principal: string,
  projectId: string,
  member: string,
): Promise<Result<ProjectMembersView>> {
  return ownerTx(db, principal, projectId, async (tx, owner) => {
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
    return ok(await membersPage(tx, projectId, owner, {}));
  });
}

/**
 * Owner only; the owner cannot be removed (INVALID_PARAMS, `details.field: "principal"`).
 * Removing a non-member changes nothing. The removed member's approver rights end at this commit:
 * their names stay in the sessions' lists but no longer count (re-adding them restores them).
 */
async function removeMember(
  { db, clock }: ProjectMembersDeps,
  principal: string,
  projectId: string,
  member: string,
): Promise<Result<ProjectMembersView>> {
  return ownerTx(db, principal, projectId, async (tx, owner) => {
    if (member === owner)
      return refuse("INVALID_PARAMS", "the project's owner is always a member and cannot be removed", {
        field: "principal",
      });
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
    return ok(await membersPage(tx, projectId, owner, {}));
  });
}

/**
 * The caller ends their own membership, audited as `project.leave`; from this commit they are
 * no approver of the project's sessions (as after a removal) while the sessions they own stay
 * theirs. The owner cannot leave (PROJECT_OWNER_CANNOT_LEAVE); a non-member is FORBIDDEN.
 */
async function leaveProject(
  { db, clock }: ProjectMembersDeps,
  principal: string,
  projectId: string,
): Promise<Result<ProjectLeft>> {
  return withRefusableTransaction(db, async (tx) => {
    const project = await lockProject(tx, projectId);
    if (!project.ok) return project;
    if (project.value.owner === principal) return refuse("PROJECT_OWNER_CANNOT_LEAVE");
    const r = await tx.query("DELETE FROM project_members WHERE project_id = $1 AND principal = $2", [
      projectId,
      principal,
    ]);
    if (r.rowCount !== 1) return refuse("FORBIDDEN", "only a member of the project may leave it");
    await appendAudit(tx, {
      at: clock.date(),
      principal,
      action: "project.leave",
      details: { projectId, member: principal },
    });
    return ok({ projectId, left: true as const });
  });
}

export function createProjectMembers(deps: ProjectMembersDeps) {
  const { db } = deps;
  return {
    addOwner,
    list: (principal: string, projectId: string, page?: MembersPage) =>
      listMembers(db, principal, projectId, page),
    add: (principal: string, projectId: string, member: string) =>
      addMember(deps, principal, projectId, member),
    remove: (principal: string, projectId: string, member: string) =>
      removeMember(deps, principal, projectId, member),
    leave: (principal: string, projectId: string) => leaveProject(deps, principal, projectId),
  };
}

export type ProjectMembers = ReturnType<typeof createProjectMembers>;
