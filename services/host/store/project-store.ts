// Rows of projects (docs/architecture.md "Tools"): a workspace root under a configured root, its owner,
// and its tool settings (network for the sandbox, BrowserPreview origins). Which folders a person may
// open is workspace-grants.ts, checked on the real path (project-root.ts). Every change is one audited
// transaction on the host clock; tool calls read the settings on every call. No two project roots
// overlap (equal, inside or containing); overlaps left by earlier versions are kept here, reported.
// Who may see and use a project: its members (project-members.ts); the owner is one from the start.
import type { Logger } from "../../runtime/log.ts";
import { ADVISORY_LOCKS } from "./advisory-locks.ts";
import { boundPage } from "./bounded-page.ts";
import {
  normalisePreviewOrigins,
  type ProjectList,
  type ProjectsConfigureParams,
  type ProjectsListParams,
  type ProjectView,
} from "../../protocol/project-schemas.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, type Tx, withRefusableTransaction } from "./db.ts";
import { ok, refuse, type Result } from "../../protocol/result.ts";
import { newId } from "../ids.ts";
import { timePosition, timeWindow } from "./keyset-sql.ts";
import { createProjectMembers, isMemberSql, type ProjectMembers } from "./project-members.ts";
import { resolveRoot, type RootAccess } from "../tools/project-root.ts";
import { openAccess, type WorkspaceAccess } from "../tools/workspace-grants.ts";

interface ProjectRow {
  id: string;
  name: string;
  workspace_root: string;
  owner: string;
  network_allowed: boolean;
  preview_origins: string[];
  version: number;
  created_at: Date;
  updated_at: Date | null;
}

const PROJECT_COLUMNS =
  "id, name, workspace_root, owner, network_allowed, preview_origins, version, created_at, updated_at";
/** PROJECT_COLUMNS of the table alias `alias`, for a select that joins. */
const qualified = (alias: string) =>
  PROJECT_COLUMNS.split(", ")
    .map((c) => `${alias}.${c}`)
    .join(", ");

/** Key of the transaction-scoped advisory lock every projects.create takes (advisory-locks.ts). */
const PROJECT_ROOTS_LOCK = ADVISORY_LOCKS.projectRoots.key;

/** One project of an overlapping pair, as the store keeps it (roots are shown only to who may see). */
export interface OverlapSide {
  projectId: string;
  owner: string;
  workspaceRoot: string;
}
export type ProjectOverlap = [OverlapSide, OverlapSide];

/** The root with one trailing separator, so a prefix test compares whole components (`/a/b/` vs `/a/bc/`). */
const asPrefix = (root: string) => (root.endsWith("/") ? root : `${root}/`);

/** Component-wise: equal, inside or containing. */
export function rootsOverlap(a: string, b: string): boolean {
  const pa = asPrefix(a);
  const pb = asPrefix(b);
  return pa.startsWith(pb) || pb.startsWith(pa);
}

/**
 * The same test in SQL over a column holding a root (`rtrim` keeps `/` as `/`). An empty root (a
 * project without a workspace) overlaps nothing: callers exclude it, since it would read as `/`.
 */
const PREFIX_SQL = (col: string) => `(rtrim(${col}, '/') || '/')`;

/** Every pair of existing projects whose roots overlap (rows written before the check existed). */
export async function overlappingProjects(db: Db | Tx): Promise<ProjectOverlap[]> {
  const r = await db.query(
    `SELECT a.id AS a_id, a.owner AS a_owner, a.workspace_root AS a_root,
            b.id AS b_id, b.owner AS b_owner, b.workspace_root AS b_root
       FROM projects a JOIN projects b ON a.id < b.id
        AND a.workspace_root <> '' AND b.workspace_root <> ''
        AND (left(${PREFIX_SQL("b.workspace_root")}, length(${PREFIX_SQL("a.workspace_root")})) = ${PREFIX_SQL("a.workspace_root")}
          OR left(${PREFIX_SQL("a.workspace_root")}, length(${PREFIX_SQL("b.workspace_root")})) = ${PREFIX_SQL("b.workspace_root")})
      ORDER BY a.id, b.id`,
  );
  return r.rows.map((x) => [
    { projectId: x.a_id, owner: x.a_owner, workspaceRoot: x.a_root },
    { projectId: x.b_id, owner: x.b_owner, workspaceRoot: x.b_root },
  ]);
}

