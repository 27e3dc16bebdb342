// Scheduled tasks and app settings (DESIGN §5 "Scheduled or unattended", §8; ADR 0053 item 7) over
// NATS against the real host, worker and Postgres: one test per rule, asserting the reply code, the
// rows, the files under .pi/plan/ and the audit rows. Time-dependent rules move the host's test clock.
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { createScheduleStore } from "../services/host/store/schedule-store.ts";
import type {
  ScheduledRunView,
  ScheduledTaskView,
  SettingsView,
} from "../services/protocol/scheduling-schemas.ts";
import type { ProjectView, SessionView } from "../services/protocol/schemas.ts";
import { createStack, eventually, type Stack } from "./support/stack.ts";
import { refusalCode } from "./support/worker-double.ts";

let stack: Stack;

beforeAll(async () => {
  stack = await createStack("sched");
  await stack.startHost();
  await stack.startWorker();
});

afterAll(async () => {
  await stack?.close();
});

const MODEL = { provider: "scripted", model: "script", script: [{ text: "scheduled done" }] };
const HOUR = 3600_000;

const hook = (name: string, body: unknown = {}) => stack.hook(name, body);

async function rows<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
  return (await stack.db.pool.query(sql, params)).rows as T[];
}

async function newProject(name: string) {
  const ws = stack.newWorkspace(name);
  const project = await stack.rpc("alice").call<ProjectView>("projects.create", { name, workspaceRoot: ws });
  return { ws, projectId: project.id };
}

