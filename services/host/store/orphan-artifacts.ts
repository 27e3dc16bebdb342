// Reports plan files that no approval row names (a crash between writing the file and committing
// the row). They are never used: nothing reads a plan file except through its row. Run at start,
// and never for a project another running host has a session in (its files may be in flight); it
// only reports, it never removes anything.
// The listing of each workspace's `.pi/plan` comes from the caller (the sandboxed file helper):
// this scan never opens a workspace folder itself.
import type { Logger } from "../../runtime/log.ts";
import type { Db } from "./db.ts";
import { PLAN_DIR } from "../tools/plan-artifact.ts";

/** The names of the files in `<workspaceRoot>/.pi/plan` (not paths); a missing folder lists none. */
export type ListPlanFiles = (workspaceRoot: string) => Promise<string[]>;

export async function reportOrphanArtifacts(deps: {
  db: Db;
  log: Logger;
  listPlanFiles: ListPlanFiles;
  /** This host: a project with a session another running host owns is skipped (its plan files may be in flight). */
  hostId?: string;
}): Promise<Array<{ projectId: string; path: string }>> {
  const projects = await deps.db.query(
    `SELECT p.id, p.workspace_root FROM projects p
      WHERE $1::text IS NULL OR NOT EXISTS (
        SELECT 1 FROM sessions s JOIN session_leases l ON l.session_id = s.id JOIN hosts h ON h.id = l.host_id
         WHERE s.project_id = p.id AND l.host_id <> $1 AND h.state = 'running')
      ORDER BY p.id`,
    [deps.hostId ?? null],
  );
  const known = await deps.db.query(
    "SELECT p.id AS project_id, a.artifact_path FROM plan_approvals a JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id",
  );
  const recorded = new Set(
    known.rows.map(
      (r: { project_id: string; artifact_path: string }) => `${r.project_id}\u0000${r.artifact_path}`,
    ),
  );
  const orphans: Array<{ projectId: string; path: string }> = [];
  const unlisted: Array<{ projectId: string; reason: string }> = [];
  for (const { id, workspace_root } of projects.rows as Array<{ id: string; workspace_root: string }>) {
    let names: string[];
    try {
      // Guarded until every caller passes a listing (a missing one lists nothing, reported as unlisted).
      if (typeof deps.listPlanFiles !== "function") throw new Error("no plan-file listing was given");
      names = await deps.listPlanFiles(workspace_root);
    } catch (err) {
      unlisted.push({ projectId: id, reason: (err as Error).message });
      continue;
    }
    for (const name of names) {
      if (!name.endsWith(".md") || name.includes("/")) continue;
      const rel = `${PLAN_DIR}/${name}`;
      if (!recorded.has(`${id}\u0000${rel}`)) orphans.push({ projectId: id, path: rel });
    }
  }
  deps.log[orphans.length || unlisted.length ? "warn" : "info"]("host.orphan_artifacts", {
    count: orphans.length,
    orphans: orphans.slice(0, 100),
    unlisted: unlisted.slice(0, 100),
  });
  return orphans;
}