function relation(root: string, other: string): "equal" | "inside" | "contains" {
  if (asPrefix(root) === asPrefix(other)) return "equal";
  return asPrefix(root).startsWith(asPrefix(other)) ? "inside" : "contains";
}

/** The refusal of a root overlapping `other`; its root is named only to who may see that project. */
function overlapRefusal(root: string, other: OverlapSide, visible: boolean): Result<never> {
  const rel = relation(root, other.workspaceRoot);
  const where = visible ? ` (${other.workspaceRoot})` : "";
  const what =
    rel === "equal"
      ? "is the root of"
      : rel === "inside"
        ? "lies inside the root of"
        : "contains the root of";
  return refuse("PROJECT_ROOT_OVERLAPS", `${root} ${what} project ${other.projectId}${where}`, {
    projectId: other.projectId,
    relation: rel,
    ...(visible ? { workspaceRoot: other.workspaceRoot } : {}),
  });
}

function view(row: ProjectRow): ProjectView {
  return {
    id: row.id,
    name: row.name,
    workspaceRoot: row.workspace_root,
    owner: row.owner,
    network: row.network_allowed,
    previewOrigins: row.preview_origins,
    version: row.version,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at ? row.updated_at.toISOString() : null,
  };
}

/** What every project-store operation reads: the pool, the host clock and the folders people may open. */
interface ProjectStoreDeps extends RootAccess {
  db: Db;
  clock: Clock;
}

/** The overlapping pairs loaded at start and, per root, the projects it overlaps (reportOverlaps). */
interface OverlapState {
  overlaps: ProjectOverlap[];
  overlapIndex: Map<string, string[]>;
}

