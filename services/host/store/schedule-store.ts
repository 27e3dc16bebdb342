// Rows of scheduled_tasks and scheduled_runs (docs/architecture.md "Scheduled tasks and settings"):
// the tasks' changes and the runs' lifecycle here, the claims in schedule-claims.ts. Times come from
// the host clock.
import type { ErrorCode } from "../../protocol/error-codes.ts";
import { ok, type Refusal, type Result, refuse } from "../../protocol/result.ts";
import type { BoundedPage } from "./bounded-page.ts";
import type { AfterPageParams } from "../../protocol/schemas.ts";
import type {
  ScheduledCreateParams,
  ScheduledRunsParams,
  ScheduledRunView,
  ScheduledTaskView,
  ScheduledUpdateParams,
} from "../../protocol/scheduling-schemas.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { nextOccurrence, scheduleRefusal } from "../cron-schedule.ts";
import { type Db, isLeaseLost, type Tx, withRefusableTransaction, withTransaction } from "./db.ts";
import { newId } from "../ids.ts";
import { isMemberSql } from "./project-members.ts";
import { scheduleClaims } from "./schedule-claims.ts";
import { runsPage, tasksPage } from "./schedule-pages.ts";
import {
  findOwnedTask,
  RUN_COLUMNS,
  type RunRow,
  TASK_COLUMNS,
  type TaskConfig,
  taskView,
} from "./schedule-rows.ts";

export {
  type ClaimOutcome,
  type RunRow,
  runView,
  type TaskConfig,
  type TaskRow,
  taskView,
} from "./schedule-rows.ts";

/** Sets a run from its ended turn; the caller adds which runs (`$1` task or null, `$2` now, `$3` host). */
const RECONCILE_SQL = `UPDATE scheduled_runs r
    SET status = CASE WHEN t.status = 'completed' THEN 'completed' ELSE 'failed' END,
        error_code = CASE WHEN t.status = 'completed' THEN NULL ELSE t.error_code END,
        ended_at = coalesce(t.ended_at, $2)
   FROM turns t
  WHERE t.id = r.turn_id AND r.status = 'running' AND t.status <> 'running'
    AND ($1::text IS NULL OR r.task_id = $1)`;
/** The ended runs of sessions host `$3` owns, or that no host has a lease on. */
const OWN_ENDED_RUNS_LIST = `SELECT r.id FROM scheduled_runs r JOIN turns t ON t.id = r.turn_id
   WHERE r.status = 'running' AND t.status <> 'running' AND ($1::text IS NULL OR r.task_id = $1)
     AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = r.session_id AND l.host_id <> $3)`;
const OWN_ENDED_RUNS = `ARRAY(${OWN_ENDED_RUNS_LIST})`;
/**
 * A run as it stands: one whose turn has ended shows the turn's outcome even before its owner's
 * scheduler has written it (reads never write another host's rows).
 */
const RUN_AS_IT_STANDS = `SELECT r.id, r.task_id, r.scheduled_for, r.started_at, r.trigger, r.claimed_by, r.principal,
        r.session_id, r.turn_id,
        CASE WHEN r.status = 'running' AND t.status IS NOT NULL AND t.status <> 'running'
             THEN CASE WHEN t.status = 'completed' THEN 'completed' ELSE 'failed' END ELSE r.status END AS status,
        CASE WHEN r.status = 'running' AND t.status IS NOT NULL AND t.status <> 'running'
             THEN CASE WHEN t.status = 'completed' THEN NULL ELSE t.error_code END ELSE r.error_code END AS error_code,
        CASE WHEN r.status = 'running' AND t.status IS NOT NULL AND t.status <> 'running'
             THEN t.ended_at ELSE r.ended_at END AS ended_at
   FROM scheduled_runs r LEFT JOIN turns t ON t.id = r.turn_id`;

/** What every schedule-store operation reads: the pool, the host clock and this host's id. */
interface ScheduleStoreDeps {
  db: Db;
  clock: Clock;
  hostId: string;
}

