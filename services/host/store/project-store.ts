// Rows of projects (docs/architecture.md "Tools"): a workspace root under a configured root, its owner,
// and its tool settings (network for the sandbox, BrowserPreview origins). Every change is one audited
// transaction on the host clock; tool calls read the settings on every call.
import { promises as fs } from "node:fs";
import path from "node:path";
import { AppError } from "../../protocol/app-error.ts";
import {
  normalisePreviewOrigins,
  type ProjectsConfigureParams,
  type ProjectView,
} from "../../protocol/project-schemas.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, type Tx, withTransaction } from "./db.ts";
import { newId } from "../ids.ts";

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

export function createProjectStore({
  db,
  clock,
  workspaceRoots,
}: {
  db: Db;
  clock: Clock;
  workspaceRoots: string[];
}) {
  async function getRow(q: Db | Tx, projectId: string, forUpdate = false): Promise<ProjectRow> {
    const r = await q.query(
      `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
      [projectId],
    );
    if (r.rowCount === 0) throw new AppError("PROJECT_NOT_FOUND");
    return r.rows[0];
  }

  return {
    /** Projects may live only in an existing directory under a configured workspace root. */
    async create(principal: string, name: string, workspaceRoot: string): Promise<ProjectView> {
      const requested = path.resolve(workspaceRoot);
      const real = await fs.realpath(requested).catch(() => null);
      const st = real ? await fs.stat(real).catch(() => null) : null;
      const allowed = await Promise.all(workspaceRoots.map((r) => fs.realpath(r).catch(() => null)));
      const inside =
        real !== null && allowed.some((r) => r !== null && (real === r || real.startsWith(r + path.sep)));
      if (!real || !st?.isDirectory() || !inside) {
        throw new AppError(
          "WORKSPACE_NOT_ALLOWED",
          `${requested} is not an existing directory under a configured workspace root`,
        );
      }
      const id = newId("prj");
      const at = clock.date();
      return withTransaction(db, async (tx) => {
        const r = await tx.query(
          `INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ($1, $2, $3, $4, $5)
           RETURNING ${PROJECT_COLUMNS}`,
          [id, name, real, principal, at],
        );
        await appendAudit(tx, {
          at,
          principal,
          action: "project.create",
          details: { projectId: id, workspaceRoot: real },
        });
        return view(r.rows[0]);
      });
    },

    async get(projectId: string): Promise<ProjectView> {
      return view(await getRow(db, projectId));
    },

    /**
     * Changes the project's tool settings (the caller checked the principal) in one audited,
     * version-bumping transaction; a stale expectedVersion or an unchanged request changes nothing.
     */
    async configure(principal: string, p: ProjectsConfigureParams): Promise<ProjectView> {
      const origins = p.previewOrigins === undefined ? undefined : normalisePreviewOrigins(p.previewOrigins);
      return withTransaction(db, async (tx) => {
        const before = await getRow(tx, p.projectId, true);
        if (p.expectedVersion !== undefined && p.expectedVersion !== before.version)
          throw new AppError("PROJECT_VERSION_CONFLICT", undefined, {
            details: { expectedVersion: p.expectedVersion, version: before.version },
          });
        const network = p.network ?? before.network_allowed;
        const previewOrigins = origins ?? before.preview_origins;
        const changes: Record<string, { from: unknown; to: unknown }> = {};
        if (network !== before.network_allowed)
          changes.network = { from: before.network_allowed, to: network };
        if (previewOrigins.join("\n") !== before.preview_origins.join("\n"))
          changes.previewOrigins = { from: before.preview_origins, to: previewOrigins };
        if (Object.keys(changes).length === 0) return view(before);
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
        return view(r.rows[0]);
      });
    },
  };
}

export type ProjectStore = ReturnType<typeof createProjectStore>;
