// Several hosts without surprises (docs/architecture.md "Several hosts"): two host processes and the
// real agent worker on one database and prefix, as a team runs them.
// - Real time: a Bash of 30 s and a permission prompt answered after 60 s, on sessions owned by each
//   host, end with one result each, the right one: no HOST_UNAVAILABLE (the worker's calls go to the
//   owner, never through a forward), no PERMISSION_INTERRUPTED; a `* * * * *` task runs on its own.
// - Runs of one task whose sessions both hosts own all end and are brought up to date by their own
//   hosts' schedulers (one statement over both used to stop the scheduler for the team).
// - Then three due occurrences in a row run, the hosts' test clocks advanced.
import { afterAll, describe, expect, it } from "vitest";
import type { ScheduledRunView } from "../../services/protocol/scheduling-schemas.ts";
import type { ProjectView, SessionView } from "../../services/protocol/schemas.ts";
import type { ScriptStep } from "../../services/protocol/values.ts";
import { hostEnv, type ManagedProcess, spawnTs, startWorker } from "../support/processes.ts";
import { eventually, type EventCollector } from "../support/stack.ts";
import { useStack } from "../support/stack-fixture.ts";
import { isEvent } from "../support/events.ts";

const HOSTS = ["h1", "h2"] as const;
const hosts = new Map<string, ManagedProcess>();
let worker: ManagedProcess | null = null;

const stack = useStack("twohosts", {
  timeoutMs: 120_000,
  setup: async (s) => {
    for (const id of HOSTS)
      hosts.set(
        id,
        spawnTs("services/host/main.ts", hostEnv({ ...s.env, extra: { ...s.env.extra, PI_HOST_ID: id } })),
      );
    await Promise.all([...hosts.values()].map((h) => h.waitForEvent("host.ready", 60_000)));
    worker = startWorker(s.env);
    await worker.waitForEvent("worker.ready");
    return async () => {
      await Promise.all([worker?.stop(), ...[...hosts.values()].map((h) => h.stop())]);
    };
  },
});

afterAll(() => {
  // Nothing of the kind any host or the worker should ever say in this file.
  for (const [id, h] of hosts) {
    expect([id, lines(h, "scheduler.tick_failed")]).toEqual([id, []]);
    expect([id, lines(h, "scheduler.claim_failed")]).toEqual([id, []]);
    expect([id, lines(h, "host.forward_failed")]).toEqual([id, []]);
  }
});

function lines(p: ManagedProcess, event: string): Array<Record<string, unknown>> {
  return p.lines.flatMap((l) => {
    try {
      const o = JSON.parse(l);
      return o.event === event ? [o] : [];
    } catch {
      return [];
    }
  });
}

const alice = () => stack.client("alice");
async function owner(sessionId: string): Promise<string> {
  const r = await stack.db.pool.query("SELECT host_id FROM session_leases WHERE session_id = $1", [
    sessionId,
  ]);
  return r.rows[0]?.host_id;
}

let project: ProjectView | null = null;
async function theProject(): Promise<ProjectView> {
  project ??= await alice().call("projects.create", {
    name: "two",
    workspaceRoot: stack.newWorkspace("two"),
  });
  return project;
}

/** A session of alice's owned by `hostId` (a request reaches either host: create until it is). */
async function sessionOn(
  hostId: string,
  permissionMode: "auto" | "ask",
  script: ScriptStep[],
): Promise<SessionView> {
  const { id: projectId } = await theProject();
  for (let i = 0; i < 30; i++) {
    const s = await alice().call("session.create", {
      projectId,
      mode: "agent",
      permissionMode,
      model: { provider: "scripted", model: "script", script },
    });
    if ((await owner(s.id)) === hostId) return s;
  }
  throw new Error(`no session landed on ${hostId}`);
}

const bashStep = (command: string): ScriptStep => ({
  toolCalls: [{ name: "Bash", args: { command, timeout: 90 } }],
});
const ended = (events: EventCollector, turnId: string, ms: number) =>
  events.waitFor(
    isEvent("turn.ended", (e) => e.turnId === turnId),
    ms,
  );

/** Prompts a session and follows its one tool call to the end of the turn. */
async function oneCall(session: SessionView, answerAfterMs: number | null) {
  const events = stack.events(session.id);
  const { turnId } = await alice().call("session.prompt", {
    sessionId: session.id,
    text: "go",
  });
  if (answerAfterMs !== null) {
    const asked = await events.waitFor(isEvent("permission.requested"), 30_000);
    await new Promise((r) => setTimeout(r, answerAfterMs));
    await alice().call("permissions.resolve", { requestId: asked.requestId, decision: "allow-once" });
  }
  const end = await ended(events, turnId, 150_000);
  const results = events.all.filter(isEvent("tool.result"));
  const resolved = events.all.filter(isEvent("permission.resolved"));
  events.stop();
  return { end, results, resolved };
}

