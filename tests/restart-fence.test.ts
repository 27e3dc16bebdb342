// Restart fence (docs/protocol.md "Startup fence"): SIGKILL the host while an approval is pending and start it again.
// Before it serves anything the row is interrupted, the turn aborted, the session still Plan; the
// old identity is stale, and the scripted model is never called again for the fenced work.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AppError } from "../services/protocol/app-error.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("fence", { host: true, worker: true });

describe("startup fence", () => {
  it("marks pending work interrupted before serving, refuses the old identity and replays nothing", async () => {
    const ws = stack.newWorkspace("fence");
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", { name: "fence", workspaceRoot: ws });
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "plan",
      model: {
        provider: "scripted",
        model: "script",
        script: [
          { toolCalls: [{ name: "Glob", args: { pattern: "**/*" } }] },
          {
            toolCalls: [
              { name: "ExitPlanMode", args: { title: "Fenced", markdown: "# fenced\n", question: "Go?" } },
            ],
          },
          { text: "after restart" },
        ],
      },
    });
    const events = stack.events(session.id);
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "plan",
    });
    const awaiting = await events.waitFor(isEvent("plan.changed", (e) => e.state === "awaiting_approval"));
    const proposal = awaiting.proposal!;
    const callsBefore = stack.callLog().filter((c) => c.sessionId === session.id).length;
    expect(callsBefore).toBe(2);
    const fileBefore = readFileSync(path.join(ws, proposal.artifactPath));
    // The submission's tool result is recorded just after its event: kill once it is (else the
    // fence records that call's outcome as unknown, a different test).
    await eventually(
      async () =>
        (
          await stack.db.pool.query("SELECT 1 FROM tool_calls WHERE turn_id = $1 AND tool = 'ExitPlanMode'", [
            turnId,
          ])
        ).rowCount,
    );

    await stack.host!.kill();
    const restarted = stack.startHost();
    const host = await restarted;
    // The fence ran and was logged before the host subscribed (host.ready comes after it).
    const lines = host.lines.map((l) => JSON.parse(l)?.event);
    expect(lines.indexOf("host.fence")).toBeGreaterThanOrEqual(0);
    expect(lines.indexOf("host.fence")).toBeLessThan(lines.indexOf("host.ready"));
    const fence = await host.waitForEvent("host.fence");
    expect(fence).toMatchObject({ approvalsInterrupted: 1, turnsAborted: 1, incarnation: 2 });

    // Owners and approvers hear about fenced work on the bus, with the interrupted row.
    const fenced = await events.waitFor(isEvent("plan.changed", (e) => e.action === "interrupted"));
    expect(fenced.proposal).toMatchObject({
      proposalId: proposal.proposalId,
      status: "interrupted",
      errorCode: "PLAN_APPROVAL_INTERRUPTED",
    });
    const row = (
      await stack.db.pool.query("SELECT status, error_code FROM plan_approvals WHERE id = $1", [
        proposal.proposalId,
      ])
    ).rows[0];
    expect(row).toEqual({ status: "interrupted", error_code: "PLAN_APPROVAL_INTERRUPTED" });
    const turn = (await stack.db.pool.query("SELECT status FROM turns WHERE id = $1", [turnId])).rows[0];
    expect(turn.status).toBe("aborted");
    const s = (await stack.db.pool.query("SELECT mode FROM sessions WHERE id = $1", [session.id])).rows[0];
    expect(s.mode).toBe("plan");
    const audit = await stack.db.pool.query(
      `SELECT action, code, principal, turn_id, details FROM audit_log
        WHERE session_id = $1 AND action LIKE 'fence.%' ORDER BY id`,
      [session.id],
    );
    const by = expect.stringMatching(/^host:/);
    expect(audit.rows).toEqual([
      {
        action: "fence.approval",
        code: "PLAN_APPROVAL_INTERRUPTED",
        principal: by,
        turn_id: proposal.turnId,
        details: { proposalId: proposal.proposalId, incarnation: 2 },
      },
      {
        action: "fence.turn",
        code: "HOST_RESTARTED",
        principal: by,
        turn_id: turnId,
        details: { turn: turnId, incarnation: 2 },
      },
    ]);

    // The resolve sent with the old identity is stale; nothing changes.
    const err = await alice
      .call("plans.resolve", {
        proposalId: proposal.proposalId,
        sessionId: session.id,
        turnId: proposal.turnId,
        toolCallId: proposal.toolCallId,
        action: "approve",
        targetPermissionMode: "auto",
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("PLAN_APPROVAL_STALE");
    const after = (
      await stack.db.pool.query(
        "SELECT s.mode, s.permission_mode, a.status, a.execution_id FROM sessions s JOIN plan_approvals a ON a.session_id = s.id WHERE a.id = $1",
        [proposal.proposalId],
      )
    ).rows[0];
    expect(after).toEqual({
      mode: "plan",
      permission_mode: "inherit",
      status: "interrupted",
      execution_id: null,
    });
    expect(await alice.call("plans.pending", { sessionId: session.id })).toEqual({
      proposals: [],
      next: null,
    });

    // Nothing was replayed: no model call, the plan file untouched.
    await new Promise((r) => setTimeout(r, 1500));
    expect(stack.callLog().filter((c) => c.sessionId === session.id)).toHaveLength(callsBefore);
    expect(readFileSync(path.join(ws, proposal.artifactPath)).equals(fileBefore)).toBe(true);

    // The user starts over with a new turn.
    const next = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "again",
    });
    expect(next.turnId).not.toBe(turnId);
    await events.waitFor(isEvent("turn.ended", (e) => e.turnId === next.turnId));
    expect(stack.callLog().filter((c) => c.sessionId === session.id)).toHaveLength(callsBefore + 1);
    events.stop();
  });
});