/** PROJECT_NOT_FOUND unless the project exists; FORBIDDEN unless the principal is a member. */
async function projectRefusal(q: Db | Tx, projectId: string, principal: string): Promise<Refusal | null> {
  const r = await q.query<{ member: boolean }>(
    `SELECT ${isMemberSql("$1", "$2")} AS member FROM projects WHERE id = $1`,
    [projectId, principal],
  );
  if (r.rowCount === 0) return { code: "PROJECT_NOT_FOUND" };
  return r.rows[0]!.member
    ? null
    : { code: "FORBIDDEN", message: "only the project's members may schedule runs on it" };
}

/** The run's task was deleted meanwhile (its runs with it). */
const runGone = () => refuse("SCHEDULED_TASK_NOT_FOUND", "the run's task was deleted");

async function setRun(db: Db, runId: string, sets: string, values: unknown[]): Promise<Result<RunRow>> {
  const r = await db.query(`UPDATE scheduled_runs SET ${sets} WHERE id = $1 RETURNING ${RUN_COLUMNS}`, [
    runId,
    ...values,
  ]);
  return r.rowCount === 0 ? runGone() : ok(r.rows[0]);
}

/**
 * This host's runs whose turn has ended take the turn's outcome (all tasks, or one); returns the
 * count. Only runs of sessions this host owns (or that have no lease yet) are written: another
 * host's are its own scheduler's, and the lease trigger would refuse the whole statement for one
 * of them (docs/architecture.md "Scheduled tasks and settings"). A lease that moves between the
 * read and the write still fails the statement (PH002): then each row is tried on its own, so one
 * row's lease never blocks another's.
 */
async function reconcile({ db, clock, hostId }: ScheduleStoreDeps, taskId?: string): Promise<number> {
  const params = [taskId ?? null, clock.date(), hostId];
  try {
    const r = await db.query(`${RECONCILE_SQL} AND r.id = ANY(${OWN_ENDED_RUNS})`, params);
    return r.rowCount ?? 0;
  } catch (err) {
    if (!isLeaseLost(err)) throw err;
  }
  const ids = await db.query<{ id: string }>(`SELECT id FROM (${OWN_ENDED_RUNS_LIST}) x`, params);
  let n = 0;
  for (const { id } of ids.rows) {
    const one = await db
      .query(`${RECONCILE_SQL} AND r.id = $3`, [params[0], params[1], id])
      .catch((err: unknown) => (isLeaseLost(err) ? null : Promise.reject(err)));
    n += one?.rowCount ?? 0;
  }
  return n;
}

/** A new task of the principal's; an unusable schedule or an unknown project is refused. */
async function createTask(
  { db, clock }: ScheduleStoreDeps,
  principal: string,
  p: ScheduledCreateParams,
): Promise<Result<ScheduledTaskView>> {
  const unusable = scheduleRefusal(p.cron, p.timezone);
  if (unusable) return { ok: false, refusal: unusable };
  const id = newId("task");
  const at = clock.date();
  const enabled = p.enabled ?? true;
  // Default Agent: a task carries its own mode, never the app default (docs/architecture.md "Scheduled tasks and settings").
  const config: TaskConfig = {
    mode: p.mode ?? "agent",
    prompt: p.prompt,
    ...(p.permissionMode ? { permissionMode: p.permissionMode } : {}),
    ...(p.model ? { model: p.model } : {}),
  };
  const next = enabled ? new Date(nextOccurrence(p.cron, p.timezone, at.getTime())) : null;
  return withTransaction(db, async (tx): Promise<Result<ScheduledTaskView>> => {
    const noProject = await projectRefusal(tx, p.projectId, principal);
    if (noProject) return { ok: false, refusal: noProject };
    const r = await tx.query(
      `INSERT INTO scheduled_tasks (id, name, cron, timezone, config, enabled, created_at, owner, project_id, next_run_at, updated_at, version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $7, 0) RETURNING ${TASK_COLUMNS}`,
      [
        id,
        p.name,
        p.cron.trim(),
        p.timezone,
        JSON.stringify(config),
        enabled,
        at,
        principal,
        p.projectId,
        next,
      ],
    );
    await appendAudit(tx, {
      at,
      principal,
      action: "scheduled.create",
      details: { taskId: id, mode: config.mode, cron: p.cron.trim(), timezone: p.timezone, enabled },
    });
    return ok(taskView(r.rows[0]));
  });
}

/**
 * Changes a task (owner only) in one audited, version-bumping transaction. A new cron, zone or
 * re-enabling computes the next occurrence from now: nothing missed while disabled runs late.
 */
