// Crash points of the plan lifecycle (docs/protocol.md "Startup fence"): SIGKILL the host (a real child
// process) while (a) an approval is pending, (b) an approved execution is queued and (c) the
// execution is running with the scripted model blocked on a file (docs/protocol.md "Test hooks"). After the restart the
// rows, turns and modes are what the fence says, with one audit row each; the old execution cannot
// be claimed and no worker runs it; the model call log shows nothing replayed; a new prompt starts
// a new turn. (a) is covered in depth, old identity and artifact included, by restart-fence.test.ts;
// here it shares the kill of (b), so one fence is seen handling both at once.
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ProposalView } from "../services/protocol/schemas.ts";
import {
  approvalRow,
  auditRows,
  callsOf,
  exitPlanStep,
  isPlanChanged,
  newPlanSession,
  rows,
  submitted,
  turnEnded,
  workerLogged,
  writeStep,
} from "./support/plans.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("crashpts", { host: true, worker: true });

function approve(p: ProposalView, mode = "accept-edits") {
  return stack.client("alice").call("plans.resolve", {
    proposalId: p.proposalId,
    sessionId: p.sessionId,
    turnId: p.turnId,
    toolCallId: p.toolCallId,
    action: "approve",
    targetPermissionMode: mode,
  });
}

async function turnRow(turnId: string) {
  const [t] = await rows<{ status: string; error_code: string | null; kind: string }>(
    stack,
    "SELECT status, error_code, kind FROM turns WHERE id = $1",
    [turnId],
  );
  return t!;
}

/** SIGKILL the host, start it again; returns its fence log line (the fence runs before host.ready). */
async function crashAndRestart(): Promise<Record<string, unknown>> {
  await stack.host!.kill();
  const host = await stack.startHost();
  const order = host.lines.map((l) => {
    try {
      return JSON.parse(l).event as string;
    } catch {
      return "";
    }
  });
  expect(order.indexOf("host.fence")).toBeGreaterThanOrEqual(0);
  expect(order.indexOf("host.fence")).toBeLessThan(order.indexOf("host.ready"));
  return host.waitForEvent("host.fence");
}

