// End to end over NATS with the host and agent worker as child processes: a Plan session submits a
// plan (exact bytes on disk, hash and size on the row), is approved in one transaction while no
// worker can claim the execution, and the execution turn then writes a file. Reject leaves Plan.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionView } from "../services/protocol/schemas.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import type { ParamsOf } from "../services/protocol/methods.ts";
import { isEvent } from "./support/events.ts";

/** One scripted-model step of a session (the `scripted` provider of the tests). */
type ScriptStep = NonNullable<NonNullable<ParamsOf<"session.create">["model"]>["script"]>[number];

const stack = useStack("e2e", { host: true, worker: true });

const isAwaiting = isEvent("plan.changed", (e) => e.state === "awaiting_approval");

async function newPlanSession(ws: string, script: ScriptStep[]): Promise<SessionView> {
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", {
    name: path.basename(ws),
    workspaceRoot: ws,
  });
  return alice.call("session.create", {
    projectId: project.id,
    mode: "plan",
    model: { provider: "scripted", model: "script", script },
  });
}

describe("plan -> approve -> execute", () => {
  it("writes the exact plan bytes, approves atomically while the worker is held, then executes", async () => {
    const ws = stack.newWorkspace("approve");
    writeFileSync(path.join(ws, "README.md"), "# demo workspace\n");
    const markdown = "# Plan: grüße\r\n\r\n1. Write greeting.txt — “hello”\r\n2. Done ✓\n";
    const session = await newPlanSession(ws, [
      { toolCalls: [{ name: "Read", args: { path: "README.md" } }] },
      {
        toolCalls: [
          { name: "ExitPlanMode", args: { title: "Write a greeting", markdown, question: "Proceed?" } },
        ],
      },
      { toolCalls: [{ name: "Write", args: { path: "greeting.txt", content: "hello\n" } }] },
      { text: "Done." },
    ]);
    const alice = stack.client("alice");
    const events = stack.events(session.id);
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "Plan a greeting",
    });

    const awaiting = await events.waitFor(isAwaiting);
    const proposal = awaiting.proposal!;
    expect(proposal.turnId).toBe(turnId);
    const readResult = events.all.find(isEvent("tool.result", (e) => e.tool === "Read"));
    expect(readResult).toMatchObject({ decision: "allow", isError: false });

    // The file holds exactly the submitted bytes; the row records its sha256 and size.
    expect(proposal.artifactPath).toMatch(/^\.pi\/plan\/write-a-greeting-\d{8}-\d{6}Z\.md$/);
    const bytes = readFileSync(path.join(ws, proposal.artifactPath));
    expect(bytes.equals(Buffer.from(markdown, "utf8"))).toBe(true);
    const row = (
      await stack.db.pool.query("SELECT * FROM plan_approvals WHERE id = $1", [proposal.proposalId])
    ).rows[0];
    expect(row.status).toBe("pending");
    expect(row.artifact_sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(row.artifact_size).toBe(bytes.byteLength);
    expect(row.markdown).toBe(markdown);

    // The planning turn was offered Plan tools only.
    const calls = stack.callLog().filter((c) => c.sessionId === session.id);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.tools).toEqual(expect.arrayContaining(["Read", "ExitPlanMode"]));
    expect(calls[0]!.tools).not.toContain("Write");

    // Hold the worker so the execution stays queued, then approve.
    await stack.worker!.stop();
    const approved = await alice.call("plans.resolve", {
      proposalId: proposal.proposalId,
      sessionId: session.id,
      turnId: proposal.turnId,
      toolCallId: proposal.toolCallId,
      action: "approve",
      targetPermissionMode: "accept-edits",
    });
    expect(approved).toMatchObject({
      status: "approved",
      executionState: "queued",
      targetPermissionMode: "accept-edits",
    });
    const a = (
      await stack.db.pool.query(
        "SELECT xmin::text AS x, status, execution_state FROM plan_approvals WHERE id = $1",
        [proposal.proposalId],
      )
    ).rows[0];
    const s = (
      await stack.db.pool.query("SELECT xmin::text AS x, mode, permission_mode FROM sessions WHERE id = $1", [
        session.id,
      ])
    ).rows[0];
    expect(a).toMatchObject({ status: "approved", execution_state: "queued" });
    expect(s).toMatchObject({ mode: "agent", permission_mode: "accept-edits" });
    expect(a.x).toBe(s.x);
    const planningTurn = (await stack.db.pool.query("SELECT status FROM turns WHERE id = $1", [turnId]))
      .rows[0];
    expect(planningTurn.status).toBe("completed");

    // A worker comes back, claims the execution and writes the file.
    await stack.startWorker();
    const executionTurnId = approved.executionId
      ? (
          await stack.db.pool.query("SELECT execution_turn_id FROM plan_approvals WHERE id = $1", [
            proposal.proposalId,
          ])
        ).rows[0].execution_turn_id
      : null;
    await events.waitFor(
      isEvent("turn.ended", (e) => e.turnId === executionTurnId),
      30_000,
    );
    expect(readFileSync(path.join(ws, "greeting.txt"), "utf8")).toBe("hello\n");
    const done = (
      await stack.db.pool.query("SELECT status, execution_state FROM plan_approvals WHERE id = $1", [
        proposal.proposalId,
      ])
    ).rows[0];
    expect(done).toEqual({ status: "approved", execution_state: "completed" });
    const execTurn = (
      await stack.db.pool.query("SELECT status, kind FROM turns WHERE id = $1", [executionTurnId])
    ).rows[0];
    expect(execTurn).toEqual({ status: "completed", kind: "execution" });
    // The execution turn was offered Agent tools and saw the artifact.
    const execCalls = stack.callLog().filter((c) => c.turnId === executionTurnId);
    expect(execCalls[0]!.tools).toEqual(expect.arrayContaining(["Write", "Edit"]));
    const transcript = await stack.db.pool.query(
      "SELECT message FROM transcript_entries WHERE turn_id = $1 AND role = 'user'",
      [executionTurnId],
    );
    expect(JSON.stringify(transcript.rows[0].message)).toContain(proposal.artifactPath);
    events.stop();
  });

  it("reject leaves Plan; a second plan goes to a new file and the first is unchanged", async () => {
    const ws = stack.newWorkspace("reject");
    const session = await newPlanSession(ws, [
      {
        toolCalls: [
          { name: "ExitPlanMode", args: { title: "First idea", markdown: "# first\n", question: "OK?" } },
        ],
      },
      {
        toolCalls: [
          {
            name: "ExitPlanMode",
            args: { title: "Second idea", markdown: "# second\n", question: "OK now?" },
          },
        ],
      },
    ]);
    const alice = stack.client("alice");
    const events = stack.events(session.id);
    await alice.call("session.prompt", { sessionId: session.id, text: "plan" });
    const first = (await events.waitFor(isAwaiting)).proposal!;
    const rejected = await alice.call("plans.resolve", {
      proposalId: first.proposalId,
      sessionId: session.id,
      turnId: first.turnId,
      toolCallId: first.toolCallId,
      action: "reject",
    });
    expect(rejected.status).toBe("rejected");
    const view = await alice.call("session.get", { sessionId: session.id });
    expect(view).toMatchObject({ mode: "plan", planningState: "planning", activeTurnId: null });
    const firstBytes = readFileSync(path.join(ws, first.artifactPath));

    await alice.call("session.prompt", { sessionId: session.id, text: "plan again" });
    const second = (
      await events.waitFor(
        isEvent("plan.changed", (e) => isAwaiting(e) && e.proposal?.proposalId !== first.proposalId),
      )
    ).proposal!;
    expect(second.artifactPath).not.toBe(first.artifactPath);
    expect(readFileSync(path.join(ws, second.artifactPath), "utf8")).toBe("# second\n");
    expect(readFileSync(path.join(ws, first.artifactPath)).equals(firstBytes)).toBe(true);
    expect(existsSync(path.join(ws, first.artifactPath))).toBe(true);
    const rows = await stack.db.pool.query(
      "SELECT id, status FROM plan_approvals WHERE session_id = $1 ORDER BY created_at",
      [session.id],
    );
    expect(rows.rows.map((r) => r.status)).toEqual(["rejected", "pending"]);
    await eventually(
      async () =>
        (await alice.call("session.get", { sessionId: session.id })).planningState === "awaiting_approval",
    );
    events.stop();
  });
});