async function updateTask(
  { db, clock }: ScheduleStoreDeps,
  principal: string,
  p: ScheduledUpdateParams,
): Promise<Result<ScheduledTaskView>> {
  return withTransaction(db, async (tx): Promise<Result<ScheduledTaskView>> => {
    const owned = await findOwnedTask(tx, principal, p.taskId, true);
    if (!owned.ok) return owned;
    const before = owned.value;
    const cron = p.cron?.trim() ?? before.cron;
    const timezone = p.timezone ?? before.timezone;
    const enabled = p.enabled ?? before.enabled;
    const refusal =
      (p.cron !== undefined || p.timezone !== undefined ? scheduleRefusal(cron, timezone) : null) ??
      (p.projectId !== undefined ? await projectRefusal(tx, p.projectId, principal) : null);
    if (refusal) return { ok: false, refusal };
    const config: TaskConfig = { ...before.config };
    if (p.mode !== undefined) config.mode = p.mode;
    if (p.prompt !== undefined) config.prompt = p.prompt;
    if (p.permissionMode !== undefined) config.permissionMode = p.permissionMode;
    if (p.model !== undefined) config.model = p.model;
    const rescheduled = cron !== before.cron || timezone !== before.timezone || enabled !== before.enabled;
    const next = !enabled
      ? null
      : rescheduled || before.next_run_at === null
        ? new Date(nextOccurrence(cron, timezone, clock.now()))
        : before.next_run_at;
    const changes: Record<string, unknown> = {};
    for (const key of ["name", "cron", "timezone", "projectId", "enabled"] as const) {
      if (p[key] !== undefined) changes[key] = p[key];
    }
    for (const key of ["mode", "prompt", "permissionMode", "model"] as const) {
      if (p[key] !== undefined) changes[key] = key === "prompt" ? "(changed)" : p[key];
    }
    const at = clock.date();
    const r = await tx.query(
      `UPDATE scheduled_tasks SET name = $2, cron = $3, timezone = $4, config = $5, enabled = $6, project_id = $7,
              next_run_at = $8, updated_at = $9, version = version + 1
        WHERE id = $1 AND version = $10 RETURNING ${TASK_COLUMNS}`,
      [
        p.taskId,
        p.name ?? before.name,
        cron,
        timezone,
        JSON.stringify(config),
        enabled,
        p.projectId ?? before.project_id,
        next,
        at,
        before.version,
      ],
    );
    await appendAudit(tx, {
      at,
      principal,
      action: "scheduled.update",
      details: { taskId: p.taskId, changes, version: before.version + 1 },
    });
    return ok(taskView(r.rows[0]));
  });
}

/** Deletes a task (owner only) with its run history; the audit log keeps what happened. */
async function deleteTask(
  { db, clock }: ScheduleStoreDeps,
  principal: string,
  taskId: string,
): Promise<Result<{ taskId: string; deleted: true }>> {
  return withTransaction(db, async (tx): Promise<Result<{ taskId: string; deleted: true }>> => {
    const owned = await findOwnedTask(tx, principal, taskId, true);
    if (!owned.ok) return owned;
    const task = owned.value;
    const runs = await tx.query("DELETE FROM scheduled_runs WHERE task_id = $1", [taskId]);
    await tx.query("DELETE FROM scheduled_tasks WHERE id = $1", [taskId]);
    await appendAudit(tx, {
      at: clock.date(),
      principal,
      action: "scheduled.delete",
      details: { taskId, name: task.name, runsDeleted: runs.rowCount ?? 0 },
    });
    return ok({ taskId, deleted: true as const });
  });
}

/** Ids of enabled tasks whose next occurrence is due at `now`. */
async function dueTaskIds(db: Db, now: number): Promise<string[]> {
  const r = await db.query(
    `SELECT id FROM scheduled_tasks
      WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= $1 AND owner IS NOT NULL
      ORDER BY next_run_at, id LIMIT 500`,
    [new Date(now)],
  );
  return r.rows.map((x: { id: string }) => x.id);
}

/** The earliest next occurrence of any enabled task (ms), or null. */
async function earliestDue(db: Db): Promise<number | null> {
  const r = await db.query(
    "SELECT min(next_run_at) AS t FROM scheduled_tasks WHERE enabled AND owner IS NOT NULL",
  );
  return r.rows[0]?.t ? new Date(r.rows[0].t).getTime() : null;
}