async function runsOf(taskId: string): Promise<ScheduledRunView[]> {
  return (await stack.rpc("alice").call<{ runs: ScheduledRunView[] }>("scheduled.runs", { taskId })).runs;
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

describe("settings", () => {
  it("get/set the app defaults; inherit is never an app default; any principal in dev mode", async () => {
    const alice = stack.rpc("alice");
    const bob = stack.rpc("bob");
    expect(await alice.call<SettingsView>("settings.get")).toEqual({
      defaultMode: "agent",
      defaultPermissionMode: "ask",
    });

    for (const bad of [{ defaultPermissionMode: "inherit" }, { defaultMode: "chat" }, { other: 1 }]) {
      expect(await refusalCode(alice.call("settings.set", bad))).toBe("INVALID_PARAMS");
    }
    expect(await rows("SELECT value FROM app_settings WHERE key = 'defaults'")).toEqual([]);

    // Development mode: any principal may change the app settings (production: PI_SETTINGS_ADMINS).
    expect(
      await bob.call<SettingsView>("settings.set", {
        defaultMode: "plan",
        defaultPermissionMode: "accept-edits",
      }),
    ).toEqual({ defaultMode: "plan", defaultPermissionMode: "accept-edits" });
    expect(await rows("SELECT value FROM app_settings WHERE key = 'defaults'")).toEqual([
      { value: { mode: "plan", permissionMode: "accept-edits" } },
    ]);
    expect(await refusalCode(alice.call("settings.set", { defaultPermissionMode: "inherit" }))).toBe(
      "INVALID_PARAMS",
    );
    expect(await rows("SELECT value FROM app_settings WHERE key = 'defaults'")).toEqual([
      { value: { mode: "plan", permissionMode: "accept-edits" } },
    ]);
    const audits = await rows("SELECT principal, details FROM audit_log WHERE action = 'settings.set'");
    expect(audits).toEqual([
      {
        principal: "bob",
        details: {
          before: { defaultMode: "agent", defaultPermissionMode: "ask" },
          after: { defaultMode: "plan", defaultPermissionMode: "accept-edits" },
        },
      },
    ]);
    expect(await alice.call<SettingsView>("settings.get")).toEqual({
      defaultMode: "plan",
      defaultPermissionMode: "accept-edits",
    });

    // The app default mode applies to new sessions only.
    const { projectId } = await newProject("settings");
    const session = await alice.call<SessionView>("session.create", { projectId });
    expect(session.mode).toBe("plan");
  });
});

describe("scheduled tasks", () => {
  it("create defaults to Agent even when the app default is Plan; explicit zone; owner only", async () => {
    const alice = stack.rpc("alice");
    const bob = stack.rpc("bob");
    expect((await alice.call<SettingsView>("settings.get")).defaultMode).toBe("plan");
    const { projectId } = await newProject("create");
    const task = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "weekday review",
      cron: "0 9 * * 1-5",
      timezone: "Europe/Berlin",
      projectId,
      prompt: "review the open changes",
    });
    expect(task).toMatchObject({ mode: "agent", permissionMode: "inherit", enabled: true, owner: "alice" });
    // The next occurrence is 09:00 on a weekday in Berlin, whatever the host's zone.
    const local = new Intl.DateTimeFormat("en-GB", {
      timeZone: "Europe/Berlin",
      hour: "2-digit",
      minute: "2-digit",
      weekday: "short",
    }).format(new Date(task.nextRunAt!));
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
    const [row] = await rows(
      "SELECT owner, project_id, config, next_run_at FROM scheduled_tasks WHERE id = $1",
      [task.id],
    );
    expect(row).toMatchObject({
      owner: "alice",
      project_id: projectId,
      config: { mode: "agent", prompt: "review the open changes" },
    });
    expect((row!.next_run_at as Date).toISOString()).toBe(task.nextRunAt);
    expect(
      await rows(
        "SELECT principal, details->>'mode' AS mode FROM audit_log WHERE action = 'scheduled.create'",
      ),
    ).toEqual([{ principal: "alice", mode: "agent" }]);

    const base = { name: "x", cron: "0 9 * * *", timezone: "UTC", projectId, prompt: "p" };
    for (const bad of [
      { timezone: "Mars/Olympus" },
      { timezone: "+01:00" },
      { cron: "61 * * * *" },
      { cron: "*/5 * * * * *" },
      { cron: "0 0 30 2 *" },
      { mode: "chat" },
    ]) {
      expect(
        await refusalCode(alice.call("scheduled.create", { ...base, ...bad })),
        JSON.stringify(bad),
      ).toBe("INVALID_PARAMS");
    }
    expect(await refusalCode(alice.call("scheduled.create", { ...base, projectId: "prj_nope" }))).toBe(
      "PROJECT_NOT_FOUND",
    );
    expect(
      await refusalCode(alice.call("scheduled.update", { taskId: task.id, timezone: "Nowhere/X" })),
    ).toBe("INVALID_PARAMS");
    expect(await rows("SELECT id FROM scheduled_tasks")).toEqual([{ id: task.id }]);

    expect((await bob.call<{ tasks: unknown[] }>("scheduled.list")).tasks).toEqual([]);
    for (const [method, params] of [
      ["scheduled.update", { taskId: task.id, mode: "plan" }],
      ["scheduled.run", { taskId: task.id }],
      ["scheduled.runs", { taskId: task.id }],
      ["scheduled.delete", { taskId: task.id }],
    ] as const) {
      expect(await refusalCode(bob.call(method, params)), method).toBe("FORBIDDEN");
    }
    expect(await refusalCode(alice.call("scheduled.run", { taskId: "task_missing" }))).toBe(
      "SCHEDULED_TASK_NOT_FOUND",
    );
    expect(
      (await alice.call<{ tasks: ScheduledTaskView[] }>("scheduled.list")).tasks.map((t) => t.id),
    ).toEqual([task.id]);

    const disabled = await alice.call<ScheduledTaskView>("scheduled.update", {
      taskId: task.id,
      enabled: false,
    });
    expect(disabled).toMatchObject({ enabled: false, nextRunAt: null, version: 1, mode: "agent" });
    expect(await alice.call("scheduled.delete", { taskId: task.id })).toEqual({
      taskId: task.id,
      deleted: true,
    });
    expect(await rows("SELECT id FROM scheduled_tasks")).toEqual([]);
    expect(await projectFootprint(projectId)).toEqual({ sessions: 0, turns: 0, transcript: 0, approvals: 0 });
  });

  it("a Plan task is refused before anything exists; after update {mode: agent} it runs under a Plan app default", async () => {
    const alice = stack.rpc("alice");
    const { ws, projectId } = await newProject("plan-task");
    const callsBefore = stack.callLog().length;
    const task = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "plan first",
      cron: "0 0 1 1 *",
      timezone: "UTC",
      projectId,
      prompt: "write the release notes",
      mode: "plan",
      model: MODEL,
    });
    expect(task.mode).toBe("plan");

    expect(await refusalCode(alice.call("scheduled.run", { taskId: task.id }))).toBe(
      "PLAN_REQUIRES_INTERACTIVE_SESSION",
    );
    expect(await projectFootprint(projectId)).toEqual({ sessions: 0, turns: 0, transcript: 0, approvals: 0 });
    expect(await rows("SELECT id FROM scheduled_runs WHERE task_id = $1", [task.id])).toEqual([]);
    expect(await runsOf(task.id)).toEqual([]);
    expect(existsSync(path.join(ws, ".pi"))).toBe(false);
    expect(stack.callLog()).toHaveLength(callsBefore);
    expect(await refusalAudits(task.id)).toEqual([
      {
        principal: "alice",
        session_id: null,
        action: "scheduled.refused",
        decision: "deny",
        details: expect.objectContaining({ taskId: task.id, mode: "plan", trigger: "manual" }),
      },
    ]);

    // Switched to Agent explicitly; the app default mode stays Plan.
    const updated = await alice.call<ScheduledTaskView>("scheduled.update", {
      taskId: task.id,
      mode: "agent",
    });
    expect(updated).toMatchObject({ mode: "agent", version: 1 });
    expect((await alice.call<SettingsView>("settings.get")).defaultMode).toBe("plan");
    expect(
      await rows(
        "SELECT principal, details->'changes' AS changes FROM audit_log WHERE action = 'scheduled.update' AND details->>'taskId' = $1",
        [task.id],
      ),
    ).toEqual([{ principal: "alice", changes: { mode: "agent" } }]);

    const run = await alice.call<ScheduledRunView>("scheduled.run", { taskId: task.id });
    expect(run).toMatchObject({ taskId: task.id, trigger: "manual", status: "running", errorCode: null });
    expect(run.sessionId).toBeTruthy();
    expect(run.turnId).toBeTruthy();
    const [session] = await rows(
      "SELECT mode, permission_mode, owner, project_id FROM sessions WHERE id = $1",
      [run.sessionId],
    );
    expect(session).toEqual({
      mode: "agent",
      permission_mode: "inherit",
      owner: "alice",
      project_id: projectId,
    });

    const done = await eventually(async () => {
      const [r] = await runsOf(task.id);
      return r?.status === "completed" ? r : null;
    });
    expect(done).toMatchObject({ runId: run.runId, sessionId: run.sessionId, turnId: run.turnId });
    expect(done.endedAt).toBeTruthy();
    const calls = stack.callLog().filter((c) => c.sessionId === run.sessionId);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.tools).not.toContain("ExitPlanMode");
    expect(await rows("SELECT status, idempotency_key FROM turns WHERE id = $1", [run.turnId])).toEqual([
      { status: "completed", idempotency_key: run.runId },
    ]);
    expect(
      await rows("SELECT role FROM transcript_entries WHERE session_id = $1 ORDER BY id", [run.sessionId]),
    ).toEqual([{ role: "user" }, { role: "assistant" }]);
    expect(await projectFootprint(projectId)).toEqual({ sessions: 1, turns: 1, transcript: 2, approvals: 0 });
    expect(existsSync(path.join(ws, ".pi", "plan"))).toBe(false);
    expect(
      await rows(
        "SELECT principal, session_id FROM audit_log WHERE action = 'scheduled.run' AND details->>'taskId' = $1",
        [task.id],
      ),
    ).toEqual([{ principal: "alice", session_id: run.sessionId }]);
    expect(await refusalAudits(task.id)).toHaveLength(1);

    await alice.call("scheduled.delete", { taskId: task.id });
  });

  it("an unattended Agent run cannot enter Plan: EnterPlanMode is PLAN_REQUIRES_INTERACTIVE_SESSION", async () => {
    const alice = stack.rpc("alice");
    const { ws, projectId } = await newProject("no-plan-unattended");
    const task = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "tries to plan",
      cron: "0 0 1 1 *",
      timezone: "UTC",
      projectId,
      prompt: "plan something",
      model: {
        provider: "scripted",
        model: "script",
        script: [{ toolCalls: [{ name: "EnterPlanMode", args: {} }] }, { text: "gave up planning" }],
      },
    });
    const run = await alice.call<ScheduledRunView>("scheduled.run", { taskId: task.id });
    await eventually(async () => {
      const [r] = await runsOf(task.id);
      return r?.status === "completed" ? r : null;
    });
    expect(await rows("SELECT decision, code FROM tool_calls WHERE turn_id = $1", [run.turnId])).toEqual([
      { decision: "deny", code: "PLAN_REQUIRES_INTERACTIVE_SESSION" },
    ]);
    expect(await rows("SELECT mode FROM sessions WHERE id = $1", [run.sessionId])).toEqual([
      { mode: "agent" },
    ]);
    expect(await projectFootprint(projectId)).toMatchObject({ approvals: 0 });
    expect(existsSync(path.join(ws, ".pi", "plan"))).toBe(false);
    await alice.call("scheduled.delete", { taskId: task.id });
  });

  it("a due task runs once when the clock passes its occurrence; a due Plan task is refused without a run row", async () => {
    const alice = stack.rpc("alice");
    const { ws, projectId } = await newProject("due");
    const agentTask = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "hourly",
      cron: "0 * * * *",
      timezone: "Europe/Berlin",
      projectId,
      prompt: "hourly check",
      model: MODEL,
    });
    const planTask = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "hourly plan",
      cron: "0 * * * *",
      timezone: "Europe/Berlin",
      projectId,
      prompt: "hourly plan",
      mode: "plan",
      model: MODEL,
    });
    const due = Date.parse(agentTask.nextRunAt!);
    expect(planTask.nextRunAt).toBe(agentTask.nextRunAt);

    await hook("clock.set", { now: due + 5_000 });
    const done = await eventually(async () => {
      const r = await runsOf(agentTask.id);
      return r[0]?.status === "completed" ? r : null;
    });
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({
      trigger: "schedule",
      scheduledFor: new Date(due).toISOString(),
      claimedBy: expect.any(String),
    });
    expect(stack.callLog().filter((c) => c.sessionId === done[0]!.sessionId)).toHaveLength(1);

    const plan = await eventually(async () =>
      (await refusalAudits(planTask.id)).length === 1 ? true : null,
    );
    expect(plan).toBe(true);
    expect(await refusalAudits(planTask.id)).toEqual([
      expect.objectContaining({
        principal: "alice",
        session_id: null,
        details: expect.objectContaining({ trigger: "schedule", scheduledFor: new Date(due).toISOString() }),
      }),
    ]);
    expect(await rows("SELECT id FROM scheduled_runs WHERE task_id = $1", [planTask.id])).toEqual([]);
    expect(await projectFootprint(projectId)).toEqual({ sessions: 1, turns: 1, transcript: 2, approvals: 0 });
    expect(existsSync(path.join(ws, ".pi"))).toBe(false);

    // Both advanced to the next occurrence; a later tick does not run the same occurrence again.
    const tasks = (await alice.call<{ tasks: ScheduledTaskView[] }>("scheduled.list")).tasks;
    for (const t of tasks) expect(Date.parse(t.nextRunAt!)).toBe(due + HOUR);
    await hook("clock.advance", { ms: 2_000 });
    await new Promise((r) => setTimeout(r, 300));
    expect(await runsOf(agentTask.id)).toHaveLength(1);
    expect(await refusalAudits(planTask.id)).toHaveLength(1);

    await alice.call("scheduled.delete", { taskId: agentTask.id });
    await alice.call("scheduled.delete", { taskId: planTask.id });
  });

  it("occurrences further in the past than the grace period are recorded missed, not run late", async () => {
    const alice = stack.rpc("alice");
    const { projectId } = await newProject("missed");
    const callsBefore = stack.callLog().length;
    const task = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "half past",
      cron: "30 * * * *",
      timezone: "UTC",
      projectId,
      prompt: "never late",
      model: MODEL,
    });
    const first = Date.parse(task.nextRunAt!);
    await hook("clock.set", { now: first + 2 * HOUR + 5 * 60_000 });

    const missed = await eventually(async () => {
      const r = await runsOf(task.id);
      return r.length === 3 ? r : null;
    });
    expect(missed.map((r) => [r.status, r.scheduledFor, r.sessionId])).toEqual(
      [first + 2 * HOUR, first + HOUR, first].map((t) => ["missed", new Date(t).toISOString(), null]),
    );
    expect(await projectFootprint(projectId)).toEqual({ sessions: 0, turns: 0, transcript: 0, approvals: 0 });
    expect(stack.callLog()).toHaveLength(callsBefore);
    const [listed] = (await alice.call<{ tasks: ScheduledTaskView[] }>("scheduled.list")).tasks;
    expect(Date.parse(listed!.nextRunAt!)).toBe(first + 3 * HOUR);
    expect(
      await rows(
        "SELECT (details->>'count')::int AS count FROM audit_log WHERE action = 'scheduled.missed' AND details->>'taskId' = $1",
        [task.id],
      ),
    ).toEqual([{ count: 3 }]);

    await alice.call("scheduled.delete", { taskId: task.id });
  });

  it("two hosts claiming the same occurrence at once record exactly one run", async () => {
    const alice = stack.rpc("alice");
    const { projectId } = await newProject("claims");
    const task = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "contended",
      cron: "15 * * * *",
      timezone: "UTC",
      projectId,
      prompt: "once",
      model: MODEL,
    });
    const due = Date.parse(task.nextRunAt!);
    // The store as two other hosts would use it, on a clock just past the occurrence (the running
    // host's clock has not reached it, so it stays out of the race).
    const clock = createClock();
    clock.set(due + 1_000);
    const store = createScheduleStore({ db: stack.db.pool, clock });
    const outcomes = await Promise.all(
      ["host-a", "host-b"].map((h) => store.claimDue(task.id, clock.now(), 60_000, h)),
    );
    expect(outcomes.map((o) => o.kind).sort()).toEqual(["claimed", "not_due"]);
    const claimed = await rows(
      "SELECT status, scheduled_for, claimed_by FROM scheduled_runs WHERE task_id = $1",
      [task.id],
    );
    expect(claimed).toHaveLength(1);
    expect(claimed[0]).toMatchObject({ status: "claimed", scheduled_for: new Date(due) });

    // A host with a stale next_run_at loses on the unique (task_id, scheduled_for) index.
    await stack.db.pool.query("UPDATE scheduled_tasks SET next_run_at = $2 WHERE id = $1", [
      task.id,
      new Date(due),
    ]);
    expect((await store.claimDue(task.id, clock.now(), 60_000, "host-c")).kind).toBe("lost");
    expect(await rows("SELECT id FROM scheduled_runs WHERE task_id = $1", [task.id])).toHaveLength(1);
    expect(await projectFootprint(projectId)).toEqual({ sessions: 0, turns: 0, transcript: 0, approvals: 0 });

    await alice.call("scheduled.delete", { taskId: task.id });
  });

  it("a restart fails runs that never got a turn, whichever host id claimed them; nothing is replayed", async () => {
    const alice = stack.rpc("alice");
    const { projectId } = await newProject("recover");
    const task = await alice.call<ScheduledTaskView>("scheduled.create", {
      name: "interrupted",
      cron: "0 3 * * *",
      timezone: "UTC",
      projectId,
      prompt: "never replayed",
      model: MODEL,
      enabled: false,
    });
    await stack.host!.stop();
    const at = new Date();
    const insert = (id: string, status: string, claimedBy: string, hoursAgo: number) =>
      stack.db.pool.query(
        `INSERT INTO scheduled_runs (id, task_id, status, scheduled_for, started_at, trigger, claimed_by, principal)
         VALUES ($1, $2, $3, $4, $4, 'schedule', $5, 'alice')`,
        [id, task.id, status, new Date(at.getTime() - hoursAgo * HOUR), claimedBy],
      );
    const hostId = (await rows<{ id: string }>("SELECT id FROM hosts"))[0]!.id;
    await insert("run_own", "claimed", hostId, 3);
    await insert("run_gone", "claimed", "host-that-never-returns", 2);
    await insert("run_done", "completed", "host-that-never-returns", 1);

    const host = await stack.startHost();
    expect(await host.waitForEvent("scheduler.recovered")).toMatchObject({ failed: 2 });
    const after = await rows(
      "SELECT id, status, error_code FROM scheduled_runs WHERE task_id = $1 ORDER BY id",
      [task.id],
    );
    expect(after).toEqual([
      { id: "run_done", status: "completed", error_code: null },
      { id: "run_gone", status: "failed", error_code: "HOST_RESTARTED" },
      { id: "run_own", status: "failed", error_code: "HOST_RESTARTED" },
    ]);
    expect(await projectFootprint(projectId)).toEqual({ sessions: 0, turns: 0, transcript: 0, approvals: 0 });
    await alice.call("scheduled.delete", { taskId: task.id });
  });
});