describe("plan crash points (SIGKILL of the host)", () => {
  it("(a) pending and (b) execution queued: interrupted, Plan resp. Agent, nothing claimable or replayed", async () => {
    const a = await newPlanSession(stack, "a-pending", [
      exitPlanStep("Pending plan"),
      { text: "new turn a" },
    ]);
    const b = await newPlanSession(stack, "b-queued", [
      exitPlanStep("Queued plan"),
      writeStep("executed-b.txt"),
      { text: "done b" },
    ]);
    const alice = stack.client("alice");
    const evA = stack.events(a.session.id);
    const evB = stack.events(b.session.id);
    const [{ turnId: planTurnA }, { turnId: planTurnB }] = await Promise.all([
      alice.call("session.prompt", { sessionId: a.session.id, text: "plan a" }),
      alice.call("session.prompt", { sessionId: b.session.id, text: "plan b" }),
    ]);
    const [pA, pB] = await Promise.all([submitted(evA), submitted(evB)]);

    // Hold the worker so the approved execution stays queued.
    await stack.worker!.stop();
    const approved = await approve(pB);
    expect(approved).toMatchObject({ status: "approved", executionState: "queued" });
    const beforeB = await approvalRow(stack, pB.proposalId);
    const execTurn = beforeB.execution_turn_id!;
    expect(beforeB).toMatchObject({ execution_state: "queued", execution_id: approved.executionId });
    expect(await turnRow(execTurn)).toMatchObject({ status: "running", kind: "execution" });
    const callsA = callsOf(stack, a.session.id);
    const callsB = callsOf(stack, b.session.id);
    expect(callsA.map((c) => c.turnId)).toEqual([planTurnA]);
    expect(callsB.map((c) => c.turnId)).toEqual([planTurnB]);

    const seenA = evA.all.length;
    const seenB = evB.all.length;
    const fence = await crashAndRestart();
    expect(fence).toMatchObject({ approvalsInterrupted: 1, executionsInterrupted: 1, turnsAborted: 2 });

    // (a) pending -> interrupted, the parked turn aborted, the session stays Plan.
    expect(await approvalRow(stack, pA.proposalId)).toMatchObject({
      status: "interrupted",
      error_code: "PLAN_APPROVAL_INTERRUPTED",
      execution_id: null,
    });
    expect(await turnRow(planTurnA)).toMatchObject({ status: "aborted", error_code: "HOST_RESTARTED" });
    expect(await alice.call("session.get", { sessionId: a.session.id })).toMatchObject({
      mode: "plan",
      planningState: "planning",
      activeTurnId: null,
    });
    expect(await auditRows(stack, a.session.id, "fence.%")).toEqual([
      { action: "fence.approval", code: "PLAN_APPROVAL_INTERRUPTED", turn_id: planTurnA },
      { action: "fence.turn", code: "HOST_RESTARTED", turn_id: planTurnA },
    ]);

    // (b) queued -> interrupted, the approval itself stays approved, the execution turn aborted,
    // the session stays Agent with the approved permission mode.
    expect(await approvalRow(stack, pB.proposalId)).toMatchObject({
      status: "approved",
      execution_id: approved.executionId,
      execution_state: "interrupted",
      error_code: "PLAN_EXECUTION_INTERRUPTED",
    });
    expect(await turnRow(execTurn)).toMatchObject({ status: "aborted", error_code: "HOST_RESTARTED" });
    expect(await turnRow(planTurnB)).toMatchObject({ status: "completed" });
    const [sB] = await rows(stack, "SELECT mode, permission_mode FROM sessions WHERE id = $1", [
      b.session.id,
    ]);
    expect(sB).toEqual({ mode: "agent", permission_mode: "accept-edits" });
    expect(await alice.call("session.get", { sessionId: b.session.id })).toMatchObject({
      planningState: "inactive",
      activeTurnId: null,
    });
    expect(await auditRows(stack, b.session.id, "fence.%")).toEqual([
      { action: "fence.execution", code: "PLAN_EXECUTION_INTERRUPTED", turn_id: execTurn },
      { action: "fence.turn", code: "HOST_RESTARTED", turn_id: execTurn },
    ]);

    // Owners hear about both on the bus, with the fenced rows.
    const fencedA = await evA.waitFor(
      isEvent("plan.changed", (e) => e.action === "interrupted" && evA.all.indexOf(e) >= seenA),
    );
    expect(fencedA).toMatchObject({ state: "planning", proposal: { status: "interrupted" } });
    expect(Object.keys(fencedA.proposal!).sort()).toEqual(Object.keys(pA).sort());
    expect(
      await evB.waitFor((e) => isPlanChanged(e) && e.action === "interrupted" && evB.all.indexOf(e) >= seenB),
    ).toMatchObject({
      state: "inactive",
      execution: { executionId: approved.executionId, state: "interrupted" },
    });

    // The old execution cannot be claimed, and a worker that comes back is offered nothing of it.
    expect(await refusalCode(stack.agentClient.call("claim", { turnId: execTurn, workerId: "ghost" }))).toBe(
      "PLAN_EXECUTION_STALE",
    );
    await stack.startWorker();

    // A new prompt starts a new turn in each session (the worker's hello came first: had the old
    // execution been offered, it would have been claimed before these ran).
    const [nA, nB] = await Promise.all([
      alice.call("session.prompt", { sessionId: a.session.id, text: "again a" }),
      alice.call("session.prompt", { sessionId: b.session.id, text: "again b" }),
    ]);
    expect([nA.turnId, nB.turnId]).not.toContain(execTurn);
    expect(await turnEnded(evA, nA.turnId)).toMatchObject({ status: "completed" });
    expect(await turnEnded(evB, nB.turnId)).toMatchObject({ status: "completed" });

    // Nothing replayed: the fenced turns got no model call; only the new turns did.
    expect(callsOf(stack, a.session.id).map((c) => c.turnId)).toEqual([planTurnA, nA.turnId]);
    const afterB = callsOf(stack, b.session.id).map((c) => c.turnId);
    expect(afterB).not.toContain(execTurn);
    expect(afterB).toEqual([planTurnB, nB.turnId, nB.turnId]);
    // The fenced execution never started: after the restart the only event naming its turn is the
    // fence's announcement of its end, and no execution state but `interrupted` is published; no
    // tool call of it. The file the plan asked for was written by the new turn, the user's next one.
    const since = [...evA.all.slice(seenA), ...evB.all.slice(seenB)];
    expect(
      since
        .filter((e) => "turnId" in e && e.turnId === execTurn)
        .map((e) => [e.type, "status" in e ? e.status : undefined, "code" in e ? e.code : undefined]),
    ).toEqual([["turn.ended", "aborted", "HOST_RESTARTED"]]);
    expect(
      since
        .filter(isPlanChanged)
        .map((e) => e.execution?.state)
        .filter((x) => x !== undefined),
    ).toEqual(["interrupted"]);
    expect(
      await rows(stack, "SELECT turn_id FROM tool_calls WHERE session_id = $1 AND tool = 'Write'", [
        b.session.id,
      ]),
    ).toEqual([{ turn_id: nB.turnId }]);
    expect(existsSync(path.join(b.ws, "executed-b.txt"))).toBe(true);
    expect((await approvalRow(stack, pB.proposalId)).execution_state).toBe("interrupted");
    evA.stop();
    evB.stop();
  });

  it("(c) execution running, the model blocked on a file: interrupted, stays Agent, the worker's run goes nowhere", async () => {
    const gate = path.join(stack.dir, "gate-c");
    const c = await newPlanSession(stack, "c-running", [
      exitPlanStep("Running plan"),
      { waitForFile: gate, ...writeStep("executed-c.txt") },
      { text: "done c" },
    ]);
    const alice = stack.client("alice");
    const ev = stack.events(c.session.id);
    const { turnId: planTurn } = await alice.call("session.prompt", {
      sessionId: c.session.id,
      text: "plan c",
    });
    const p = await submitted(ev);
    const approved = await approve(p);
    const execTurn = (await approvalRow(stack, p.proposalId)).execution_turn_id!;

    // The worker claimed the execution (running) and the model call is blocked on the gate file.
    await ev.waitFor(
      (e) =>
        isPlanChanged(e) &&
        e.execution?.executionId === approved.executionId &&
        e.execution.state === "running",
    );
    await eventually(async () => callsOf(stack, c.session.id).some((x) => x.turnId === execTurn));
    expect(await approvalRow(stack, p.proposalId)).toMatchObject({ execution_state: "running" });
    expect(await auditRows(stack, c.session.id, "plan.execution.%")).toEqual([
      { action: "plan.execution.start", code: null, turn_id: execTurn },
    ]);
    const callsBefore = callsOf(stack, c.session.id);
    expect(callsBefore.map((x) => [x.turnId, x.step])).toEqual([
      [planTurn, 0],
      [execTurn, 1],
    ]);

    const seen = ev.all.length;
    const fence = await crashAndRestart();
    expect(fence).toMatchObject({ approvalsInterrupted: 0, executionsInterrupted: 1, turnsAborted: 1 });
    expect(
      await ev.waitFor((e) => isPlanChanged(e) && e.action === "interrupted" && ev.all.indexOf(e) >= seen),
    ).toMatchObject({ execution: { executionId: approved.executionId, state: "interrupted" } });
    expect(await approvalRow(stack, p.proposalId)).toMatchObject({
      status: "approved",
      execution_id: approved.executionId,
      execution_state: "interrupted",
      error_code: "PLAN_EXECUTION_INTERRUPTED",
    });
    expect(await turnRow(execTurn)).toMatchObject({ status: "aborted", error_code: "HOST_RESTARTED" });
    expect(await alice.call("session.get", { sessionId: c.session.id })).toMatchObject({
      mode: "agent",
      permissionMode: "accept-edits",
      planningState: "inactive",
      activeTurnId: null,
    });
    expect(await auditRows(stack, c.session.id, "fence.%")).toEqual([
      { action: "fence.execution", code: "PLAN_EXECUTION_INTERRUPTED", turn_id: execTurn },
      { action: "fence.turn", code: "HOST_RESTARTED", turn_id: execTurn },
    ]);
    expect(await refusalCode(stack.agentClient.call("claim", { turnId: execTurn, workerId: "ghost" }))).toBe(
      "PLAN_EXECUTION_STALE",
    );

    // Release the model. The worker that still runs the old turn holds a token the new host never
    // issued: its next heartbeat or tool call is refused, it stops, and its turn.end is refused too.
    writeFileSync(gate, "open\n");
    await workerLogged(stack, ["turn.ended", "turn.end_failed"], execTurn);
    // Give a (wrongly) continuing run a moment to show itself in the call log or the workspace.
    await new Promise((r) => setTimeout(r, 750));
    expect(callsOf(stack, c.session.id)).toEqual(callsBefore);
    expect(existsSync(path.join(c.ws, "executed-c.txt"))).toBe(false);
    expect(await rows(stack, "SELECT tool FROM tool_calls WHERE turn_id = $1", [execTurn])).toEqual([]);
    expect(
      await rows(stack, "SELECT role FROM transcript_entries WHERE turn_id = $1 ORDER BY id", [execTurn]),
    ).toEqual([{ role: "user" }]);
    expect(await turnRow(execTurn)).toMatchObject({ status: "aborted", error_code: "HOST_RESTARTED" });

    // The user starts the next turn; that new turn does the work.
    const next = await alice.call("session.prompt", {
      sessionId: c.session.id,
      text: "go on",
    });
    expect(next.turnId).not.toBe(execTurn);
    expect(await turnEnded(ev, next.turnId)).toMatchObject({ status: "completed" });
    expect(
      callsOf(stack, c.session.id)
        .slice(callsBefore.length)
        .map((x) => x.turnId),
    ).toEqual([next.turnId, next.turnId]);
    expect(
      await rows(stack, "SELECT turn_id FROM tool_calls WHERE session_id = $1 AND tool = 'Write'", [
        c.session.id,
      ]),
    ).toEqual([{ turn_id: next.turnId }]);
    ev.stop();
  });
});
