// Rows of scheduled_tasks and scheduled_runs as the schedule operations share them: the rows, their
// wire views, the task lookups with their refusals.
import type {
  ScheduledRunStatus,
  ScheduledRunTrigger,
  ScheduledRunView,
  ScheduledTaskView,
} from "../../protocol/scheduling-schemas.ts";
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type { ModelConfig, OperatingMode, PermissionMode } from "../../protocol/schemas.ts";
import type { Db, Tx } from "./db.ts";

/** What a task runs; kept in scheduled_tasks.config (jsonb). */
export interface TaskConfig {
  mode: OperatingMode;
  prompt: string;
  permissionMode?: PermissionMode;
  model?: ModelConfig;
}

export interface TaskRow {
  id: string;
  name: string;
  cron: string;
  timezone: string;
  config: TaskConfig;
  enabled: boolean;
  created_at: Date;
  owner: string | null;
  project_id: string | null;
  next_run_at: Date | null;
  updated_at: Date | null;
  version: number;
}

export interface RunRow {
  id: string;
  task_id: string;
  status: ScheduledRunStatus;
  scheduled_for: Date;
  started_at: Date | null;
  ended_at: Date | null;
  error_code: string | null;
  trigger: ScheduledRunTrigger | null;
  claimed_by: string | null;
  principal: string | null;
  session_id: string | null;
  turn_id: string | null;
}

/** The outcome of claiming a task's due occurrences. */
export type ClaimOutcome =
  | { kind: "not_due" }
  | { kind: "missed"; missed: number }
  | { kind: "refused"; missed: number; scheduledFor: Date }
  | { kind: "lost"; missed: number; scheduledFor: Date }
  | { kind: "claimed"; missed: number; task: TaskRow; run: RunRow };

export const TASK_COLUMNS =
  "id, name, cron, timezone, config, enabled, created_at, owner, project_id, next_run_at, updated_at, version";
export const RUN_COLUMNS =
  "id, task_id, status, scheduled_for, started_at, ended_at, error_code, trigger, claimed_by, principal, session_id, turn_id";
const DEFAULT_MODEL: ModelConfig = { provider: "scripted", model: "demo" };
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function taskView(row: TaskRow): ScheduledTaskView {
  const model = row.config.model ?? DEFAULT_MODEL;
  return {
    id: row.id,
    name: row.name,
    owner: row.owner ?? "",
    projectId: row.project_id ?? "",
    cron: row.cron,
    timezone: row.timezone,
    prompt: row.config.prompt ?? "",
    mode: row.config.mode,
    permissionMode: row.config.permissionMode ?? "inherit",
    model: { provider: model.provider, model: model.model },
    enabled: row.enabled,
    nextRunAt: iso(row.next_run_at),
    version: row.version,
    createdAt: row.created_at.toISOString(),
    updatedAt: (row.updated_at ?? row.created_at).toISOString(),
  };
}

export function runView(row: RunRow): ScheduledRunView {
  return {
    runId: row.id,
    taskId: row.task_id,
    trigger: row.trigger,
    status: row.status,
    scheduledFor: row.scheduled_for.toISOString(),
    claimedBy: row.claimed_by,
    startedAt: iso(row.started_at),
    endedAt: iso(row.ended_at),
    sessionId: row.session_id,
    turnId: row.turn_id,
    errorCode: row.error_code,
  };
}

export async function findTask(q: Db | Tx, taskId: string, forUpdate = false): Promise<TaskRow | null> {
  const r = await q.query(
    `SELECT ${TASK_COLUMNS} FROM scheduled_tasks WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [taskId],
  );
  return r.rows[0] ?? null;
}

/** The task, if the principal owns it: refused SCHEDULED_TASK_NOT_FOUND, else FORBIDDEN. */
export async function findOwnedTask(
  q: Db | Tx,
  principal: string,
  taskId: string,
  forUpdate = false,
): Promise<Result<TaskRow>> {
  const row = await findTask(q, taskId, forUpdate);
  if (!row) return refuse("SCHEDULED_TASK_NOT_FOUND");
  if (row.owner !== principal) return refuse("FORBIDDEN", "only the task's owner may do this");
  return ok(row);
}
