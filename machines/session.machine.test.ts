// The session machine with stub step actors (machine.provide) and a simulated clock: the main paths,
// the busy refusals, abort, the approval deadline expiring on the clock, and a missing clock failing.
import { describe, expect, it } from "vitest";
import { createActor, fromPromise, SimulatedClock, type SnapshotFrom, waitFor } from "xstate";
import {
  type Reply,
  type SessionFacts,
  type StepInput,
  type StepOutput,
  sessionMachine,
} from "./session.machine.ts";

const IDLE: SessionFacts = {
  mode: "agent",
  activeTurnId: null,
  activeTurnKind: null,
  pendingProposalId: null,
  pendingDeadlineMs: null,
  queuedExecutionTurnId: null,
};

type StateName = Parameters<SnapshotFrom<typeof sessionMachine>["matches"]>[0];
type Steps = Partial<Record<string, (input: StepInput) => StepOutput>>;

const DEFAULT_STEPS: Steps = {
  startTurn: () => ({ activeTurnId: "t1", result: { turnId: "t1" } }),
  configure: () => ({ mode: "plan", result: { configured: true } }),
  claimTurn: (i) => ({ activeTurnId: i.context.turnId, result: { token: "tok" } }),
  enterPlan: () => ({ mode: "plan", result: { entered: true } }),
  submitPlan: () => ({ pendingProposalId: "p1", pendingDeadlineMs: 30 * 60_000, result: { parked: true } }),
  resolvePlan: () => ({ activeTurnId: "t2", activeTurnKind: "execution", result: { approved: true } }),
  endTurn: () => ({ result: { ended: true } }),
  abortWork: () => ({ result: { aborted: true } }),
  expirePlan: () => ({}),
};

/** A reply that records what it was answered with. */
function recorder() {
  const seen: Array<{ kind: "ok" | "fail" | "error"; value: unknown }> = [];
  const reply: Reply = {
    ok: (value) => seen.push({ kind: "ok", value }),
    fail: (code) => seen.push({ kind: "fail", value: code }),
    error: (value) => seen.push({ kind: "error", value }),
  };
  return { reply, seen };
}

function start(facts: SessionFacts = IDLE, steps: Steps = {}, withClock = true) {
  const clock = new SimulatedClock();
  const calls: string[] = [];
  const all = { ...DEFAULT_STEPS, ...steps };
  const stub = (name: string) =>
    fromPromise<StepOutput, StepInput>(async ({ input }) => {
      calls.push(name);
      return all[name]!(input);
    });
  const machine = sessionMachine.provide({
    actors: {
      loadSession: fromPromise<SessionFacts, { sessionId: string }>(async () => facts),
      ...Object.fromEntries(Object.keys(DEFAULT_STEPS).map((n) => [n, stub(n)])),
    },
    ...(withClock
      ? {
          delays: {
            approvalDeadline: ({ context }) => Math.max(0, (context.deadlineMs ?? 0) - clock.now()),
          },
        }
      : {}),
  });
  const actor = createActor(machine, { input: { sessionId: "s1" }, clock });
  // Every root actor has an error observer (an unobserved error is rethrown on a timer).
  const errors: unknown[] = [];
  actor.subscribe({ error: (err) => errors.push(err) });
  actor.start();
  const settled = (state: StateName) => waitFor(actor, (s) => s.matches(state), { timeout: 1000 });
  return { actor, clock, calls, settled, errors };
}

/** Drives a fresh session from idle through prompt, claim and ExitPlanMode into `parked`. */
async function parkedSession(withClock = true) {
  const s = start({ ...IDLE, mode: "plan" }, {}, withClock);
  await s.settled("idle");
  s.actor.send({ type: "PROMPT", params: { sessionId: "s1", text: "plan it" }, reply: recorder().reply });
  await s.settled("running");
  s.actor.send({ type: "CLAIM", turnId: "t1", workerId: "w1", reply: recorder().reply });
  await waitFor(s.actor, (x) => x.matches("running") && x.context.leased, { timeout: 1000 });
  s.actor.send({ type: "SUBMIT_PLAN", turnId: "t1", toolCallId: "c1", args: {}, reply: recorder().reply });
  return s;
}

