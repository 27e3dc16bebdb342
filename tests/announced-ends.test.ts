// Every end is announced with its reason (issue #12 clause 5), written as the faults: a host
// SIGKILLed while a turn runs and a permission prompt waits (the fence at the next start publishes
// turn.ended HOST_RESTARTED and permission.resolved PERMISSION_INTERRUPTED); a host stopped with
// SIGTERM while a turn runs (turn.ended HOST_STOPPING before it exits); a real worker stopped with
// SIGTERM during an execution (turn.ended WORKER_STOPPED, the execution PLAN_EXECUTION_INTERRUPTED,
// never handed to another worker); and a failed turn's reason reaching turn.ended.
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionView } from "../services/protocol/schemas.ts";
import {
  approvalRow,
  approveProposal,
  exitPlanStep,
  newPlanSession,
  submitted,
  turnEnded,
} from "./support/plans.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim } from "./support/worker-double.ts";
import type { PermissionMode } from "../services/protocol/modes.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("ends", { host: true, extra: { PI_TURN_LEASE_MS: "600000" } });

const waitStep = (file: string) => ({ waitForFile: file, text: "never" });

async function agentSession(permissionMode: PermissionMode = "auto"): Promise<SessionView> {
  const ws = stack.newWorkspace(`e-${Math.random().toString(36).slice(2, 8)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "e", workspaceRoot: ws });
  return alice.call("session.create", { projectId: project.id, mode: "agent", permissionMode });
}

const turnRow = async (turnId: string) =>
  (await stack.db.pool.query("SELECT status, error_code FROM turns WHERE id = $1", [turnId])).rows[0];

describe("every end is announced with its reason", () => {
  it("the fence after a SIGKILL publishes turn.ended HOST_RESTARTED and the denied prompt", async () => {
    const session = await agentSession("ask");
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    // A Bash call waits for a person's permission when the host dies.
    void stack.agentClient
      .call("tools.execute", {
        sessionId: session.id,
        turnId: a.turnId,
        token: a.token,
        toolCallId: "b1",
        tool: "Bash",
        args: { command: "true" },
        batch: [{ toolCallId: "b1", tool: "Bash" }],
      })
      .catch(() => {});
    const asked = await events.waitFor(isEvent("permission.requested"));
    await stack.host!.kill();
    await stack.startHost();
    expect(await turnEnded(events, a.turnId)).toMatchObject({ status: "aborted", code: "HOST_RESTARTED" });
    expect(
      await events.waitFor(isEvent("permission.resolved", (e) => e.requestId === asked.requestId)),
    ).toMatchObject({ decision: "deny", code: "PERMISSION_INTERRUPTED", toolCallId: "b1" });
    events.stop();
  }, 60_000);

  it("a host stopped with SIGTERM ends its running turn HOST_STOPPING, announced before it exits", async () => {
    const session = await agentSession();
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    await stack.host!.stop();
    expect(await turnEnded(events, a.turnId)).toMatchObject({ status: "aborted", code: "HOST_STOPPING" });
    expect(await turnRow(a.turnId)).toEqual({ status: "aborted", error_code: "HOST_STOPPING" });
    const audit = await stack.db.pool.query(
      "SELECT action, code FROM audit_log WHERE turn_id = $1 AND action LIKE 'stop.%'",
      [a.turnId],
    );
    expect(audit.rows).toEqual([{ action: "stop.turn", code: "HOST_STOPPING" }]);
    // The next start finds nothing left to fence for it, and replays nothing.
    const host = await stack.startHost();
    expect(await host.waitForEvent("host.fence")).toMatchObject({ turnsAborted: 0 });
    events.stop();
  }, 60_000);

  it("a worker stopped with SIGTERM during an execution: WORKER_STOPPED, execution interrupted, no other worker runs it", async () => {
    const marker = path.join(stack.dir, `never-${Date.now()}`);
    const { session } = await newPlanSession(stack, `exec-${Date.now()}`, [
      exitPlanStep("Wait"),
      waitStep(marker),
    ]);
    const events = stack.events(session.id);
    const worker = await stack.startWorker();
    await stack.client("alice").call("session.prompt", { sessionId: session.id, text: "plan" });
    const proposal = await submitted(events);
    await approveProposal(stack, proposal, "auto");
    const execTurn = (await approvalRow(stack, proposal.proposalId)).execution_turn_id!;
    await events.waitFor(isEvent("turn.started", (e) => e.turnId === execTurn));
    await eventually(async () =>
      worker.lines.some((l) => l.includes('"turn.started"') && l.includes(execTurn)),
    );
    await worker.stop();
    expect(await turnEnded(events, execTurn)).toMatchObject({ status: "aborted", code: "WORKER_STOPPED" });
    expect(await approvalRow(stack, proposal.proposalId)).toMatchObject({
      execution_state: "interrupted",
      error_code: "PLAN_EXECUTION_INTERRUPTED",
    });
    // A second worker is not handed the turn.
    const second = await stack.startWorker();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(second.lines.join("\n")).not.toContain(execTurn);
    expect(await turnRow(execTurn)).toEqual({ status: "aborted", error_code: "WORKER_STOPPED" });
    await second.stop();
    events.stop();
  }, 90_000);

  it("a failed turn's reason reaches turn.ended", async () => {
    const session = await agentSession();
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    await stack.agentClient.call("turn.end", {
      turnId: a.turnId,
      token: a.token,
      status: "error",
      error: "provider refused: no API key for openai (OPENAI_API_KEY)",
    });
    expect(await turnEnded(events, a.turnId)).toMatchObject({
      status: "error",
      code: "TOOL_FAILED",
      reason: "provider refused: no API key for openai (OPENAI_API_KEY)",
    });
    events.stop();
  });
});
