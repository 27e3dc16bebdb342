// One integration test per plan-lifecycle rule (docs/architecture.md "Plans") over NATS against the real host,
// the test acting as the worker: the reply code, the rows, the files under .pi/plan/ and the audit.
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { hostPlanDir } from "./support/plans.ts";
import { addMembers, eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("rules", { extra: { PI_TURN_LEASE_MS: String(4 * 3600 * 1000) }, host: true });

const hook = (name: string, body: unknown = {}) => stack.hook(name, body);

async function planSession(approvers: string[] = []) {
  const ws = stack.newWorkspace(`r-${Math.random().toString(36).slice(2, 10)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "rules", workspaceRoot: ws });
  await addMembers(stack, project.id, approvers);
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode: "plan",
    approvers,
  });
  return { ws, session, alice, project };
}

let calls = 0;
function exitPlan(a: TurnAssignment, args: Record<string, unknown>) {
  const toolCallId = `exit-${++calls}`;
  return stack.agentClient.call("tools.execute", {
    sessionId: a.sessionId,
    turnId: a.turnId,
    token: a.token,
    toolCallId,
    tool: "ExitPlanMode",
    args,
    batch: [{ toolCallId, tool: "ExitPlanMode" }],
  });
}

const planFiles = (ws: string) =>
  existsSync(path.join(ws, ".pi/plan")) ? readdirSync(path.join(ws, ".pi/plan")) : [];
const rowsOf = async (sessionId: string) =>
  (
    await stack.db.pool.query("SELECT * FROM plan_approvals WHERE session_id = $1 ORDER BY created_at", [
      sessionId,
    ])
  ).rows;
const audit = async (sessionId: string, action: string) =>
  (
    await stack.db.pool.query(
      "SELECT action, code, principal FROM audit_log WHERE session_id = $1 AND action = $2 ORDER BY id",
      [sessionId, action],
    )
  ).rows;

describe("submission (ExitPlanMode)", () => {
  it("needs non-empty title, markdown and question: PLAN_INVALID_ARGUMENT, no row, no file", async () => {
    const { ws, session } = await planSession();
    const a = await promptAndClaim(stack, session.id);
    for (const args of [
      { title: "", markdown: "# m", question: "q" },
      { title: "t", markdown: "   ", question: "q" },
      { title: "t", markdown: "# m" },
      { title: "t", markdown: 42, question: "q" },
    ]) {
      expect((await exitPlan(a, args)).code).toBe("PLAN_INVALID_ARGUMENT");
    }
    expect(await rowsOf(session.id)).toEqual([]);
    expect(planFiles(ws)).toEqual([]);
  });

  it("refuses a plan over 512 KiB: PLAN_MARKDOWN_TOO_LARGE, no row, no file", async () => {
    const { ws, session } = await planSession();
    const a = await promptAndClaim(stack, session.id);
    expect(
      (await exitPlan(a, { title: "Big", markdown: "x".repeat(512 * 1024 + 1), question: "q" })).code,
    ).toBe("PLAN_MARKDOWN_TOO_LARGE");
    expect(await rowsOf(session.id)).toEqual([]);
    expect(planFiles(ws)).toEqual([]);
  });

  it("refuses a symlinked .pi/plan: PLAN_ARTIFACT_PATH_UNSAFE, nothing written anywhere", async () => {
    const { ws, session } = await planSession();
    const outside = stack.newWorkspace(`outside-${Math.random().toString(36).slice(2, 8)}`);
    mkdirSync(path.join(ws, ".pi"));
    symlinkSync(outside, path.join(ws, ".pi", "plan"));
    const a = await promptAndClaim(stack, session.id);
    expect((await exitPlan(a, { title: "Escape", markdown: "# m", question: "q" })).code).toBe(
      "PLAN_ARTIFACT_PATH_UNSAFE",
    );
    expect(readdirSync(outside)).toEqual([]);
    expect(await rowsOf(session.id)).toEqual([]);
  });

  it("bounds name collisions: PLAN_ARTIFACT_COLLISION_LIMIT, the existing files untouched", async () => {
    const { ws, session } = await planSession();
    const { now } = await hook("clock.set", { now: Date.parse("2026-12-01T10:00:00.000Z") });
    // The clock keeps running from the set time (a millisecond may pass before the reply).
    expect(now - Date.parse("2026-12-01T10:00:00.000Z")).toBeLessThan(500);
    hostPlanDir(ws);
    const base = "collide-20261201-100000Z";
    writeFileSync(path.join(ws, ".pi/plan", `${base}.md`), "taken");
    for (let n = 2; n <= 50; n++) writeFileSync(path.join(ws, ".pi/plan", `${base}-${n}.md`), "taken");
    const a = await promptAndClaim(stack, session.id);
    // The clock may tick past the second while the turn starts: pin it again right before.
    await hook("clock.set", { now: Date.parse("2026-12-01T10:00:00.000Z") });
    expect((await exitPlan(a, { title: "Collide", markdown: "# m", question: "q" })).code).toBe(
      "PLAN_ARTIFACT_COLLISION_LIMIT",
    );
    expect(planFiles(ws)).toHaveLength(50);
    expect(await rowsOf(session.id)).toEqual([]);
  });

  it("ExitPlanMode outside Plan is PLAN_NOT_ACTIVE; EnterPlanMode inside Plan is PLAN_ALREADY_ACTIVE", async () => {
    const ws = stack.newWorkspace(`r-agent-${Math.random().toString(36).slice(2, 8)}`);
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", { name: "agent", workspaceRoot: ws });
    const agentSession = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
    });
    const a = await promptAndClaim(stack, agentSession.id);
    expect((await exitPlan(a, { title: "t", markdown: "# m", question: "q" })).code).toBe("PLAN_NOT_ACTIVE");
    expect(planFiles(ws)).toEqual([]);
    const { session } = await planSession();
    const b = await promptAndClaim(stack, session.id);
    const enter = await stack.agentClient.call("tools.execute", {
      sessionId: b.sessionId,
      turnId: b.turnId,
      token: b.token,
      toolCallId: "enter-1",
      tool: "EnterPlanMode",
      args: {},
      batch: [{ toolCallId: "enter-1", tool: "EnterPlanMode" }],
    });
    expect(enter.code).toBe("PLAN_ALREADY_ACTIVE");
  });

  it("a failed write is PLAN_ARTIFACT_WRITE_FAILED with no file and no row; a failed row removes the file", async () => {
    const { ws, session } = await planSession();
    const a = await promptAndClaim(stack, session.id);
    await hook("faults.fail", { step: "artifactWrite" });
    expect((await exitPlan(a, { title: "Disk", markdown: "# m", question: "q" })).code).toBe(
      "PLAN_ARTIFACT_WRITE_FAILED",
    );
    expect(planFiles(ws)).toEqual([]);
    expect(await rowsOf(session.id)).toEqual([]);
    await hook("faults.fail", { step: "planRow" });
    expect(await refusalCode(exitPlan(a, { title: "Row", markdown: "# m", question: "q" }))).toBe("INTERNAL");
    expect(planFiles(ws)).toEqual([]);
    expect(await rowsOf(session.id)).toEqual([]);
    // Nothing stuck: the same live turn submits fine afterwards.
    expect((await exitPlan(a, { title: "Fine", markdown: "# m", question: "q" })).isError).toBe(false);
    expect(planFiles(ws)).toHaveLength(1);
  });

  it("one pending plan per session: PLAN_ALREADY_PENDING", async () => {
    const { ws, session } = await planSession();
    const a = await promptAndClaim(stack, session.id);
    // A pending row of another turn of this session, as a crash of an earlier host could not leave
    // (the fence interrupts those) but a concurrent submission could race to: the guard holds.
    const other = await stack.db.pool.query(
      "INSERT INTO turns (id, session_id, kind, status, created_at, ended_at) VALUES ('turn_other', $1, 'prompt', 'completed', now(), now()) RETURNING id",
      [session.id],
    );
    await stack.db.pool.query(
      `INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown, artifact_path,
         artifact_sha256, artifact_size, status, created_at, deadline)
       VALUES ('plan_other', 'req_other', $1, $2, 'c0', 't', 'q', 'm', '.pi/plan/other.md', 'x', 1, 'pending', now(), now() + interval '1 hour')`,
      [session.id, other.rows[0].id],
    );
    expect((await exitPlan(a, { title: "Second", markdown: "# m", question: "q" })).code).toBe(
      "PLAN_ALREADY_PENDING",
    );
    expect(planFiles(ws)).toEqual([]);
    expect((await rowsOf(session.id)).map((r) => r.id)).toEqual(["plan_other"]);
  });

  it("needs a workspace: PLAN_WORKSPACE_REQUIRED", async () => {
    const { session, project } = await planSession();
    const a = await promptAndClaim(stack, session.id);
    await stack.db.pool.query("UPDATE projects SET workspace_root = '' WHERE id = $1", [project.id]);
    expect((await exitPlan(a, { title: "No ws", markdown: "# m", question: "q" })).code).toBe(
      "PLAN_WORKSPACE_REQUIRED",
    );
    expect(await rowsOf(session.id)).toEqual([]);
  });

  it("records a submission: exact file, row fields, deadline 30 minutes after creation, audit and plan.changed", async () => {
    const { ws, session, alice } = await planSession();
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    const r = await exitPlan(a, { title: "Good plan", markdown: "# good\r\n", question: "Proceed?" });
    expect(r).toMatchObject({ isError: false, terminate: true });
    const [row] = await rowsOf(session.id);
    expect(row).toMatchObject({
      status: "pending",
      title: "Good plan",
      question: "Proceed?",
      markdown: "# good\r\n",
      turn_id: a.turnId,
      version: 0,
    });
    expect(row.deadline.getTime() - row.created_at.getTime()).toBe(30 * 60 * 1000);
    expect(planFiles(ws)).toEqual([path.basename(row.artifact_path)]);
    expect(await audit(session.id, "plan.submit")).toHaveLength(1);
    await events.waitFor(isEvent("plan.changed", (e) => e.action === "submitted"));
    const got = await alice.call("plans.get", { proposalId: row.id });
    expect(got).toMatchObject({ proposalId: row.id, status: "pending", sha256: row.artifact_sha256 });
    events.stop();
  });
});

describe("deadline, approvers, execution", () => {
  it("expires at the deadline on the test clock; a late approve changes neither mode nor permission mode", async () => {
    const { session, alice } = await planSession();
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    await exitPlan(a, { title: "Slow", markdown: "# slow\n", question: "q" });
    const [row] = await rowsOf(session.id);
    await hook("clock.advance", { ms: 29 * 60 * 1000 });
    expect((await alice.call("plans.pending", { sessionId: session.id })).proposals).toHaveLength(1);
    await hook("clock.advance", { ms: 60 * 1000 + 1 });
    const expired = await events.waitFor(isEvent("plan.changed", (e) => e.action === "expired"));
    expect(expired.proposal?.status).toBe("expired");
    const after = (await rowsOf(session.id))[0];
    expect(after).toMatchObject({ status: "expired", error_code: "PLAN_APPROVAL_TIMEOUT" });
    expect(
      (await stack.db.pool.query("SELECT status, error_code FROM turns WHERE id = $1", [a.turnId])).rows[0],
    ).toEqual({
      status: "aborted",
      error_code: "PLAN_APPROVAL_TIMEOUT",
    });
    const late = alice.call("plans.resolve", {
      proposalId: row.id,
      sessionId: session.id,
      turnId: row.turn_id,
      toolCallId: row.tool_call_id,
      action: "approve",
      targetPermissionMode: "auto",
    });
    expect(await refusalCode(late)).toBe("PLAN_APPROVAL_TIMEOUT");
    const s = (
      await stack.db.pool.query("SELECT mode, permission_mode FROM sessions WHERE id = $1", [session.id])
    ).rows[0];
    expect(s).toEqual({ mode: "plan", permission_mode: "inherit" });
    expect(await audit(session.id, "plan.expire")).toHaveLength(1);
    events.stop();
  });

  it("approvers named by session.configure may resolve; everyone else is refused", async () => {
    const { session, alice, project } = await planSession();
    await addMembers(stack, project.id, ["carol"]);
    expect(
      (await alice.call("session.configure", { sessionId: session.id, approvers: ["carol"] })).approvers,
    ).toEqual(["carol"]);
    const a = await promptAndClaim(stack, session.id);
    await exitPlan(a, { title: "Review", markdown: "# r\n", question: "q" });
    const [row] = await rowsOf(session.id);
    const body = {
      proposalId: row.id,
      sessionId: session.id,
      turnId: row.turn_id,
      toolCallId: row.tool_call_id,
      action: "reject",
    };
    expect(await refusalCode(stack.client("mallory").call("plans.resolve", body))).toBe("FORBIDDEN");
    expect(await refusalCode(stack.client("mallory").call("plans.pending", { sessionId: session.id }))).toBe(
      "FORBIDDEN",
    );
    expect((await stack.client("carol").call("plans.resolve", body)).status).toBe("rejected");
    expect(await audit(session.id, "plan.reject")).toEqual([
      { action: "plan.reject", code: null, principal: "carol" },
    ]);
  });

  it("selecting Agent while idle in Plan is an explicit override that makes no plan", async () => {
    const { session, alice } = await planSession();
    const v = await alice.call("session.configure", { sessionId: session.id, mode: "agent" });
    expect(v).toMatchObject({ mode: "agent", planningState: "inactive" });
    expect(await rowsOf(session.id)).toEqual([]);
    expect(await audit(session.id, "session.configure")).toHaveLength(1);
  });

  it("an execution already claimed or ended cannot be claimed again: PLAN_EXECUTION_STALE", async () => {
    const { session, alice } = await planSession();
    const a = await promptAndClaim(stack, session.id);
    await exitPlan(a, { title: "Run", markdown: "# run\n", question: "q" });
    const [row] = await rowsOf(session.id);
    await alice.call("plans.resolve", {
      proposalId: row.id,
      sessionId: session.id,
      turnId: row.turn_id,
      toolCallId: row.tool_call_id,
      action: "approve",
      targetPermissionMode: "ask",
    });
    const execTurn = (await rowsOf(session.id))[0].execution_turn_id;
    const exec = await eventually(() =>
      stack.agentClient.call("claim", { turnId: execTurn, workerId: "w1" }).catch(() => null),
    );
    expect(exec.kind).toBe("execution");
    expect((await rowsOf(session.id))[0].execution_state).toBe("running");
    expect(await refusalCode(stack.agentClient.call("claim", { turnId: execTurn, workerId: "w2" }))).toBe(
      "PLAN_EXECUTION_STALE",
    );
    await stack.agentClient.call("turn.end", { turnId: execTurn, token: exec.token, status: "completed" });
    expect((await rowsOf(session.id))[0].execution_state).toBe("completed");
    expect(await refusalCode(stack.agentClient.call("claim", { turnId: execTurn, workerId: "w2" }))).toBe(
      "PLAN_EXECUTION_STALE",
    );
  });

  it("reports plan files no row names at start, and never uses them", async () => {
    const { ws } = await planSession();
    hostPlanDir(ws);
    writeFileSync(path.join(ws, ".pi/plan", "left-by-a-crash-20261201-000000Z.md"), "# orphan\n");
    await stack.host!.stop();
    const host = await stack.startHost();
    const report = await host.waitForEvent("host.orphan_artifacts");
    expect(JSON.stringify(report.orphans)).toContain("left-by-a-crash-20261201-000000Z.md");
    expect(
      (
        await stack.db.pool.query(
          "SELECT count(*)::int AS n FROM plan_approvals WHERE artifact_path LIKE '%left-by-a-crash%'",
        )
      ).rows[0].n,
    ).toBe(0);
  });
});