async function getRow(q: Db | Tx, projectId: string, forUpdate = false): Promise<Result<ProjectRow>> {
  const r = await q.query(
    `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [projectId],
  );
  return r.rowCount === 0 ? refuse("PROJECT_NOT_FOUND") : ok(r.rows[0]);
}

/**
 * Refuses (PROJECT_ROOT_OVERLAPS) a real root equal to, inside or containing another project's
 * root; the other's root is named only if `mayView(owner)`. Unlocked: creates check again.
 */
async function noOverlap(
  q: Db | Tx,
  root: string,
  mayView: (owner: string) => boolean,
): Promise<Result<void>> {
  const r = await q.query(
    `SELECT id, owner, workspace_root FROM projects
      WHERE workspace_root <> ''
        AND (left(${PREFIX_SQL("workspace_root")}, length($1)) = $1
         OR left($1, length(${PREFIX_SQL("workspace_root")})) = ${PREFIX_SQL("workspace_root")})
      ORDER BY created_at, id LIMIT 1`,
    [asPrefix(root)],
  );
  const other = r.rows[0];
  if (!other) return ok(undefined);
  const side = { projectId: other.id, owner: other.owner, workspaceRoot: other.workspace_root };
  return overlapRefusal(root, side, mayView(other.owner));
}

/** Whose roots a create's refusal may name, and what joins its audit row's details. */
interface CreateOptions {
  mayView?: (owner: string) => boolean;
  audit?: Record<string, unknown>;
}

/**
 * Projects may live only in an existing directory the caller may open (resolveRoot) that
 * overlaps no other project's root (checked under an advisory lock: of two concurrent creates
 * of nested roots exactly one wins). `opts.mayView` says whose roots a refusal may name
 * (default: the caller's own projects); `opts.audit` joins the audit row's details.
 */
async function createProject(
  deps: ProjectStoreDeps,
  members: Pick<ProjectMembers, "addOwner">,
  principal: string,
  name: string,
  workspaceRoot: string,
  opts: CreateOptions = {},
): Promise<Result<ProjectView>> {
  const mayView = opts.mayView ?? ((owner: string) => owner === principal);
  const resolved = await resolveRoot(deps, principal, workspaceRoot);
  if (!resolved.ok) return resolved;
  const real = resolved.value.root;
  const id = newId("prj");
  const at = deps.clock.date();
  return withRefusableTransaction(deps.db, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [PROJECT_ROOTS_LOCK]);
    const overlap = await noOverlap(tx, real, mayView);
    if (!overlap.ok) return overlap;
    const r = await tx.query(
      `INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ($1, $2, $3, $4, $5)
       RETURNING ${PROJECT_COLUMNS}`,
      [id, name, real, principal, at],
    );
    await members.addOwner(tx, id, principal, at);
    await appendAudit(tx, {
      at,
      principal,
      action: "project.create",
      details: { projectId: id, workspaceRoot: real, ...opts.audit },
    });
    return ok(view(r.rows[0]));
  });
}

/**
 * Loads the overlapping pairs (earlier versions did not refuse them), keeps them for
 * `overlapOf` and `overlaps`, and logs them: `host.project_overlaps` (warn with the pairs; info
 * with count 0). Called once at start; creates never add a pair afterwards.
 */
async function reportOverlaps(db: Db, state: OverlapState, log: Logger): Promise<ProjectOverlap[]> {
  const pairs = await overlappingProjects(db);
  state.overlaps = pairs;
  const overlapIndex = new Map<string, string[]>();
  state.overlapIndex = overlapIndex;
  for (const [a, b] of pairs) {
    for (const [self, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const list = overlapIndex.get(self.workspaceRoot) ?? [];
      if (!list.includes(other.projectId)) list.push(other.projectId);
      overlapIndex.set(self.workspaceRoot, list);
    }
  }
  if (pairs.length === 0) log.info("host.project_overlaps", { count: 0 });
  else
    log.warn("host.project_overlaps", {
      count: pairs.length,
      message:
        "projects whose roots overlap: their tool calls are refused with PROJECT_ROOT_OVERLAPS (docs/operations.md)",
      pairs: pairs.map(([a, b]) =>
        [a, b].map((x) => ({ projectId: x.projectId, workspaceRoot: x.workspaceRoot })),
      ),
    });
  return pairs;
}

/** The project, to a member only: PROJECT_NOT_FOUND, else FORBIDDEN for anyone else. */
async function getProject(db: Db, principal: string, projectId: string): Promise<Result<ProjectView>> {
  const r = await db.query(
    `SELECT ${PROJECT_COLUMNS}, ${isMemberSql("projects.id", "$2")} AS member FROM projects WHERE id = $1`,
    [projectId, principal],
  );
  if (r.rowCount === 0) return refuse("PROJECT_NOT_FOUND");
  if (r.rows[0].member !== true) return refuse("FORBIDDEN");
  return ok(view(r.rows[0]));
}

/**
 * One page of the projects `principal` is a member of, newest membership first (a keyset on
 * when they were added, then the project id), each with who added them and when.
 */
async function listForMember(db: Db, principal: string, p: ProjectsListParams): Promise<ProjectList> {
  const w = timeWindow(
    { limit: p.limit, cursor: p.before },
    { time: "m.added_at", id: "p.id", direction: "before", first: 2 },
  );
  const r = await db.query<ProjectRow & { added_by: string | null; added_at: Date; position_us: string }>(
    `SELECT ${qualified("p")}, m.added_by, m.added_at, ${w.select}
       FROM project_members m JOIN projects p ON p.id = m.project_id
      WHERE m.principal = $1 AND ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [principal, ...w.params],
  );
  const page = boundPage(r.rows, {
    limit: w.limit,
    view: (row) => ({ ...view(row), addedBy: row.added_by, addedAt: row.added_at.toISOString() }),
    position: timePosition,
  });
  return { projects: page.items, next: page.next };
}

