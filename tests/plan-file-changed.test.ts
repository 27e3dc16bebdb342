// The plan file changed after approval and before the execution started (docs/architecture.md "Plans"):
// the claim re-hashes the artifact and refuses (PLAN_ARTIFACT_HASH_MISMATCH); the execution becomes
// `interrupted` with that code, its turn is aborted, the session stays Agent, and nothing runs: no
// model call for the execution turn, no file it would write, one `plan.execution.refuse` audit row.
// Changed before approval, the approve itself re-hashes and refuses with the same code, changing nothing.
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
  writeStep,
} from "./support/plans.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("planchanged", { host: true });

const CODE = "PLAN_ARTIFACT_HASH_MISMATCH";

function approve(p: ProposalView) {
  return stack.client("alice").call("plans.resolve", {
    proposalId: p.proposalId,
    sessionId: p.sessionId,
    turnId: p.turnId,
    toolCallId: p.toolCallId,
    action: "approve",
    targetPermissionMode: "accept-edits",
  });
}

/** Rows after a refused execution: interrupted with the code, turn aborted, Agent, one refusal audit. */
async function expectRefused(sessionId: string, proposalId: string, execTurn: string) {
  expect(await approvalRow(stack, proposalId)).toMatchObject({
    status: "approved",
    execution_state: "interrupted",
    error_code: CODE,
  });
  expect(await rows(stack, "SELECT status, error_code FROM turns WHERE id = $1", [execTurn])).toEqual([
    { status: "aborted", error_code: CODE },
  ]);
  expect(await stack.client("alice").call("session.get", { sessionId })).toMatchObject({
    mode: "agent",
    permissionMode: "accept-edits",
    planningState: "inactive",
    activeTurnId: null,
  });
  expect(await auditRows(stack, sessionId, "plan.execution.%")).toEqual([
    { action: "plan.execution.refuse", code: CODE, turn_id: execTurn },
  ]);
  expect(await rows(stack, "SELECT tool FROM tool_calls WHERE turn_id = $1", [execTurn])).toEqual([]);
  expect(await rows(stack, "SELECT role FROM transcript_entries WHERE turn_id = $1", [execTurn])).toEqual([
    { role: "user" },
  ]);
  // The refused execution cannot be claimed again.
  expect(await refusalCode(stack.agentClient.call("claim", { turnId: execTurn, workerId: "again" }))).toBe(
    "PLAN_EXECUTION_STALE",
  );
  const read = await stack.client("alice").call("artifacts.read", { proposalId });
  expect(read.matchesRecord).toBe(false);
}

