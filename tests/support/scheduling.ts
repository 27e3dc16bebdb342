// Helpers of the scheduling tests (scheduled-tasks, scheduled-runs) over one stack: its test hooks,
// rows, a fresh project, a task's runs, and what a run of a project left behind.
import type { ScheduledRunView } from "../../services/protocol/scheduling-schemas.ts";
import type { Stack } from "./stack.ts";

export const MODEL = { provider: "scripted", model: "script", script: [{ text: "scheduled done" }] };
export const HOUR = 3600_000;

export function schedulingHelpers(stack: Stack) {
  const hook = (name: string, body: unknown = {}) => stack.hook(name, body);

  async function rows<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await stack.db.pool.query(sql, params)).rows as T[];
  }

  async function newProject(name: string) {
    const ws = stack.newWorkspace(name);
    const project = await stack.client("alice").call("projects.create", { name, workspaceRoot: ws });
    return { ws, projectId: project.id };
  }

  async function runsOf(taskId: string): Promise<ScheduledRunView[]> {
    return (await stack.client("alice").call("scheduled.runs", { taskId })).runs;
  }

  /** Everything a run of the project could have left: sessions, turns, transcript, approvals. */
  async function projectFootprint(projectId: string) {
    const [r] = await rows<Record<string, number>>(
      `SELECT (SELECT count(*)::int FROM sessions WHERE project_id = $1) AS sessions,
            (SELECT count(*)::int FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.project_id = $1) AS turns,
            (SELECT count(*)::int FROM transcript_entries e JOIN sessions s ON s.id = e.session_id WHERE s.project_id = $1) AS transcript,
            (SELECT count(*)::int FROM plan_approvals a JOIN sessions s ON s.id = a.session_id WHERE s.project_id = $1) AS approvals`,
      [projectId],
    );
    return r;
  }

  const refusalAudits = (taskId: string) =>
    rows(
      `SELECT principal, session_id, action, decision, details FROM audit_log
      WHERE code = 'PLAN_REQUIRES_INTERACTIVE_SESSION' AND details->>'taskId' = $1`,
      [taskId],
    );

  return { hook, rows, newProject, runsOf, projectFootprint, refusalAudits };
}
