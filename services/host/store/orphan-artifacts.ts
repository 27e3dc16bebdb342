// Reports plan files that no approval row names (a crash between writing the file and committing
// the row). They are never used: nothing reads a plan file except through its row. Run at start.
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Logger } from "../../protocol/log.ts";
import type { Db } from "./db.ts";
import { PLAN_DIR } from "./plan-artifact.ts";

export async function reportOrphanArtifacts(deps: {
  db: Db;
  log: Logger;
}): Promise<Array<{ projectId: string; path: string }>> {
  const projects = await deps.db.query("SELECT id, workspace_root FROM projects ORDER BY id");
  const known = await deps.db.query(
    "SELECT p.id AS project_id, a.artifact_path FROM plan_approvals a JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id",
  );
  const recorded = new Set(
    known.rows.map(
      (r: { project_id: string; artifact_path: string }) => `${r.project_id}\u0000${r.artifact_path}`,
    ),
  );
  const orphans: Array<{ projectId: string; path: string }> = [];
  for (const { id, workspace_root } of projects.rows as Array<{ id: string; workspace_root: string }>) {
    const dir = path.join(workspace_root, PLAN_DIR);
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isFile() || !e.name.endsWith(".md")) continue;
      const rel = path.posix.join(".pi", "plan", e.name);
      if (!recorded.has(`${id}\u0000${rel}`)) orphans.push({ projectId: id, path: rel });
    }
  }
  deps.log[orphans.length ? "warn" : "info"]("host.orphan_artifacts", {
    count: orphans.length,
    orphans: orphans.slice(0, 100),
  });
  return orphans;
}
