// The session actor's state as the host tells it (docs/protocol.md "Events", SessionView): every new
// state value is a `machine.state` event for the owner and approvers only (stored with seq and
// cursor when it rests there, live only while an I/O step runs), `session.get`/`session.list` carry
// the live value, and "passivated" once the actor is gone.
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { Msg } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { formatEvent } from "../services/cli/event-format.ts";
import type { SessionEvent } from "../services/protocol/events.ts";
import { approveProposal, exitPlanStep, newPlanSession, submitted, turnEnded } from "./support/plans.ts";
import type { EventCollector } from "./support/stack.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";
import { decodeEvent, isEvent, isLive } from "./support/events.ts";

const PASSIVATE_AFTER_MS = 1500;
const stack = useStack("mstate", {
  host: true,
  worker: true,
  extra: { PI_PASSIVATE_AFTER_MS: String(PASSIVATE_AFTER_MS), PI_ACTOR_MAX_RESTARTS: "1" },
});

const statesOf = (events: EventCollector) => events.all.filter(isEvent("machine.state")).map((e) => e.state);

/** Waits for a `machine.state` with this value among the events from index `from` on; its index. */
async function reached(events: EventCollector, state: string, from: number, timeoutMs = 20_000) {
  const e = await events.waitFor(
    isEvent("machine.state", (x) => x.state === state && events.all.indexOf(x) >= from),
    timeoutMs,
  );
  return events.all.indexOf(e) + 1;
}

/** Whether `want` appears in `seen` in order (other values in between). */
function isSubsequence(want: string[], seen: string[]): boolean {
  let i = 0;
  for (const s of seen) if (s === want[i]) i++;
  return i === want.length;
}

const machineState = async (sessionId: string, principal = "alice") =>
  (await stack.client(principal).call("session.get", { sessionId })).machineState;

