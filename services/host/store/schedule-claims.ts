// Claims of scheduled runs (docs/architecture.md "Scheduled tasks and settings"): a due occurrence is
// claimed in one transaction holding the task's row lock, recorded with ON CONFLICT DO NOTHING on
// (task_id, scheduled_for), so exactly one host runs it; a Plan task is refused before any run row.
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type { ScheduledRunTrigger } from "../../protocol/scheduling-schemas.ts";
import type { Clock } from "../clock.ts";
import { planCatchUp } from "../cron-schedule.ts";
import { newId } from "../ids.ts";
import { appendAudit } from "./audit-log.ts";
import { type Db, type Tx, withTransaction } from "./db.ts";
import {
  type ClaimOutcome,
  findOwnedTask,
  RUN_COLUMNS,
  type RunRow,
  TASK_COLUMNS,
  type TaskRow,
} from "./schedule-rows.ts";

/** What a claim reads: the pool and the host clock (every row's time). */
interface ScheduleClaimsDeps {
  db: Db;
  clock: Clock;
}

/** The refusal of a Plan task's run: its only record (no session, run, turn or file exists). */
async function auditRefusal(
  clock: Clock,
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
  clock: Clock,
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

/**
 * Claims the task's due occurrences at `now` under its row lock: advances next_run_at past now,
 * records the passed-over ones as missed (Agent tasks; a Plan task gets no run rows at all), and
 * claims the newest one within graceMs: a Plan task is refused and audited, an Agent task gets a
 * `claimed` run row unless (task_id, scheduled_for) was claimed already (`lost`).
 */
async function claimDue(
  { db, clock }: ScheduleClaimsDeps,
  taskId: string,
  now: number,
  graceMs: number,
  hostId: string,
): Promise<ClaimOutcome> {
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
      await auditRefusal(clock, tx, task, task.owner, {
        trigger: "schedule",
        scheduledFor: scheduledFor.toISOString(),
        hostId,
      });
      return { kind: "refused", missed: plan.missedTotal, scheduledFor };
    }
    const run = await insertClaimed(clock, tx, {
      taskId,
      trigger: "schedule",
      scheduledFor,
      hostId,
      principal: task.owner,
    });
    if (!run) return { kind: "lost", missed: plan.missedTotal, scheduledFor };
    return { kind: "claimed", missed: plan.missedTotal, task, run };
  });
}

/**
 * `scheduled.run`: the owner runs the task now, unattended. A Plan task is refused with
 * PLAN_REQUIRES_INTERACTIVE_SESSION (audited) before any row but the audit row exists.
 */
async function claimManual(
  { db, clock }: ScheduleClaimsDeps,
  principal: string,
  taskId: string,
  hostId: string,
): Promise<Result<{ task: TaskRow; run: RunRow }>> {
  return withTransaction(db, async (tx) => {
    // The row lock orders this check against a concurrent scheduled.update of the mode.
    const owned = await findOwnedTask(tx, principal, taskId, true);
    if (!owned.ok) return owned;
    const task = owned.value;
    if (task.config.mode === "plan") {
      await auditRefusal(clock, tx, task, principal, { trigger: "manual", hostId });
      return refuse(
        "PLAN_REQUIRES_INTERACTIVE_SESSION",
        "a Plan task cannot run unattended; switch it to Agent with scheduled.update {mode: 'agent'}",
        { taskId },
      );
    }
    const run = await insertClaimed(clock, tx, {
      taskId,
      trigger: "manual",
      scheduledFor: clock.date(),
      hostId,
      principal,
    });
    return ok({ task, run: run! });
  });
}

export function scheduleClaims(deps: ScheduleClaimsDeps) {
  return {
    claimDue: (taskId: string, now: number, graceMs: number, hostId: string) =>
      claimDue(deps, taskId, now, graceMs, hostId),
    claimManual: (principal: string, taskId: string, hostId: string) =>
      claimManual(deps, principal, taskId, hostId),
  };
}