describe("session machine", () => {
  it("loads the rows, then waits idle", async () => {
    const { actor, settled } = start();
    expect(actor.getSnapshot().value).toBe("loading");
    await settled("idle");
    expect(actor.getSnapshot().context.mode).toBe("agent");
  });

  it("restarts from the rows into the state they say (a pending approval is parked)", async () => {
    const { settled } = start({ ...IDLE, mode: "plan", activeTurnId: "t1", pendingProposalId: "p1" });
    await settled("parked");
  });

  it("a prompt starts a turn: running, answered with the step's result", async () => {
    const { actor, settled, calls } = start();
    await settled("idle");
    const r = recorder();
    actor.send({ type: "PROMPT", params: { sessionId: "s1", text: "hi" }, reply: r.reply });
    await settled("running");
    expect(calls).toEqual(["startTurn"]);
    expect(r.seen).toEqual([{ kind: "ok", value: { turnId: "t1" } }]);
    expect(actor.getSnapshot().context).toMatchObject({ turnId: "t1", turnKind: "prompt", leased: false });
  });

  it("while a turn runs, a prompt is AGENT_BUSY and a configure PLAN_CONFIGURATION_BLOCKED", async () => {
    const { actor, settled } = start({ ...IDLE, activeTurnId: "t1", activeTurnKind: "prompt" });
    await settled("running");
    const prompt = recorder();
    const configure = recorder();
    actor.send({ type: "PROMPT", params: { sessionId: "s1", text: "again" }, reply: prompt.reply });
    actor.send({ type: "CONFIGURE", params: { sessionId: "s1", mode: "plan" }, reply: configure.reply });
    expect(prompt.seen).toEqual([{ kind: "fail", value: "AGENT_BUSY" }]);
    expect(configure.seen).toEqual([{ kind: "fail", value: "PLAN_CONFIGURATION_BLOCKED" }]);
    expect(actor.getSnapshot().value).toBe("running");
  });

  it("ExitPlanMode from the leased worker parks the turn behind the approval", async () => {
    const { actor, settled, calls } = await parkedSession();
    await settled("parked");
    expect(calls).toEqual(["startTurn", "claimTurn", "submitPlan"]);
    expect(actor.getSnapshot().context).toMatchObject({ proposalId: "p1", leased: false });
  });

  it("approve queues the execution turn", async () => {
    const { actor, settled } = await parkedSession();
    await settled("parked");
    const r = recorder();
    actor.send({
      type: "RESOLVE",
      params: { proposalId: "p1", sessionId: "s1", turnId: "t1", toolCallId: "c1", action: "approve" },
      principal: "alice",
      reply: r.reply,
    });
    await settled("queued");
    expect(r.seen).toEqual([{ kind: "ok", value: { approved: true } }]);
    expect(actor.getSnapshot().context).toMatchObject({
      mode: "agent",
      turnId: "t2",
      turnKind: "execution",
      queued: true,
      proposalId: null,
    });
  });

  it("the approval deadline expires on the simulated clock, not before", async () => {
    const { actor, clock, settled, calls } = await parkedSession();
    await settled("parked");
    clock.increment(30 * 60_000 - 1);
    expect(actor.getSnapshot().value).toBe("parked");
    clock.increment(1);
    await settled("idle");
    expect(calls.at(-1)).toBe("expirePlan");
    expect(actor.getSnapshot().context).toMatchObject({ proposalId: null, turnId: null });
  });

  it("abort while parked runs abortWork and returns to idle", async () => {
    const { actor, settled, calls } = await parkedSession();
    await settled("parked");
    const r = recorder();
    actor.send({ type: "ABORT", reply: r.reply });
    await settled("idle");
    expect(calls.at(-1)).toBe("abortWork");
    expect(r.seen).toEqual([{ kind: "ok", value: { aborted: true } }]);
  });

  it("abort of an idle session answers at once, with nothing aborted", async () => {
    const { actor, settled, calls } = start();
    await settled("idle");
    const r = recorder();
    actor.send({ type: "ABORT", reply: r.reply });
    expect(r.seen).toEqual([{ kind: "ok", value: { sessionId: "s1", aborted: null } }]);
    expect(calls).toEqual([]);
  });

  it("a failed step answers with its error and leaves the state as it was", async () => {
    const { actor, settled } = start(IDLE, {
      startTurn: () => {
        throw new Error("database down");
      },
    });
    await settled("idle");
    const r = recorder();
    actor.send({ type: "PROMPT", params: { sessionId: "s1", text: "hi" }, reply: r.reply });
    await waitFor(actor, () => r.seen.length > 0, { timeout: 1000 });
    expect(r.seen[0]?.kind).toBe("error");
    expect(actor.getSnapshot().value).toBe("idle");
  });

  it("FAULT is a declared event: without the test hooks' action it does nothing", async () => {
    const { actor, settled } = start();
    await settled("idle");
    actor.send({ type: "FAULT" });
    expect(actor.getSnapshot().status).toBe("active");
  });

  it("without a provided clock (approvalDeadline delay) the actor fails on parking", async () => {
    const { actor, errors } = await parkedSession(false);
    await waitFor(actor, (s) => s.status === "error", { timeout: 1000 }).catch(() => {});
    expect(actor.getSnapshot().status).toBe("error");
    expect(String(errors[0])).toContain("approvalDeadline not provided");
  });
});