/** The run's session exists: `running`, with its audit row. */
async function markStarted(
  { db, clock }: ScheduleStoreDeps,
  run: RunRow,
  sessionId: string,
): Promise<Result<RunRow>> {
  return withRefusableTransaction(db, async (tx) => {
    const r = await tx.query(
      `UPDATE scheduled_runs SET status = 'running', session_id = $2 WHERE id = $1 RETURNING ${RUN_COLUMNS}`,
      [run.id, sessionId],
    );
    if (r.rowCount === 0) return runGone();
    await appendAudit(tx, {
      at: clock.date(),
      principal: run.principal,
      sessionId,
      action: "scheduled.run",
      decision: "allow",
      details: {
        taskId: run.task_id,
        runId: run.id,
        trigger: run.trigger,
        scheduledFor: run.scheduled_for.toISOString(),
      },
    });
    return ok(r.rows[0]);
  });
}

/**
 * Start-up: fails the runs that never got a turn and were claimed by this host id (an earlier
 * incarnation) or by a host that is no longer running; a live host's claims in flight are its own.
 */
async function recoverAtStart({ db, clock }: ScheduleStoreDeps, hostId: string): Promise<number> {
  const r = await db.query(
    `UPDATE scheduled_runs SET status = 'failed', error_code = 'HOST_RESTARTED', ended_at = $1
      WHERE status IN ('claimed', 'running') AND turn_id IS NULL
        AND (claimed_by = $2 OR claimed_by IS NULL
             OR claimed_by NOT IN (SELECT id FROM hosts WHERE state = 'running'))
      RETURNING id`,
    [clock.date(), hostId],
  );
  return r.rowCount ?? 0;
}

/**
 * The task's runs, newest first (owner only), one page: this host's ended turns are written
 * first, and every run is shown as it stands (an ended turn's outcome, whichever host owns it).
 */
async function listRuns(
  deps: ScheduleStoreDeps,
  principal: string,
  taskId: string,
  page: Omit<ScheduledRunsParams, "taskId"> = {},
): Promise<Result<BoundedPage<ScheduledRunView>>> {
  const owned = await findOwnedTask(deps.db, principal, taskId);
  if (!owned.ok) return owned;
  await reconcile(deps, taskId);
  return ok(await runsPage(deps.db, taskId, page, RUN_AS_IT_STANDS));
}

export function createScheduleStore(deps: ScheduleStoreDeps) {
  const { db, clock } = deps;
  return {
    /** The principal's task (SCHEDULED_TASK_NOT_FOUND, FORBIDDEN otherwise), read for a check. */
    taskOf: (principal: string, taskId: string) => findOwnedTask(db, principal, taskId),
    ...scheduleClaims({ db, clock }),
    createTask: (principal: string, p: ScheduledCreateParams) => createTask(deps, principal, p),
    /** One page of the principal's own tasks, oldest first (schedule-pages.ts). */
    listTasks: (principal: string, p: AfterPageParams): Promise<BoundedPage<ScheduledTaskView>> =>
      tasksPage(db, principal, p),
    updateTask: (principal: string, p: ScheduledUpdateParams) => updateTask(deps, principal, p),
    deleteTask: (principal: string, taskId: string) => deleteTask(deps, principal, taskId),
    dueTaskIds: (now: number) => dueTaskIds(db, now),
    earliestDue: () => earliestDue(db),
    markStarted: (run: RunRow, sessionId: string) => markStarted(deps, run, sessionId),
    markTurn: (runId: string, turnId: string) => setRun(db, runId, "turn_id = $2", [turnId]),
    failRun: (runId: string, code: ErrorCode) =>
      setRun(db, runId, "status = 'failed', error_code = $2, ended_at = $3", [code, clock.date()]),
    reconcile: (taskId?: string) => reconcile(deps, taskId),
    recoverAtStart: (hostId: string) => recoverAtStart(deps, hostId),
    listRuns: (principal: string, taskId: string, page?: Omit<ScheduledRunsParams, "taskId">) =>
      listRuns(deps, principal, taskId, page),
  };
}

export type ScheduleStore = ReturnType<typeof createScheduleStore>;