/**
 * Changes the project's tool settings (the caller checked the principal) in one audited,
 * version-bumping transaction; a stale expectedVersion or an unchanged request changes nothing.
 */
async function configure(
  { db, clock }: ProjectStoreDeps,
  principal: string,
  p: ProjectsConfigureParams,
): Promise<Result<ProjectView>> {
  const origins = p.previewOrigins === undefined ? undefined : normalisePreviewOrigins(p.previewOrigins);
  return withRefusableTransaction(db, async (tx) => {
    const row = await getRow(tx, p.projectId, true);
    if (!row.ok) return row;
    const before = row.value;
    if (p.expectedVersion !== undefined && p.expectedVersion !== before.version)
      return refuse("PROJECT_VERSION_CONFLICT", undefined, {
        expectedVersion: p.expectedVersion,
        version: before.version,
      });
    const network = p.network ?? before.network_allowed;
    const previewOrigins = origins ?? before.preview_origins;
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    if (network !== before.network_allowed) changes.network = { from: before.network_allowed, to: network };
    if (previewOrigins.join("\n") !== before.preview_origins.join("\n"))
      changes.previewOrigins = { from: before.preview_origins, to: previewOrigins };
    if (Object.keys(changes).length === 0) return ok(view(before));
    const at = clock.date();
    const r = await tx.query(
      `UPDATE projects SET network_allowed = $2, preview_origins = $3, version = version + 1, updated_at = $4
       WHERE id = $1 RETURNING ${PROJECT_COLUMNS}`,
      [p.projectId, network, previewOrigins, at],
    );
    await appendAudit(tx, {
      at,
      principal,
      action: "project.configure",
      details: { projectId: p.projectId, changes, version: before.version + 1 },
    });
    return ok(view(r.rows[0]));
  });
}

export function createProjectStore({
  db,
  clock,
  workspaceRoots,
  workspaceAccess = openAccess(workspaceRoots),
}: {
  db: Db;
  clock: Clock;
  workspaceRoots: string[];
  /** Which folders each person may open (HostConfig.workspaceAccess); default: development's. */
  workspaceAccess?: WorkspaceAccess;
}) {
  const deps: ProjectStoreDeps = { db, clock, workspaceRoots, workspaceAccess };
  const state: OverlapState = { overlaps: [], overlapIndex: new Map() };
  const members = createProjectMembers({ db, clock });
  return {
    /** Who may see and use each project: members.add / remove / list. */
    members,
    resolveRoot: (principal: string, workspaceRoot: string) => resolveRoot(deps, principal, workspaceRoot),
    noOverlap: (root: string, mayView: (owner: string) => boolean, q: Db | Tx = db) =>
      noOverlap(q, root, mayView),
    create: (principal: string, name: string, workspaceRoot: string, opts?: CreateOptions) =>
      createProject(deps, members, principal, name, workspaceRoot, opts),
    reportOverlaps: (log: Logger) => reportOverlaps(db, state, log),
    /** The projects a workspace root overlaps (loaded at start), or null: a lookup, not a query. */
    overlapOf: (workspaceRoot: string): string[] | null => state.overlapIndex.get(workspaceRoot) ?? null,
    /** The overlapping pairs loaded at start (for `host.status`). */
    overlaps: (): readonly ProjectOverlap[] => state.overlaps,
    get: (principal: string, projectId: string) => getProject(db, principal, projectId),
    listForMember: (principal: string, p: ProjectsListParams) => listForMember(db, principal, p),
    configure: (principal: string, p: ProjectsConfigureParams) => configure(deps, principal, p),
  };
}

export type ProjectStore = ReturnType<typeof createProjectStore>;
