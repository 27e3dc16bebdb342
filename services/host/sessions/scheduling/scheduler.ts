// The per-host scheduler: a loop on the host clock that claims due occurrences (one host wins each;
// missed ones recorded, Plan tasks refused: schedule-claims.ts) and starts Agent runs as a new session
// prompted through its actor. An unattended run's permission prompt is a denial (PERMISSION_REQUIRED).
import { AppError } from "../../../protocol/app-error.ts";
import type { ErrorCode } from "../../../protocol/error-codes.ts";
import { errorFields, type Logger } from "../../../runtime/log.ts";
import { ok, type Refusal, type Result } from "../../../protocol/result.ts";
import type { ScheduledRunView } from "../../../protocol/scheduling-schemas.ts";
import type { Clock, TimerHandle } from "../../clock.ts";
import { type RunRow, runView, type ScheduleStore, type TaskRow } from "../../store/schedule-store.ts";
import type { SessionSupervisor } from "../actors/session-supervisor.ts";
import type { SessionStore } from "../../store/session-store.ts";
import type { ModelChoice } from "../turns/model-choice.ts";

export interface SchedulerDeps {
  clock: Clock;
  store: ScheduleStore;
  sessions: SessionStore;
  supervisor: SessionSupervisor;
  hostId: string;
  log: Logger;
  /** An occurrence more than this far in the past is recorded missed, not run late (PI_SCHEDULE_GRACE_MS). */
  graceMs: number;
  /** Longest wait between two looks at the table (PI_SCHEDULE_POLL_MS): tasks other hosts created. */
  pollMs: number;
  /** The model check of every entry (model-choice.ts): a run's model is checked before its session exists. */
  models?: Pick<ModelChoice, "choose">;
}

/** What the loop holds between ticks: its timer, the tick under way and whether it was stopped. */
interface SchedulerState {
  deps: SchedulerDeps;
  timer: TimerHandle | null;
  ticking: Promise<void> | null;
  /** A wake arrived during a tick: tick once more before re-arming. */
  again: boolean;
  stopped: boolean;
}

/** Creates the run's Agent session and prompts it through the session's actor. */
async function startRun(deps: SchedulerDeps, task: TaskRow, claimed: RunRow): Promise<RunRow> {
  const { store, sessions, supervisor, hostId, log } = deps;
  let run = claimed;
  try {
    // The task's model as every entry checks it: one the deployment does not allow (any more), or
    // no live worker serves, fails the run before a session or turn exists.
    const model = deps.models?.choose(task.config.model);
    if (model && !model.ok) return failRun(deps, task, run, model.refusal);
    const created = await sessions.createSession(
      task.owner!,
      {
        projectId: task.project_id!,
        title: `Scheduled: ${task.name}`.slice(0, 200),
        // The task's own mode (checked to be agent under the claim's row lock), never the app default.
        mode: "agent",
        permissionMode: task.config.permissionMode ?? "inherit",
        ...(task.config.model ? { model: task.config.model } : {}),
      },
      hostId,
    );
    if (!created.ok) return failRun(deps, task, run, created.refusal);
    const session = created.value;
    const started = await store.markStarted(run, session.id);
    if (!started.ok) return failRun(deps, task, run, started.refusal);
    run = started.value;
    const { turnId } = await supervisor.request<{ turnId: string }>(session.id, (reply) => ({
      type: "PROMPT",
      params: { sessionId: session.id, text: task.config.prompt, idempotencyKey: run.id },
      reply,
    }));
    const turned = await store.markTurn(run.id, turnId);
    if (!turned.ok) return failRun(deps, task, run, turned.refusal);
    run = turned.value;
    log.info("scheduler.run_started", {
      taskId: task.id,
      runId: run.id,
      trigger: run.trigger,
      sessionId: session.id,
      turnId,
    });
    return run;
  } catch (err) {
    const code = err instanceof AppError ? err.code : "INTERNAL";
    log.warn("scheduler.run_failed", { taskId: task.id, runId: run.id, code, ...errorFields(err) });
    return markFailed(deps, run, code);
  }
}

/** The run `failed` with `code`; a run whose task was deleted meanwhile is answered as it was. */
async function markFailed(deps: SchedulerDeps, run: RunRow, code: ErrorCode): Promise<RunRow> {
  const failed = await deps.store.failRun(run.id, code).catch(() => null);
  return failed?.ok ? failed.value : run;
}

/** A run refused before its turn started (its model, its project): failed with the refusal's code. */
async function failRun(deps: SchedulerDeps, task: TaskRow, run: RunRow, refusal: Refusal): Promise<RunRow> {
  deps.log.warn("scheduler.run_failed", {
    taskId: task.id,
    runId: run.id,
    code: refusal.code,
    ...(refusal.message ? { message: refusal.message } : {}),
  });
  return markFailed(deps, run, refusal.code);
}

