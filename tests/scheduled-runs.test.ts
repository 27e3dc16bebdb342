// Scheduled runs on the host's test clock: a due task runs once, a due Plan task is refused without a
// run, old occurrences are recorded missed, two hosts claim one occurrence once, and a restart
// fails runs that never got a turn, replaying nothing. The rules without the clock: scheduled-tasks.
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { createDb, type Db } from "../services/host/store/db.ts";
import { createScheduleStore } from "../services/host/store/schedule-store.ts";
import { runStartupFence } from "../services/host/store/startup-fence.ts";
import { unwrap } from "../services/protocol/result.ts";
import { HOUR, MODEL, schedulingHelpers } from "./support/scheduling.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("schedruns", { host: true, worker: true });
const { hook, rows, newProject, runsOf, projectFootprint, refusalAudits } = schedulingHelpers(stack);

describe("scheduled tasks", () => {
  it("a due task runs once when the clock passes its occurrence; a due Plan task is refused without a run row", async () => {
    const alice = stack.client("alice");
    const { ws, projectId } = await newProject("due");
    const agentTask = await alice.call("scheduled.create", {
      name: "hourly",
      cron: "0 * * * *",
      timezone: "Europe/Berlin",
      projectId,
      prompt: "hourly check",
      model: MODEL,
    });
    const planTask = await alice.call("scheduled.create", {
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
    const tasks = (await alice.call("scheduled.list")).tasks;
    for (const t of tasks) expect(Date.parse(t.nextRunAt!)).toBe(due + HOUR);
    await hook("clock.advance", { ms: 2_000 });
    await new Promise((r) => setTimeout(r, 300));
    expect(await runsOf(agentTask.id)).toHaveLength(1);
    expect(await refusalAudits(planTask.id)).toHaveLength(1);

    await alice.call("scheduled.delete", { taskId: agentTask.id });
    await alice.call("scheduled.delete", { taskId: planTask.id });
  });

  it("occurrences further in the past than the grace period are recorded missed, not run late", async () => {
    const alice = stack.client("alice");
    const { projectId } = await newProject("missed");
    const callsBefore = stack.callLog().length;
    const task = await alice.call("scheduled.create", {
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
    const [listed] = (await alice.call("scheduled.list")).tasks;
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
    const alice = stack.client("alice");
    const { projectId } = await newProject("claims");
    const task = await alice.call("scheduled.create", {
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
    const store = createScheduleStore({ db: stack.db.pool, clock, hostId: "host-a" });
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

  it("a restart fails runs that never got a turn which it or a host no longer running claimed, never a live host's; nothing is replayed", async () => {
    const alice = stack.client("alice");
    const { projectId } = await newProject("recover");
    const task = await alice.call("scheduled.create", {
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
    // Another host that is running now (several hosts): its claim in flight is its own.
    await stack.db.pool.query(
      `INSERT INTO hosts (id, incarnation, started_at, heartbeat_at, lease_expires_at, state)
       VALUES ('host-alive', 1, $1, $1, $1, 'running')`,
      [at],
    );
    await insert("run_live", "claimed", "host-alive", 4);

    const host = await stack.startHost();
    expect(await host.waitForEvent("scheduler.recovered")).toMatchObject({ failed: 2 });
    const after = await rows(
      "SELECT id, status, error_code FROM scheduled_runs WHERE task_id = $1 ORDER BY id",
      [task.id],
    );
    expect(after).toEqual([
      { id: "run_done", status: "completed", error_code: null },
      { id: "run_gone", status: "failed", error_code: "HOST_RESTARTED" },
      { id: "run_live", status: "claimed", error_code: null },
      { id: "run_own", status: "failed", error_code: "HOST_RESTARTED" },
    ]);
    expect(await projectFootprint(projectId)).toEqual({ sessions: 0, turns: 0, transcript: 0, approvals: 0 });
    await alice.call("scheduled.delete", { taskId: task.id });
  });

  it("two hosts' ended runs: each host's scheduler writes only its own, no tick fails, every read shows every outcome", async () => {
    // The finding: runs of one task whose sessions two hosts own; one statement updated every
    // host's ended runs, the lease trigger refused it whole, and the scheduler stopped for everyone.
    const alice = stack.client("alice");
    const { projectId } = await newProject("twohosts");
    const task = await alice.call("scheduled.create", {
      name: "shared",
      cron: "0 4 * * *",
      timezone: "UTC",
      projectId,
      prompt: "x",
      model: MODEL,
      enabled: false,
    });
    const clock = createClock();
    const silent = { info() {}, warn() {}, error() {} };
    const writer = async (hostId: string): Promise<Db> => {
      const { incarnation } = unwrap(
        await runStartupFence({ db: stack.db.pool, clock, hostId, log: silent }),
      );
      return createDb(stack.db.url, { max: 2, writer: { hostId, incarnation, onFenced() {} } });
    };
    const [a, b] = [await writer("sched-a"), await writer("sched-b")];
    try {
      const at = new Date();
      // Three runs per host, each with its own session (leased to that host) and an ended turn.
      for (const [h, host] of [
        ["sched-a", a],
        ["sched-b", b],
      ] as const)
        for (let i = 0; i < 3; i++) {
          const sid = `ses_${h}_${i}`;
          await stack.db.pool.query(
            `INSERT INTO sessions (id, project_id, owner, mode, provider, model, created_at, updated_at)
             VALUES ($1, $2, 'alice', 'agent', 'scripted', 'demo', $3, $3)`,
            [sid, projectId, at],
          );
          await stack.db.pool.query(
            `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
             SELECT $1, id, 1, $2, incarnation FROM hosts WHERE id = $3`,
            [sid, at, h],
          );
          await host.query(
            `INSERT INTO turns (id, session_id, kind, status, created_at, ended_at, error_code)
             VALUES ($1, $2, 'prompt', $3, $4, $4, $5)`,
            [`turn_${sid}`, sid, i === 0 ? "error" : "completed", at, i === 0 ? "TOOL_FAILED" : null],
          );
          await host.query(
            `INSERT INTO scheduled_runs (id, task_id, status, scheduled_for, started_at, trigger, claimed_by, principal, session_id, turn_id)
             VALUES ($1, $2, 'running', $3, $3, 'manual', $4, 'alice', $5, $6)`,
            [`run_${sid}`, task.id, new Date(at.getTime() + i * 1000), h, sid, `turn_${sid}`],
          );
        }
      const storeA = createScheduleStore({ db: a, clock, hostId: "sched-a" });
      const storeB = createScheduleStore({ db: b, clock, hostId: "sched-b" });
      // Before any host writes, a read on either host shows every run as it stands.
      const view = async (store: typeof storeA) => {
        const r = await store.listRuns("alice", task.id);
        if (!r.ok) throw new Error(r.refusal.code);
        return Object.fromEntries(r.value.items.map((x) => [x.runId, `${x.status}:${x.errorCode ?? ""}`]));
      };
      const expected = Object.fromEntries(
        ["sched-a", "sched-b"].flatMap((h) =>
          [0, 1, 2].map((i) => [`run_ses_${h}_${i}`, i === 0 ? "failed:TOOL_FAILED" : "completed:"]),
        ),
      );
      expect(await view(storeA)).toEqual(expected);
      const stored = () =>
        rows<{ id: string; status: string }>(
          "SELECT id, status FROM scheduled_runs WHERE task_id = $1 ORDER BY id",
          [task.id],
        );
      // The listRuns above already wrote A's own three; A's tick writes nothing more and fails nothing.
      expect(await storeA.reconcile()).toBe(0);
      expect((await stored()).filter((r) => r.status === "running").map((r) => r.id)).toEqual([
        "run_ses_sched-b_0",
        "run_ses_sched-b_1",
        "run_ses_sched-b_2",
      ]);
      expect(await storeB.reconcile(task.id)).toBe(3);
      expect((await stored()).every((r) => r.status !== "running")).toBe(true);
      expect(await view(storeB)).toEqual(expected);
    } finally {
      await Promise.all([a.end(), b.end()]);
      await alice.call("scheduled.delete", { taskId: task.id });
    }
  });
});
