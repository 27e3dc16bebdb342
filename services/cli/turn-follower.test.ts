import { describe, expect, it } from "vitest";
import type { SessionEvent } from "../protocol/events.ts";
import { ev, proposalView } from "./test-events.ts";
import {
  doneFromProposal,
  type FollowDone,
  type FollowTarget,
  followEvent,
  startFollow,
} from "./turn-follower.ts";

/** Feeds events until done; returns which were shown and how it ended. */
function play(target: FollowTarget, events: SessionEvent[]) {
  let state = startFollow(target);
  const shown: string[] = [];
  for (const e of events) {
    const step = followEvent(state, e);
    state = step.state;
    if (step.show) shown.push(e.type);
    if (step.done) return { shown, done: step.done as FollowDone | null };
  }
  return { shown, done: null as FollowDone | null };
}

const call = (turnId: string) => ev("tool.called", { turnId, toolCallId: "c", tool: "Read", args: {} });

describe("following a prompt turn", () => {
  const target: FollowTarget = { kind: "turn", turnId: "t1" };

  it("ends with the turn, exit 0 when completed", () => {
    const r = play(target, [
      ev("turn.started", { turnId: "t1", kind: "prompt" }),
      call("t1"),
      ev("message", { turnId: "t1", role: "assistant", text: "done" }),
      ev("turn.ended", { turnId: "t1", status: "completed" }),
    ]);
    expect(r.shown).toEqual(["turn.started", "tool.called", "message", "turn.ended"]);
    expect(r.done).toEqual({ exitCode: 0, reason: "turn-ended" });
  });

  it.each([
    ["aborted", 4],
    ["error", 1],
  ] as const)("when the turn ends %s the exit code is %i (interrupted, failed)", (status, code) => {
    expect(play(target, [ev("turn.ended", { turnId: "t1", status })]).done?.exitCode).toBe(code);
  });

  it("ignores other turns", () => {
    const r = play(target, [call("t0"), ev("turn.ended", { turnId: "t0", status: "completed" })]);
    expect(r).toEqual({ shown: [], done: null });
  });

  it("stops when its plan awaits approval, with the proposal", () => {
    const proposal = proposalView();
    const r = play(target, [
      ev("turn.started", { turnId: "t1", kind: "prompt" }),
      ev("plan.changed", { state: "awaiting_approval", action: "submitted", proposal }),
      ev("turn.ended", { turnId: "t1", status: "completed" }),
    ]);
    expect(r.done).toEqual({ exitCode: 0, reason: "awaiting-approval", proposal });
    expect(r.shown).toEqual(["turn.started", "plan.changed"]);
  });

  it("does not stop on another turn's proposal", () => {
    const r = play(target, [
      ev("plan.changed", {
        state: "awaiting_approval",
        action: "submitted",
        proposal: proposalView({ turnId: "t0" }),
      }),
    ]);
    expect(r).toEqual({ shown: [], done: null });
  });
});

describe("following an approved plan's execution", () => {
  const target: FollowTarget = { kind: "execution", proposalId: "p1", turnId: null };
  const approved = ev("plan.changed", {
    state: "inactive",
    action: "approved",
    proposal: proposalView({ status: "approved", executionId: "x1", executionState: "queued" }),
    execution: { executionId: "x1", state: "queued" },
  });

  it("skips the planning turn's end and follows the execution turn to its end", () => {
    const r = play(target, [
      ev("turn.ended", { turnId: "t1", status: "completed" }),
      approved,
      ev("turn.started", { turnId: "t2", kind: "execution" }),
      call("t2"),
      ev("turn.ended", { turnId: "t2", status: "completed" }),
      ev("plan.changed", { state: "inactive", execution: { executionId: "x1", state: "completed" } }),
    ]);
    // The approval is not shown again: the resolve reply reported it.
    expect(r.shown).toEqual(["turn.started", "tool.called", "turn.ended"]);
    expect(r.done).toEqual({ exitCode: 0, reason: "turn-ended" });
  });

  it("waits for the execution turn's end when completion is announced first", () => {
    const r = play(target, [
      ev("turn.started", { turnId: "t2", kind: "execution" }),
      ev("plan.changed", { state: "inactive", execution: { executionId: "x1", state: "completed" } }),
      ev("message", { turnId: "t2", role: "assistant", text: "bye" }),
      ev("turn.ended", { turnId: "t2", status: "completed" }),
    ]);
    expect(r.shown).toEqual(["turn.started", "plan.changed", "message", "turn.ended"]);
    expect(r.done?.reason).toBe("turn-ended");
  });

  it("stops with exit 4 when the execution is interrupted before it starts", () => {
    const r = play(target, [
      approved,
      ev("plan.changed", {
        state: "inactive",
        proposal: proposalView({ executionState: "interrupted", errorCode: "PLAN_ARTIFACT_HASH_MISMATCH" }),
        execution: { executionId: "x1", state: "interrupted" },
      }),
    ]);
    expect(r.done).toEqual({ exitCode: 4, reason: "execution-interrupted" });
  });

  it("stops on completion when the execution turn was never seen", () => {
    const r = play(target, [
      ev("plan.changed", { state: "inactive", execution: { executionId: "x1", state: "completed" } }),
    ]);
    expect(r.done).toEqual({ exitCode: 0, reason: "execution-completed" });
  });

  it("exits 4 when the execution turn is aborted", () => {
    const r = play(target, [
      ev("turn.started", { turnId: "t2", kind: "execution" }),
      ev("turn.ended", { turnId: "t2", status: "aborted", code: "PLAN_EXECUTION_INTERRUPTED" }),
    ]);
    expect(r.done).toEqual({ exitCode: 4, reason: "turn-ended" });
  });

  it("ignores other proposals and prompt turns", () => {
    const r = play(target, [
      ev("turn.started", { turnId: "t3", kind: "prompt" }),
      ev("plan.changed", {
        state: "inactive",
        proposal: proposalView({ proposalId: "p9", executionState: "completed" }),
      }),
    ]);
    expect(r).toEqual({ shown: [], done: null });
  });
});

describe("doneFromProposal", () => {
  it("ends at once for a finished execution, otherwise follows", () => {
    expect(doneFromProposal({ executionState: "completed" })).toEqual({
      exitCode: 0,
      reason: "execution-completed",
    });
    expect(doneFromProposal({ executionState: "interrupted" })?.exitCode).toBe(4);
    expect(doneFromProposal({ executionState: "queued" })).toBeNull();
    expect(doneFromProposal({ executionState: null })).toBeNull();
  });
});
