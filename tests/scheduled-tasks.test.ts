// Scheduled tasks and app settings (docs/architecture.md "Scheduled tasks and settings") over
// NATS against the real host, worker and Postgres: one test per rule, asserting the reply code, the
// rows, the files under .pi/plan/ and the audit rows. Runs on the clock: scheduled-runs.test.ts.
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MODEL, schedulingHelpers } from "./support/scheduling.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const stack = useStack("sched", { host: true, worker: true });
const { rows, newProject, runsOf, projectFootprint, refusalAudits } = schedulingHelpers(stack);

describe("settings", () => {
  it("get/set the app defaults; inherit is never an app default; any principal in dev mode", async () => {
    const alice = stack.client("alice");
    const bob = stack.client("bob");
    expect(await alice.call("settings.get")).toEqual({
      defaultMode: "agent",
      defaultPermissionMode: "ask",
    });

    for (const bad of [{ defaultPermissionMode: "inherit" }, { defaultMode: "chat" }, { other: 1 }]) {
      expect(await refusalCode(alice.raw("settings.set", bad))).toBe("INVALID_PARAMS");
    }
    expect(await rows("SELECT value FROM app_settings WHERE key = 'defaults'")).toEqual([]);

    // Development mode: any principal may change the app settings (production: PI_SETTINGS_ADMINS).
    expect(
      await bob.call("settings.set", {
        defaultMode: "plan",
        defaultPermissionMode: "accept-edits",
      }),
    ).toEqual({ defaultMode: "plan", defaultPermissionMode: "accept-edits" });
    expect(await rows("SELECT value FROM app_settings WHERE key = 'defaults'")).toEqual([
      { value: { mode: "plan", permissionMode: "accept-edits" } },
    ]);
    expect(await refusalCode(alice.raw("settings.set", { defaultPermissionMode: "inherit" }))).toBe(
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
    expect(await alice.call("settings.get")).toEqual({
      defaultMode: "plan",
      defaultPermissionMode: "accept-edits",
    });

    // The app default mode applies to new sessions only.
    const { projectId } = await newProject("settings");
    const session = await alice.call("session.create", { projectId });
    expect(session.mode).toBe("plan");
  });
});

describe("scheduled tasks", () => {
  it("create defaults to Agent even when the app default is Plan; explicit zone; owner only", async () => {
    const alice = stack.client("alice");
    const bob = stack.client("bob");
    expect((await alice.call("settings.get")).defaultMode).toBe("plan");
    const { projectId } = await newProject("create");
    const task = await alice.call("scheduled.create", {
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
      expect(await refusalCode(alice.raw("scheduled.create", { ...base, ...bad })), JSON.stringify(bad)).toBe(
        "INVALID_PARAMS",
      );
    }
    expect(await refusalCode(alice.call("scheduled.create", { ...base, projectId: "prj_nope" }))).toBe(
      "PROJECT_NOT_FOUND",
    );
    expect(
      await refusalCode(alice.call("scheduled.update", { taskId: task.id, timezone: "Nowhere/X" })),
    ).toBe("INVALID_PARAMS");
    expect(await rows("SELECT id FROM scheduled_tasks")).toEqual([{ id: task.id }]);

    expect((await bob.call("scheduled.list")).tasks).toEqual([]);
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
    expect((await alice.call("scheduled.list")).tasks.map((t) => t.id)).toEqual([task.id]);

    const disabled = await alice.call("scheduled.update", {
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
    const alice = stack.client("alice");
    const { ws, projectId } = await newProject("plan-task");
    const callsBefore = stack.callLog().length;
    const task = await alice.call("scheduled.create", {
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
    const updated = await alice.call("scheduled.update", {
      taskId: task.id,
      mode: "agent",
    });
    expect(updated).toMatchObject({ mode: "agent", version: 1 });
    expect((await alice.call("settings.get")).defaultMode).toBe("plan");
    expect(
      await rows(
        "SELECT principal, details->'changes' AS changes FROM audit_log WHERE action = 'scheduled.update' AND details->>'taskId' = $1",
        [task.id],
      ),
    ).toEqual([{ principal: "alice", changes: { mode: "agent" } }]);

    const run = await alice.call("scheduled.run", { taskId: task.id });
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
    const alice = stack.client("alice");
    const { ws, projectId } = await newProject("no-plan-unattended");
    const task = await alice.call("scheduled.create", {
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
    const run = await alice.call("scheduled.run", { taskId: task.id });
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
});