async function tick(st: SchedulerState): Promise<void> {
  const { deps } = st;
  const { clock, store, hostId, log } = deps;
  const now = clock.now();
  const reconciled = await store.reconcile();
  if (reconciled > 0) log.info("scheduler.runs_ended", { count: reconciled });
  for (const taskId of await store.dueTaskIds(now)) {
    if (st.stopped) return;
    try {
      const outcome = await store.claimDue(taskId, now, deps.graceMs, hostId);
      if (outcome.kind === "not_due") continue;
      if (outcome.missed > 0) log.warn("scheduler.missed", { taskId, count: outcome.missed });
      if (outcome.kind === "refused")
        log.warn("scheduler.refused", { taskId, code: "PLAN_REQUIRES_INTERACTIVE_SESSION" });
      if (outcome.kind === "claimed") await startRun(deps, outcome.task, outcome.run);
    } catch (err) {
      log.error("scheduler.claim_failed", { taskId, ...errorFields(err) });
    }
  }
}

function arm(st: SchedulerState, delayMs: number): void {
  const { clock } = st.deps;
  if (st.stopped) return;
  if (st.timer) clock.clearTimeout(st.timer);
  st.timer = clock.setTimeout(() => {
    st.timer = null;
    void wake(st);
  }, delayMs);
}

async function rearm(st: SchedulerState): Promise<void> {
  const { deps } = st;
  const earliest = await deps.store.earliestDue().catch(() => null);
  const now = deps.clock.now();
  // Still due after a tick means a claim failed: look again after a pause, never in a busy loop.
  const delay =
    earliest === null ? deps.pollMs : earliest <= now ? Math.min(1_000, deps.pollMs) : earliest - now;
  arm(st, Math.min(delay, deps.pollMs));
}

/** Runs a tick now (or right after the one in progress), then re-arms the timer. */
function wake(st: SchedulerState): Promise<void> {
  if (st.stopped) return Promise.resolve();
  if (st.ticking) {
    st.again = true;
    return st.ticking;
  }
  st.ticking = (async () => {
    do {
      st.again = false;
      try {
        await tick(st);
      } catch (err) {
        st.deps.log.error("scheduler.tick_failed", errorFields(err));
      }
    } while (st.again && !st.stopped);
    await rearm(st);
  })().finally(() => {
    st.ticking = null;
  });
  return st.ticking;
}

/** Start-up: fails its own and dead hosts' earlier runs that never got a turn (logged even when 0), then ticks. */
async function start(st: SchedulerState): Promise<void> {
  const { deps } = st;
  const recovered = await deps.store.recoverAtStart(deps.hostId);
  deps.log.info("scheduler.recovered", { failed: recovered, graceMs: deps.graceMs, pollMs: deps.pollMs });
  void wake(st);
}

/** `scheduled.run`: refused for a Plan task before anything exists; else starts a run now. */
async function runNow(
  deps: SchedulerDeps,
  principal: string,
  taskId: string,
): Promise<Result<ScheduledRunView>> {
  const { store, hostId, log } = deps;
  // The model first, as session.create checks it: a refusal leaves no run and no session.
  const owned = await store.taskOf(principal, taskId);
  if (!owned.ok) return owned;
  const model = deps.models?.choose(owned.value.config.model);
  if (model && !model.ok) return model;
  const claimed = await store.claimManual(principal, taskId, hostId);
  if (!claimed.ok) {
    // A Plan task's refusal is logged; a missing or foreign task is only the caller's refusal.
    if (claimed.refusal.code === "PLAN_REQUIRES_INTERACTIVE_SESSION")
      log.warn("scheduler.refused", { taskId, code: claimed.refusal.code, trigger: "manual" });
    return claimed;
  }
  return ok(runView(await startRun(deps, claimed.value.task, claimed.value.run)));
}

function stop(st: SchedulerState): void {
  st.stopped = true;
  if (st.timer) st.deps.clock.clearTimeout(st.timer);
  st.timer = null;
}

export function createScheduler(deps: SchedulerDeps) {
  const st: SchedulerState = { deps, timer: null, ticking: null, again: false, stopped: false };
  return {
    /** Start-up: recovers earlier runs, then ticks (see `start`). */
    start: (): Promise<void> => start(st),
    /** A task was created or changed: look at the table now rather than at the next poll. */
    wake: () => void wake(st),
    /** `scheduled.run` (see `runNow`). */
    runNow: (principal: string, taskId: string): Promise<Result<ScheduledRunView>> =>
      runNow(deps, principal, taskId),
    stop: (): void => stop(st),
  };
}

export type Scheduler = ReturnType<typeof createScheduler>;
