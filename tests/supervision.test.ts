// Session supervision end to end, with the host and a worker as child processes: a fault injected
// into one session's actor (docs/protocol.md "Test hooks") is restarted from the rows while 50 other sessions complete
// turns; repeated past the bound it degrades only that session; an actor's throw never ends the host;
// idle actors are passivated and re-activated on the next request.
import { describe, expect, it } from "vitest";
import type { SessionView } from "../services/protocol/schemas.ts";
import { PROTOCOL_VERSION } from "../services/protocol/subjects.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const PASSIVATE_AFTER_MS = 1000;
let projectId: string;

const stack = useStack("supervision", {
  extra: {
    PI_PASSIVATE_AFTER_MS: String(PASSIVATE_AFTER_MS),
    PI_ACTOR_MAX_RESTARTS: "3",
    PI_ACTOR_RESTART_WINDOW_MS: "60000",
    PI_WORKER_CONCURRENCY: "16",
  },
  host: true,
  worker: true,
  async setup(s) {
    const project = await s
      .client("alice")
      .call("projects.create", { name: "supervision", workspaceRoot: s.newWorkspace("ws") });
    projectId = project.id;
  },
});

const hook = <T>(name: string, params: unknown) => stack.hook<T>(name, params);

const status = () => stack.client("alice").call("host.status", {});

function newSession(): Promise<SessionView> {
  return stack.client("alice").call("session.create", {
    projectId,
    mode: "agent",
    model: { provider: "scripted", model: "script", script: [{ text: "done" }] },
  });
}

async function prompt(sessionId: string, text = "go"): Promise<string> {
  const r = await stack.client("alice").call("session.prompt", { sessionId, text });
  return r.turnId;
}

async function completed(turnIds: string[]): Promise<number> {
  const r = await stack.db.pool.query(
    "SELECT count(*)::int AS n FROM turns WHERE id = ANY($1) AND status = 'completed'",
    [turnIds],
  );
  return r.rows[0].n;
}

const waitCompleted = (turnIds: string[], timeoutMs = 30_000) =>
  eventually(async () => (await completed(turnIds)) === turnIds.length, timeoutMs, "turns completed");

describe("session supervision", () => {
  let others: SessionView[] = [];
  let victim: SessionView;

  it("restarts a faulted actor from rows while 50 sessions complete turns; past the bound only it is degraded", async () => {
    others = await Promise.all(Array.from({ length: 50 }, newSession));
    victim = await newSession();

    // All 50 prompts go out at once while the victim's actor is faulted.
    const prompts = Promise.all(others.map((s) => prompt(s.id)));
    const first = await hook<{ failures: number; degraded: boolean }>("actor.fault", {
      sessionId: victim.id,
    });
    expect(first).toMatchObject({ sessionId: victim.id, failures: 1, degraded: false });

    // Restarted from the rows: the next request is served and its turn completes.
    const victimTurn = await prompt(victim.id, "still there?");
    await waitCompleted([victimTurn]);

    // Two more faults are still within the bound (3 restarts); the fourth degrades the session.
    for (const n of [2, 3]) {
      const r = await hook<{ failures: number; degraded: boolean }>("actor.fault", { sessionId: victim.id });
      expect(r).toMatchObject({ failures: n, degraded: false });
    }
    const last = await hook<{ failures: number; degraded: boolean }>("actor.fault", { sessionId: victim.id });
    expect(last).toMatchObject({ failures: 4, degraded: true });

    expect(
      await refusalCode(stack.client("alice").call("session.prompt", { sessionId: victim.id, text: "x" })),
    ).toBe("SESSION_DEGRADED");
    expect(await refusalCode(stack.client("alice").call("session.configure", { sessionId: victim.id }))).toBe(
      "SESSION_DEGRADED",
    );
    expect(await refusalCode(hook("actor.fault", { sessionId: victim.id }))).toBe("SESSION_DEGRADED");
    // Reads still work.
    expect((await stack.client("alice").call("session.get", { sessionId: victim.id })).id).toBe(victim.id);

    // Every one of the 50 turns completed, untouched by the victim's failures.
    const turnIds = await prompts;
    expect(new Set(turnIds).size).toBe(50);
    await waitCompleted(turnIds);

    // The others still work after the degradation.
    const again = await Promise.all(others.slice(0, 5).map((s) => prompt(s.id, "again")));
    await waitCompleted(again);

    const st = await status();
    expect(st.sessions.degraded).toEqual([{ sessionId: victim.id, failures: 4, since: expect.any(String) }]);
    expect(stack.host!.lines.some((l) => l.includes('"event":"session.degraded"'))).toBe(true);
  });

  it("a throw inside an actor leaves the host process up", async () => {
    const s = await newSession();
    await hook("actor.fault", { sessionId: s.id });
    // An unobserved actor error would be rethrown on a timer (setTimeout 0) and end the process.
    await new Promise((r) => setTimeout(r, 300));
    expect(stack.host!.child.exitCode).toBeNull();
    expect(stack.host!.child.signalCode).toBeNull();
    const hello = await stack.client("alice").call("host.hello", {
      protocolVersion: PROTOCOL_VERSION,
    });
    expect(hello.hostId).toBeTruthy();
    expect(
      stack.host!.lines.some((l) => l.includes('"event":"session.actor_failed"') && l.includes(s.id)),
    ).toBe(true);
    // The restarted actor serves the session.
    await waitCompleted([await prompt(s.id)]);
  });

  it("passivates idle actors and re-activates one on the next request", async () => {
    const before = await status();
    expect(before.sessions.active + before.sessions.passivated + before.sessions.degraded.length).toBe(52);

    // Every session is idle now: after PI_PASSIVATE_AFTER_MS their actors are stopped.
    const idle = await eventually(
      async () => {
        const st = await status();
        return st.sessions.active === 0 ? st : null;
      },
      10_000,
      "all actors passivated",
    );
    expect(idle.sessions.passivated).toBe(51);
    expect(idle.sessions.degraded.map((d) => d.sessionId)).toEqual([victim.id]);

    const s = others[7]!;
    const turnId = await prompt(s.id, "wake up");
    const woken = await status();
    expect(woken.sessions.active).toBeGreaterThanOrEqual(1);
    expect(woken.sessions.passivated).toBe(51 - woken.sessions.active);
    await waitCompleted([turnId]);

    await eventually(async () => (await status()).sessions.active === 0, 10_000, "passivated again");
  });
});