describe("plan file changed between approval and execution", () => {
  it("a claim of the execution is refused with PLAN_ARTIFACT_HASH_MISMATCH (same size, other bytes)", async () => {
    const { session, ws } = await newPlanSession(stack, "direct", []);
    const events = stack.events(session.id);
    // The test is the worker: it submits the plan, and later claims the execution itself.
    const a = await promptAndClaim(stack, session.id);
    const submit = await stack.agentClient.call("tools.execute", {
      sessionId: session.id,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "exit-1",
      tool: "ExitPlanMode",
      args: { title: "Same size", markdown: "# Plan\n\n1. Touch nothing.\n", question: "Go?" },
      batch: [{ toolCallId: "exit-1", tool: "ExitPlanMode" }],
    });
    expect(submit).toMatchObject({ isError: false, terminate: true });
    const proposal = await submitted(events);
    const approved = await approve(proposal);
    const execTurn = (await approvalRow(stack, proposal.proposalId)).execution_turn_id!;

    const file = path.join(ws, proposal.artifactPath);
    const tampered = readFileSync(file, "utf8").replace("Touch nothing.", "Remove it all.");
    expect(Buffer.byteLength(tampered)).toBe(proposal.byteSize);
    writeFileSync(file, tampered);

    expect(
      await refusalCode(stack.agentClient.call("claim", { turnId: execTurn, workerId: "testworker" })),
    ).toBe(CODE);
    expect(await turnEnded(events, execTurn)).toMatchObject({ status: "aborted", code: CODE });
    await events.waitFor(
      (e) =>
        isPlanChanged(e) &&
        e.execution?.executionId === approved.executionId &&
        e.execution.state === "interrupted",
    );
    await expectRefused(session.id, proposal.proposalId, execTurn);
    events.stop();
  });

  it("with the worker held: approve, change the file, start the worker: nothing runs", async () => {
    const { session, ws } = await newPlanSession(stack, "worker", [
      exitPlanStep("Changed later"),
      writeStep("executed.txt"),
      { text: "done" },
    ]);
    await stack.startWorker();
    const events = stack.events(session.id);
    const { turnId: planTurn } = await stack
      .client("alice")
      .call("session.prompt", { sessionId: session.id, text: "plan" });
    const proposal = await submitted(events);
    await stack.worker!.stop();

    const approved = await approve(proposal);
    expect(approved).toMatchObject({ status: "approved", executionState: "queued" });
    const execTurn = (await approvalRow(stack, proposal.proposalId)).execution_turn_id!;
    appendFileSync(path.join(ws, proposal.artifactPath), "3. Also push to production.\n");

    // The worker says hello, is offered the queued execution, claims it and is refused.
    await stack.startWorker();
    expect(await turnEnded(events, execTurn, 30_000)).toMatchObject({ status: "aborted", code: CODE });
    const changed = await events.waitFor(
      isEvent(
        "plan.changed",
        (e) => e.execution?.executionId === approved.executionId && e.execution.state === "interrupted",
      ),
    );
    expect(changed).toMatchObject({ state: "inactive", proposal: { proposalId: proposal.proposalId } });
    // The event carries the ProposalView, nothing of the host (its workspace path, the principals).
    expect(Object.keys(changed.proposal!).sort()).toEqual(Object.keys(proposal).sort());
    // It never ran: no turn.started of it, no model call for it, no file it would have written.
    expect(events.all.filter(isEvent("turn.started", (e) => e.turnId === execTurn))).toEqual([]);
    expect(callsOf(stack, session.id).map((c) => c.turnId)).toEqual([planTurn]);
    expect(existsSync(path.join(ws, "executed.txt"))).toBe(false);
    await expectRefused(session.id, proposal.proposalId, execTurn);
    events.stop();
  });
});

describe("plan file changed before approval (issue #12 clause 6)", () => {
  it("approve re-hashes the file: PLAN_ARTIFACT_HASH_MISMATCH, nothing changes, reject still works", async () => {
    // The test is the worker here: the previous test's worker must not take the turn.
    await stack.worker?.stop();
    const { session, ws } = await newPlanSession(stack, "before", []);
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    await stack.agentClient.call("tools.execute", {
      sessionId: session.id,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "exit-1",
      tool: "ExitPlanMode",
      args: { title: "Edited", markdown: "# Plan\n\n1. Touch nothing.\n", question: "Go?" },
      batch: [{ toolCallId: "exit-1", tool: "ExitPlanMode" }],
    });
    const proposal = await submitted(events);
    const file = path.join(ws, proposal.artifactPath);
    const before = await approvalRow(stack, proposal.proposalId);
    writeFileSync(file, readFileSync(file, "utf8").replace("Touch nothing.", "Remove it all."));

    expect(await refusalCode(approve(proposal))).toBe(CODE);
    // Nothing changed: the row is pending at its version, no execution, the session still in Plan.
    expect(await approvalRow(stack, proposal.proposalId)).toMatchObject({
      status: "pending",
      version: before.version,
      execution_turn_id: null,
    });
    expect(await stack.client("alice").call("session.get", { sessionId: session.id })).toMatchObject({
      mode: "plan",
      planningState: "awaiting_approval",
    });
    expect(await auditRows(stack, session.id, "plan.approve")).toEqual([]);
    // A removed file is no better than a changed one.
    const content = readFileSync(file);
    rmSync(file);
    expect(await refusalCode(approve(proposal))).toBe(CODE);
    writeFileSync(file, content);
    // Rejecting does not depend on the file.
    const rejected = await stack.client("alice").call("plans.resolve", {
      proposalId: proposal.proposalId,
      sessionId: proposal.sessionId,
      turnId: proposal.turnId,
      toolCallId: proposal.toolCallId,
      action: "reject",
    });
    expect(rejected.status).toBe("rejected");
    events.stop();
  });
});