async function runsOf(taskId: string): Promise<ScheduledRunView[]> {
  return (await alice().call("scheduled.runs", { taskId })).runs;
}

const SCRIPT: ScriptStep[] = [{ text: "scheduled done" }];

describe("two hosts and the real worker", () => {
  it("in real time: 30 s Bash and a prompt answered after 60 s on each host, one right result each; a * * * * * task runs", {
    timeout: 200_000,
  }, async () => {
    const { id: projectId } = await theProject();
    const everyMinute = await alice().call("scheduled.create", {
      name: "every minute",
      cron: "* * * * *",
      timezone: "UTC",
      projectId,
      prompt: "tick",
      model: { provider: "scripted", model: "script", script: SCRIPT },
    });
    const calls = [];
    for (const h of HOSTS) {
      calls.push(
        oneCall(await sessionOn(h, "auto", [bashStep("sleep 30; echo slept-30"), { text: "ok" }]), null),
      );
      calls.push(
        oneCall(await sessionOn(h, "ask", [bashStep("echo answered-late"), { text: "ok" }]), 60_000),
      );
    }
    const outcomes = await Promise.all(calls);
    for (const [i, o] of outcomes.entries()) {
      const late = i % 2 === 1;
      expect(o.end).toMatchObject({ status: "completed" });
      expect(o.results).toHaveLength(1);
      expect(o.results[0]).toMatchObject({ tool: "Bash", decision: "allow", isError: false });
      expect(o.results[0]!.text).toContain(late ? "answered-late" : "slept-30");
      if (late) expect(o.resolved.map((r) => [r.decision, r.code ?? null])).toEqual([["allow-once", null]]);
    }
    const said = worker!.lines.join("\n");
    for (const bad of ["HOST_UNAVAILABLE", "PERMISSION_INTERRUPTED", "turn.tool_retry", "turn.owner_lost"])
      expect([bad, said.includes(bad)]).toEqual([bad, false]);

    // The every-minute task ran by itself within its minute (each occurrence once).
    const ran = await eventually(
      async () => {
        const runs = await runsOf(everyMinute.id);
        return runs.some((r) => r.trigger === "schedule" && r.status === "completed") ? runs : null;
      },
      70_000,
      "a * * * * * run",
    );
    await alice().call("scheduled.update", { taskId: everyMinute.id, enabled: false });
    const occurrences = ran.filter((r) => r.trigger === "schedule").map((r) => r.scheduledFor);
    expect(new Set(occurrences).size).toBe(occurrences.length);
  });

  it("runs of one task on both hosts' sessions all end and are written up to date, each by its owner", async () => {
    const { id: projectId } = await theProject();
    const task = await alice().call("scheduled.create", {
      name: "by hand",
      cron: "0 4 * * *",
      timezone: "UTC",
      projectId,
      prompt: "now",
      model: { provider: "scripted", model: "script", script: SCRIPT },
      enabled: false,
    });
    const owners = new Set<string>();
    for (let i = 0; i < 30 && owners.size < 2; i++) {
      const run = await alice().call("scheduled.run", { taskId: task.id });
      owners.add(await owner(run.sessionId!));
    }
    expect(owners).toEqual(new Set(HOSTS));
    const stored = () =>
      stack.db.pool.query<{ status: string }>("SELECT status FROM scheduled_runs WHERE task_id = $1", [
        task.id,
      ]);
    // Every run ends, as read and as stored: each host's scheduler wrote its own.
    await eventually(
      async () => (await runsOf(task.id)).every((r) => r.status === "completed"),
      30_000,
      "runs read",
    );
    await eventually(
      async () => (await stored()).rows.every((r) => r.status === "completed"),
      30_000,
      "runs stored",
    );
  });

  it("three due occurrences in a row run on the hosts' test clocks", async () => {
    const { id: projectId } = await theProject();
    const task = await alice().call("scheduled.create", {
      name: "hourly",
      cron: "0 * * * *",
      timezone: "UTC",
      projectId,
      prompt: "hour",
      model: { provider: "scripted", model: "script", script: SCRIPT },
    });
    let due = Date.parse(task.nextRunAt!);
    for (let n = 1; n <= 3; n++) {
      for (const h of HOSTS) await stack.hookOn(h, "clock.set", { now: due + 2_000 });
      const runs = await eventually(
        async () => {
          const r = (await runsOf(task.id)).filter((x) => x.trigger === "schedule");
          return r.length === n && r.every((x) => x.status === "completed") ? r : null;
        },
        30_000,
        `occurrence ${n}`,
      );
      expect(runs[0]!.scheduledFor).toBe(new Date(due).toISOString());
      due += 3_600_000;
    }
  });
});
