// The pages of scheduled.list and scheduled.runs (docs/protocol.md "Lists and pages"): a person's
// tasks oldest first, a task's runs newest occurrence first, each a keyset page bounded in rows and
// bytes. The access checks are the schedule store's (schedule-store.ts).
import { type BoundedPage, boundPage } from "./bounded-page.ts";
import { encodePosition } from "../../protocol/pages.ts";
import type { ScheduledRunView, ScheduledTaskView } from "../../protocol/scheduling-schemas.ts";
import type { Db } from "./db.ts";
import { keysetWindow, microsSql } from "./keyset-sql.ts";
import { RUN_COLUMNS, type RunRow, runView, TASK_COLUMNS, type TaskRow, taskView } from "./schedule-rows.ts";

/** Runs in a scheduled.runs page when `limit` is not given. */
const RUNS_DEFAULT_LIMIT = 100;

/** One page of the principal's own tasks, oldest first (a keyset on created_at, id). */
export async function tasksPage(
  db: Db,
  principal: string,
  p: { limit?: number | undefined; after?: string | undefined },
): Promise<BoundedPage<ScheduledTaskView>> {
  const created = microsSql("created_at");
  const w = keysetWindow(
    { limit: p.limit, cursor: p.after },
    { keys: [created, "id"], direction: "after", first: 2 },
  );
  const r = await db.query<TaskRow & { created_us: string }>(
    `SELECT ${TASK_COLUMNS}, ${created} AS created_us FROM scheduled_tasks
      WHERE owner = $1 AND ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [principal, ...w.params],
  );
  return boundPage(r.rows, {
    limit: w.limit,
    view: taskView,
    position: (row) => encodePosition([row.created_us], row.id),
  });
}

/** One page of a task's runs, newest occurrence first (a keyset on scheduled_for, id). */
export async function runsPage(
  db: Db,
  taskId: string,
  p: { limit?: number | undefined; before?: string | undefined },
): Promise<BoundedPage<ScheduledRunView>> {
  const scheduled = microsSql("scheduled_for");
  const w = keysetWindow(
    { limit: p.limit, cursor: p.before },
    { keys: [scheduled, "id"], direction: "before", first: 2, defaultLimit: RUNS_DEFAULT_LIMIT },
  );
  const r = await db.query<RunRow & { scheduled_us: string }>(
    `SELECT ${RUN_COLUMNS}, ${scheduled} AS scheduled_us FROM scheduled_runs
      WHERE task_id = $1 AND ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [taskId, ...w.params],
  );
  return boundPage(r.rows, {
    limit: w.limit,
    view: runView,
    position: (row) => encodePosition([row.scheduled_us], row.id),
  });
}
