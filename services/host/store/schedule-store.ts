// Rows of scheduled_tasks and scheduled_runs. A due occurrence is claimed in one transaction holding
// the task's row lock, recorded with INSERT ... ON CONFLICT DO NOTHING on (task_id, scheduled_for), so
// exactly one host runs it. A Plan task is refused there, before any run row exists (ADR 0053 item 7):
// the refusal's audit row is the only record. Times come from the host clock.
import { AppError } from "../../protocol/app-error.ts";
import type { ErrorCode } from "../../protocol/error-codes.ts";
import type {
  ScheduledCreateParams,
  ScheduledRunStatus,
  ScheduledRunTrigger,
  ScheduledRunView,
  ScheduledTaskView,
  ScheduledUpdateParams,
} from "../../protocol/scheduling-schemas.ts";
import type { ModelConfig, OperatingMode, PermissionMode } from "../../protocol/schemas.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { checkSchedule, nextOccurrence, planCatchUp } from "../cron-schedule.ts";
import { type Db, type Tx, withTransaction } from "./db.ts";
import { newId } from "../ids.ts";

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

const TASK_COLUMNS =
  "id, name, cron, timezone, config, enabled, created_at, owner, project_id, next_run_at, updated_at, version";
const RUN_COLUMNS =
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

export function createScheduleStore({ db, clock }: { db: Db; clock: Clock }) {
  async function getTask(q: Db | Tx, taskId: string, forUpdate = false): Promise<TaskRow> {
    const r = await q.query(
      `SELECT ${TASK_COLUMNS} FROM scheduled_tasks WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
      [taskId],
    );
    if (r.rowCount === 0) throw new AppError("SCHEDULED_TASK_NOT_FOUND");
    return r.rows[0];
  }

  /** The task, if the principal owns it: SCHEDULED_TASK_NOT_FOUND, else FORBIDDEN. */
  async function ownedTask(q: Db | Tx, principal: string, taskId: string, forUpdate = false) {
    const row = await getTask(q, taskId, forUpdate);
    if (row.owner !== principal) throw new AppError("FORBIDDEN", "only the task's owner may do this");
    return row;
  }

  async function requireProject(q: Db | Tx, projectId: string): Promise<void> {
    const r = await q.query("SELECT 1 FROM projects WHERE id = $1", [projectId]);
    if (r.rowCount === 0) throw new AppError("PROJECT_NOT_FOUND");
  }

  /** The refusal of a Plan task's run: its only record (no session, run, turn or file exists). */
  async function auditRefusal(
    q: Db | Tx,
    task: TaskRow,
    principal: string | null,
    details: Record<string, unknown>,
  ): Promise<void> {
    await appendAudit(q, {
      at: clock.date(),
      principal,
      action: "scheduled.refused",
      decision: "deny",
      code: "PLAN_REQUIRES_INTERACTIVE_SESSION",
      details: { taskId: task.id, mode: task.config.mode, ...details },
    });
  }

  async function insertClaimed(
    q: Tx,
    p: {
      taskId: string;
      trigger: ScheduledRunTrigger;
      scheduledFor: Date;
      hostId: string;
      principal: string;
    },
  ): Promise<RunRow | null> {
    const conflict =
      p.trigger === "schedule"
        ? "ON CONFLICT (task_id, scheduled_for) WHERE trigger = 'schedule' DO NOTHING"
        : "";
    const r = await q.query(
      `INSERT INTO scheduled_runs (id, task_id, status, scheduled_for, started_at, trigger, claimed_by, principal)
       VALUES ($1, $2, 'claimed', $3, $4, $5, $6, $7) ${conflict} RETURNING ${RUN_COLUMNS}`,
      [newId("run"), p.taskId, p.scheduledFor, clock.date(), p.trigger, p.hostId, p.principal],
    );
    return r.rows[0] ?? null;
  }

  async function setRun(runId: string, sets: string, values: unknown[]): Promise<RunRow> {
    const r = await db.query(`UPDATE scheduled_runs SET ${sets} WHERE id = $1 RETURNING ${RUN_COLUMNS}`, [
      runId,
      ...values,
    ]);
    if (r.rowCount === 0) throw new AppError("SCHEDULED_TASK_NOT_FOUND", "the run's task was deleted");
    return r.rows[0];
  }

  /** Runs whose turn has ended take the turn's outcome (all tasks, or one). Returns the count. */
  async function reconcile(taskId?: string): Promise<number> {
    const r = await db.query(
      `UPDATE scheduled_runs r
          SET status = CASE WHEN t.status = 'completed' THEN 'completed' ELSE 'failed' END,
              error_code = CASE WHEN t.status = 'completed' THEN NULL ELSE t.error_code END,
              ended_at = coalesce(t.ended_at, $2)
         FROM turns t
        WHERE t.id = r.turn_id AND r.status = 'running' AND t.status <> 'running'
          AND ($1::text IS NULL OR r.task_id = $1)`,
      [taskId ?? null, clock.date()],
    );
    return r.rowCount ?? 0;
  }

  return {
    getTask,
    ownedTask,

    async createTask(principal: string, p: ScheduledCreateParams): Promise<ScheduledTaskView> {
      checkSchedule(p.cron, p.timezone);
      const id = newId("task");
      const at = clock.date();
      const enabled = p.enabled ?? true;
      // Default Agent: a task carries its own mode, never the app default (DESIGN §8).
      const config: TaskConfig = {
        mode: p.mode ?? "agent",
        prompt: p.prompt,
        ...(p.permissionMode ? { permissionMode: p.permissionMode } : {}),
        ...(p.model ? { model: p.model } : {}),
      };
      const next = enabled ? new Date(nextOccurrence(p.cron, p.timezone, at.getTime())) : null;
      return withTransaction(db, async (tx) => {
        await requireProject(tx, p.projectId);
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
        return taskView(r.rows[0]);
      });
    },

    async listTasks(principal: string): Promise<ScheduledTaskView[]> {
      const r = await db.query(
        `SELECT ${TASK_COLUMNS} FROM scheduled_tasks WHERE owner = $1 ORDER BY created_at, id`,
        [principal],
      );
      return r.rows.map(taskView);
    },

    /**
     * Changes a task (owner only) in one audited, version-bumping transaction. A new cron, zone or
     * re-enabling computes the next occurrence from now: nothing missed while disabled runs late.
     */
    async updateTask(principal: string, p: ScheduledUpdateParams): Promise<ScheduledTaskView> {
      return withTransaction(db, async (tx) => {
        const before = await ownedTask(tx, principal, p.taskId, true);
        const cron = p.cron?.trim() ?? before.cron;
        const timezone = p.timezone ?? before.timezone;
        const enabled = p.enabled ?? before.enabled;
        if (p.cron !== undefined || p.timezone !== undefined) checkSchedule(cron, timezone);
        if (p.projectId !== undefined) await requireProject(tx, p.projectId);
        const config: TaskConfig = { ...before.config };
        if (p.mode !== undefined) config.mode = p.mode;
        if (p.prompt !== undefined) config.prompt = p.prompt;
        if (p.permissionMode !== undefined) config.permissionMode = p.permissionMode;
        if (p.model !== undefined) config.model = p.model;
        const rescheduled =
          cron !== before.cron || timezone !== before.timezone || enabled !== before.enabled;
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
        return taskView(r.rows[0]);
      });
    },

    /** Deletes a task (owner only) with its run history; the audit log keeps what happened. */
    async deleteTask(principal: string, taskId: string): Promise<{ taskId: string; deleted: true }> {
      return withTransaction(db, async (tx) => {
        const task = await ownedTask(tx, principal, taskId, true);
        const runs = await tx.query("DELETE FROM scheduled_runs WHERE task_id = $1", [taskId]);
        await tx.query("DELETE FROM scheduled_tasks WHERE id = $1", [taskId]);
        await appendAudit(tx, {
          at: clock.date(),
          principal,
          action: "scheduled.delete",
          details: { taskId, name: task.name, runsDeleted: runs.rowCount ?? 0 },
        });
        return { taskId, deleted: true as const };
      });
    },

    /** Ids of enabled tasks whose next occurrence is due at `now`. */
    async dueTaskIds(now: number): Promise<string[]> {
      const r = await db.query(
        `SELECT id FROM scheduled_tasks
          WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= $1 AND owner IS NOT NULL
          ORDER BY next_run_at, id LIMIT 500`,
        [new Date(now)],
      );
      return r.rows.map((x: { id: string }) => x.id);
    },

    /** The earliest next occurrence of any enabled task (ms), or null. */
    async earliestDue(): Promise<number | null> {
      const r = await db.query(
        "SELECT min(next_run_at) AS t FROM scheduled_tasks WHERE enabled AND owner IS NOT NULL",
      );
      return r.rows[0]?.t ? new Date(r.rows[0].t).getTime() : null;
    },

    /**
     * Claims the task's due occurrences at `now` under its row lock: advances next_run_at past now,
     * records the passed-over ones as missed (Agent tasks; a Plan task gets no run rows at all), and
     * claims the newest one within graceMs: a Plan task is refused and audited, an Agent task gets a
     * `claimed` run row unless (task_id, scheduled_for) was claimed already (`lost`).
     */
    async claimDue(taskId: string, now: number, graceMs: number, hostId: string): Promise<ClaimOutcome> {
      return withTransaction(db, async (tx): Promise<ClaimOutcome> => {
        const r = await tx.query(`SELECT ${TASK_COLUMNS} FROM scheduled_tasks WHERE id = $1 FOR UPDATE`, [
          taskId,
        ]);
        const task: TaskRow | undefined = r.rows[0];
        if (!task?.enabled || !task.owner || !task.next_run_at || task.next_run_at.getTime() > now)
          return { kind: "not_due" };
        const plan = planCatchUp({
          cron: task.cron,
          timezone: task.timezone,
          firstDue: task.next_run_at.getTime(),
          now,
          graceMs,
        });
        await tx.query("UPDATE scheduled_tasks SET next_run_at = $2 WHERE id = $1", [
          taskId,
          new Date(plan.next),
        ]);
        const at = clock.date();
        if (task.config.mode === "agent" && plan.missed.length > 0) {
          await tx.query(
            `INSERT INTO scheduled_runs (id, task_id, status, scheduled_for, ended_at, trigger, claimed_by)
             SELECT id, $1, 'missed', scheduled_for, $2, 'schedule', $3
               FROM unnest($4::text[], $5::timestamptz[]) AS m(id, scheduled_for)
             ON CONFLICT (task_id, scheduled_for) WHERE trigger = 'schedule' DO NOTHING`,
            [taskId, at, hostId, plan.missed.map(() => newId("run")), plan.missed.map((t) => new Date(t))],
          );
        }
        if (plan.missedTotal > 0) {
          const first = plan.missed[0];
          const last = plan.missed.at(-1);
          await appendAudit(tx, {
            at,
            principal: task.owner,
            action: "scheduled.missed",
            details: {
              taskId,
              mode: task.config.mode,
              count: plan.missedTotal,
              truncated: plan.truncated,
              first: first === undefined ? null : new Date(first).toISOString(),
              lastRecorded: last === undefined ? null : new Date(last).toISOString(),
              graceMs,
              hostId,
            },
          });
        }
        if (plan.run === null) return { kind: "missed", missed: plan.missedTotal };
        const scheduledFor = new Date(plan.run);
        if (task.config.mode === "plan") {
          await auditRefusal(tx, task, task.owner, {
            trigger: "schedule",
            scheduledFor: scheduledFor.toISOString(),
            hostId,
          });
          return { kind: "refused", missed: plan.missedTotal, scheduledFor };
        }
        const run = await insertClaimed(tx, {
          taskId,
          trigger: "schedule",
          scheduledFor,
          hostId,
          principal: task.owner,
        });
        if (!run) return { kind: "lost", missed: plan.missedTotal, scheduledFor };
        return { kind: "claimed", missed: plan.missedTotal, task, run };
      });
    },

    /**
     * `scheduled.run`: the owner runs the task now, unattended. A Plan task is refused with
     * PLAN_REQUIRES_INTERACTIVE_SESSION (audited) before any row but the audit row exists.
     */
    async claimManual(
      principal: string,
      taskId: string,
      hostId: string,
    ): Promise<{ task: TaskRow; run: RunRow } | { refused: AppError }> {
      return withTransaction(db, async (tx) => {
        // The row lock orders this check against a concurrent scheduled.update of the mode.
        const task = await ownedTask(tx, principal, taskId, true);
        if (task.config.mode === "plan") {
          await auditRefusal(tx, task, principal, { trigger: "manual", hostId });
          return {
            refused: new AppError(
              "PLAN_REQUIRES_INTERACTIVE_SESSION",
              "a Plan task cannot run unattended; switch it to Agent with scheduled.update {mode: 'agent'}",
              { details: { taskId } },
            ),
          };
        }
        const run = await insertClaimed(tx, {
          taskId,
          trigger: "manual",
          scheduledFor: clock.date(),
          hostId,
          principal,
        });
        return { task, run: run! };
      });
    },

    /** The run's session exists: `running`, with its audit row. */
    async markStarted(run: RunRow, sessionId: string): Promise<RunRow> {
      return withTransaction(db, async (tx) => {
        const r = await tx.query(
          `UPDATE scheduled_runs SET status = 'running', session_id = $2 WHERE id = $1 RETURNING ${RUN_COLUMNS}`,
          [run.id, sessionId],
        );
        if (r.rowCount === 0) throw new AppError("SCHEDULED_TASK_NOT_FOUND", "the run's task was deleted");
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
        return r.rows[0];
      });
    },

    async markTurn(runId: string, turnId: string): Promise<RunRow> {
      return setRun(runId, "turn_id = $2", [turnId]);
    },

    async failRun(runId: string, code: ErrorCode): Promise<RunRow> {
      return setRun(runId, "status = 'failed', error_code = $2, ended_at = $3", [code, clock.date()]);
    },

    reconcile,

    /**
     * Start-up recovery of runs that never got a turn (a host stopped between the claim and the
     * prompt): `failed` with HOST_RESTARTED, whichever host id claimed them. With one host the
     * startup fence ends every earlier turn of every host id (DESIGN §6), so a run claimed under
     * another id (a renamed or replaced host) has nobody left to finish it either. Nothing is
     * replayed; runs with a turn follow the turn, which the fence has ended.
     */
    async recoverAtStart(): Promise<number> {
      const r = await db.query(
        `UPDATE scheduled_runs SET status = 'failed', error_code = 'HOST_RESTARTED', ended_at = $1
          WHERE status IN ('claimed', 'running') AND turn_id IS NULL RETURNING id`,
        [clock.date()],
      );
      return r.rowCount ?? 0;
    },

    /** The task's runs, newest first (owner only); ended turns are applied first, as on every read. */
    async listRuns(principal: string, taskId: string, limit = 100): Promise<ScheduledRunView[]> {
      await ownedTask(db, principal, taskId);
      await reconcile(taskId);
      const r = await db.query(
        `SELECT ${RUN_COLUMNS} FROM scheduled_runs WHERE task_id = $1 ORDER BY scheduled_for DESC, id LIMIT $2`,
        [taskId, limit],
      );
      return r.rows.map(runView);
    },
  };
}

export type ScheduleStore = ReturnType<typeof createScheduleStore>;
