// The pages of scheduled.list and scheduled.runs (docs/protocol.md "Lists and pages"): a person's
// tasks oldest first, a task's runs newest occurrence first, each a keyset page bounded in rows and
// bytes. The access checks are the schedule store's (schedule-store.ts).
import type { ScheduledRunView, ScheduledTaskView } from "../../protocol/scheduling-schemas.ts";
import { type BoundedPage, boundPage } from "./bounded-page.ts";
import type { Db } from "./db.ts";
import { timePosition, timeWindow } from "./keyset-sql.ts";
import { RUN_COLUMNS, type RunRow, runView, TASK_COLUMNS, type TaskRow, taskView } from "./schedule-rows.ts";

/** Runs in a scheduled.runs page when `limit` is not given. */
const RUNS_DEFAULT_LIMIT = 100;

/** One page of the principal's own tasks, oldest first (a keyset on created_at, id). */
export async function tasksPage(
  db: Db,
  principal: string,
  p: { limit?: number | undefined; after?: string | undefined },
): Promise<BoundedPage<ScheduledTaskView>> {
  const w = timeWindow(
    { limit: p.limit, cursor: p.after },
    { time: "created_at", id: "id", direction: "after", first: 2 },
  );
  const r = await db.query<TaskRow & { position_us: string }>(
    `SELECT ${TASK_COLUMNS}, ${w.select} FROM scheduled_tasks
      WHERE owner = $1 AND ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [principal, ...w.params],
  );
  return boundPage(r.rows, { limit: w.limit, view: taskView, position: timePosition });
}

/** The runs as scheduled.runs shows them by default: the rows (`r`) as they are. */
export const RUN_ROWS = `SELECT ${RUN_COLUMNS} FROM scheduled_runs r`;

/**
 * One page of a task's runs, newest occurrence first (a keyset on scheduled_for, id). `runs` is
 * the select that reads them (`SELECT <RunRow columns> FROM scheduled_runs r ...`, no WHERE): the
 * store says how a run is shown, this says which runs a page holds.
 */
export async function runsPage(
  db: Db,
  taskId: string,
  p: { limit?: number | undefined; before?: string | undefined },
  runs = RUN_ROWS,
): Promise<BoundedPage<ScheduledRunView>> {
  const w = timeWindow(
    { limit: p.limit, cursor: p.before },
    { time: "x.scheduled_for", id: "x.id", direction: "before", first: 2, defaultLimit: RUNS_DEFAULT_LIMIT },
  );
  const r = await db.query<RunRow & { position_us: string }>(
    `SELECT x.*, ${w.select} FROM (${runs} WHERE r.task_id = $1) x
      WHERE ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [taskId, ...w.params],
  );
  return boundPage(r.rows, { limit: w.limit, view: runView, position: timePosition });
}