describe("machine.state", () => {
  it("follows a Plan session through prompt, approval, execution and passivation; session.get agrees at each step", async () => {
    const gate = path.join(stack.dir, `mstate-gate-${Date.now()}`);
    const { session } = await newPlanSession(
      stack,
      "mstate",
      [exitPlanStep("Greet"), { waitForFile: gate, text: "Done." }],
      ["carol"],
    );
    // A new session has no actor until its first request.
    expect(session.machineState).toBe("passivated");
    expect(await machineState(session.id)).toBe("passivated");

    const alice = stack.client("alice");
    const events = stack.events(session.id);
    const carols = stack.events(session.id, "carol");
    const bobs: SessionEvent[] = [];
    const bobTap = stack.nc.subscribe(`${stack.env.prefix}.evt.bob.>`, {
      callback: (_err, m: Msg) => {
        bobs.push(decodeEvent(m.data));
      },
    });
    try {
      await stack.nc.flush();
      await alice.call("session.prompt", { sessionId: session.id, text: "Plan a greeting" });

      // The plan waits for approval: the actor holds the parked turn.
      const proposal = await submitted(events);
      let at = await reached(events, "parked", 0);
      expect(statesOf(events).at(-1)).toBe("parked");
      expect(await machineState(session.id)).toBe("parked");
      expect(await machineState(session.id, "carol")).toBe("parked");

      // Approved while no worker runs: the execution stays queued.
      await stack.worker!.stop();
      await approveProposal(stack, proposal, "auto");
      at = await reached(events, "queued", at);
      expect(statesOf(events).at(-1)).toBe("queued");
      expect(await machineState(session.id)).toBe("queued");
      const listed = await alice.call("session.list", {});
      expect(listed.sessions.find((s) => s.id === session.id)?.machineState).toBe("queued");

      // A worker claims it; the execution runs until the gate file exists.
      await stack.startWorker();
      const started = await events.waitFor(isEvent("turn.started", (e) => e.kind === "execution"));
      await events.waitFor(isEvent("turn.claimed", (e) => e.turnId === started.turnId));
      at = await reached(events, "running", at);
      expect(statesOf(events).at(-1)).toBe("running");
      expect(await machineState(session.id)).toBe("running");

      writeFileSync(gate, "go\n");
      await turnEnded(events, started.turnId, 30_000);
      at = await reached(events, "idle", at);
      expect(statesOf(events).at(-1)).toBe("idle");
      expect(await machineState(session.id)).toBe("idle");

      const seen = statesOf(events);
      expect(isSubsequence(["idle", "running", "parked", "queued", "running", "idle"], seen)).toBe(true);
      // The first value is the actor's own first state; no value repeats the one before it.
      expect(seen[0]).toBe("loading");
      expect(seen.filter((s, i) => i > 0 && s === seen[i - 1])).toEqual([]);
      // Transient routing states are never a value.
      expect(seen).not.toContain("route");

      // Idle for PI_PASSIVATE_AFTER_MS: the actor is stopped and says so.
      await reached(events, "passivated", at, PASSIVATE_AFTER_MS * 10);
      expect(statesOf(events).at(-1)).toBe("passivated");
      expect(await machineState(session.id)).toBe("passivated");
      const afterPassivation = await alice.call("session.list", {});
      expect(afterPassivation.sessions.find((s) => s.id === session.id)?.machineState).toBe("passivated");

      // A resting state is a stored event like every other (seq and cursor, events.since returns it);
      // a state the actor leaves when its I/O step ends (loading, prompting, claiming, ...) is
      // published live only: marked `live`, with no seq or cursor, and never stored.
      const stored = await alice.call("events.since", {
        sessionId: session.id,
        limit: 500,
      });
      // The wire schema types a stored event by its common fields; these are session events.
      const storedStates = (stored.events as SessionEvent[]).filter(isEvent("machine.state"));
      const liveMachine = events.all.filter(isEvent("machine.state"));
      const liveOnly = liveMachine.filter(isLive);
      expect(liveOnly.map((e) => e.state)).toEqual(
        expect.arrayContaining(["loading", "prompting", "claiming", "submitting", "resolving", "ending"]),
      );
      for (const e of liveOnly) expect([e.seq, e.cursor]).toEqual([undefined, undefined]);
      expect(storedStates.map((e) => e.state)).toEqual(
        liveMachine.filter((e) => !liveOnly.includes(e)).map((e) => e.state),
      );
      expect(storedStates.map((e) => e.state)).not.toContain("loading");
      for (const e of storedStates) {
        expect(Number.isInteger(e.seq)).toBe(true);
        expect(e.cursor).toMatch(/^[0-9a-f]{32}$/);
      }

      // The approver got the same values; bob (neither owner nor approver) none of this session's events.
      await eventually(async () => statesOf(carols).at(-1) === "passivated", 5_000, "carol's passivated");
      expect(statesOf(carols)).toEqual(statesOf(events));
      expect(bobs.filter((e) => e.sessionId === session.id)).toEqual([]);
      expect(await refusalCode(stack.client("bob").call("session.get", { sessionId: session.id }))).toBe(
        "FORBIDDEN",
      );

      // The next request activates the actor again from the rows.
      await alice.call("session.configure", { sessionId: session.id, permissionMode: "ask" });
      const back = await reached(events, "loading", at);
      await reached(events, "idle", back);
      expect(await machineState(session.id)).toBe("idle");
    } finally {
      bobTap.unsubscribe();
    }
  });

  it("a failed actor starts again from loading; a degraded session is passivated", async () => {
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", {
      name: "mstate-fault",
      workspaceRoot: stack.newWorkspace("mstate-fault"),
    });
    const session = await alice.call("session.create", { projectId: project.id, mode: "agent" });
    const events = stack.events(session.id);
    await stack.nc.flush();
    const configured = await alice.call("session.configure", {
      sessionId: session.id,
      permissionMode: "auto",
    });
    expect(configured.machineState).toBe("idle");
    let at = await reached(events, "idle", 0);

    // One failure is within the bound (PI_ACTOR_MAX_RESTARTS=1): a new actor, read from the rows.
    expect(await stack.hook("actor.fault", { sessionId: session.id })).toMatchObject({ degraded: false });
    at = await reached(events, "loading", at);
    at = await reached(events, "idle", at);
    expect(await machineState(session.id)).toBe("idle");

    // The second degrades the session: no actor, and it says so.
    expect(await stack.hook("actor.fault", { sessionId: session.id })).toMatchObject({ degraded: true });
    await reached(events, "passivated", at);
    expect(statesOf(events)).toEqual([
      "loading",
      "idle",
      "configuring",
      "idle",
      "loading",
      "idle",
      "passivated",
    ]);
    expect(await machineState(session.id)).toBe("passivated");
    events.stop();
  });

  it("is not a line of pihost's human output (it stays in --json)", () => {
    const e: SessionEvent<"machine.state"> = {
      type: "machine.state",
      sessionId: "ses_1",
      at: new Date(0).toISOString(),
      seq: 1,
      cursor: "0".repeat(32),
      state: "running",
    };
    expect(formatEvent(e)).toEqual([]);
  });
});
