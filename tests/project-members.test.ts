// Projects have owners and members (issue #11 clause 5; docs/security.md "Projects have owners and
// members") over NATS against the real host, the test acting as the worker and as three people:
// alice owns the project, bob is added as a member, carol is an outsider. Written as the attacks:
// carol's reads and changes of alice's project are FORBIDDEN and change nothing; a non-member cannot
// be named approver; a removed approver loses his rights at once (plans, artifacts, permission
// prompts, the session itself); the owner cannot be removed. And the migration gives existing
// projects their members.
import { describe, expect, it } from "vitest";
import { migrateUp } from "../services/host/store/migrate.ts";
import type { ProjectView, ToolExecuteResult, TurnAssignment } from "../services/protocol/schemas.ts";
import { readArtifact } from "./support/artifacts.ts";
import { useFreshDatabases, T0, T1 } from "./support/migrations.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, promptAndClaim, refusalCode } from "./support/worker-double.ts";

const stack = useStack("members", { extra: { PI_TURN_LEASE_MS: "600000" }, host: true });
const freshDb = useFreshDatabases();

const alice = () => stack.client("alice");
const bob = () => stack.client("bob");
const carol = () => stack.client("carol");

async function aliceProject(): Promise<ProjectView> {
  const ws = stack.newWorkspace(`m-${Math.random().toString(36).slice(2, 8)}`);
  return alice().call("projects.create", { name: "m", workspaceRoot: ws });
}

const members = (principal: string, projectId: string) =>
  stack.client(principal).call("projects.members.list", { projectId });
const add = (principal: string, projectId: string, who: string) =>
  stack.client(principal).call("projects.members.add", { projectId, principal: who });
const remove = (principal: string, projectId: string, who: string) =>
  stack.client(principal).call("projects.members.remove", { projectId, principal: who });

async function dbRows(sql: string, params: unknown[] = []) {
  return (await stack.db.pool.query(sql, params)).rows;
}
const memberRows = (projectId: string) =>
  dbRows("SELECT principal, added_by FROM project_members WHERE project_id = $1 ORDER BY principal", [
    projectId,
  ]);
const memberAudit = (projectId: string) =>
  dbRows(
    `SELECT principal, action, details FROM audit_log
      WHERE details->>'projectId' = $1 AND action LIKE 'project.members.%' ORDER BY id`,
    [projectId],
  );

function submitPlan(a: TurnAssignment): Promise<ToolExecuteResult> {
  return executeTool(stack, a, "exit-1", "ExitPlanMode", { title: "P", markdown: "# P\n", question: "ok?" });
}

describe("projects have owners and members", () => {
  it("an outsider's get, session.create and member changes on alice's project are FORBIDDEN and change nothing", async () => {
    const p = await aliceProject();
    expect(await members("alice", p.id)).toMatchObject({
      projectId: p.id,
      owner: "alice",
      members: [{ principal: "alice", addedBy: "alice" }],
    });
    const sessionsBefore = await dbRows("SELECT id FROM sessions WHERE project_id = $1", [p.id]);

    expect(await refusalCode(carol().call("projects.get", { projectId: p.id }))).toBe("FORBIDDEN");
    expect(await refusalCode(members("carol", p.id))).toBe("FORBIDDEN");
    expect(await refusalCode(carol().call("session.create", { projectId: p.id }))).toBe("FORBIDDEN");
    // carol tries to make herself (or anyone) a member, or to remove the owner.
    expect(await refusalCode(add("carol", p.id, "carol"))).toBe("FORBIDDEN");
    expect(await refusalCode(add("carol", p.id, "bob"))).toBe("FORBIDDEN");
    expect(await refusalCode(remove("carol", p.id, "alice"))).toBe("FORBIDDEN");
    // An unknown project stays PROJECT_NOT_FOUND; a malformed principal is INVALID_PARAMS.
    expect(await refusalCode(carol().call("projects.get", { projectId: "prj_nope" }))).toBe(
      "PROJECT_NOT_FOUND",
    );
    expect(await refusalCode(add("alice", p.id, "bob.>"))).toBe("INVALID_PARAMS");
    expect(await refusalCode(add("alice", p.id, ""))).toBe("INVALID_PARAMS");

    expect(await memberRows(p.id)).toEqual([{ principal: "alice", added_by: "alice" }]);
    expect(await memberAudit(p.id)).toEqual([]);
    expect(await dbRows("SELECT id FROM sessions WHERE project_id = $1", [p.id])).toEqual(sessionsBefore);
    // The owner still reads it.
    expect(await alice().call("projects.get", { projectId: p.id })).toEqual(p);
  });

  it("a member added by the owner sees the project and creates sessions; a member cannot add others; adds are audited", async () => {
    const p = await aliceProject();
    expect(await refusalCode(bob().call("session.create", { projectId: p.id }))).toBe("FORBIDDEN");
    const after = await add("alice", p.id, "bob");
    expect(after.members.map((m) => [m.principal, m.addedBy])).toEqual([
      ["alice", "alice"],
      ["bob", "alice"],
    ]);
    // Adding again changes nothing and writes no second audit row.
    expect(await add("alice", p.id, "bob")).toEqual(after);
    expect(await bob().call("projects.get", { projectId: p.id })).toEqual(p);
    expect(await members("bob", p.id)).toEqual(after);
    const s = await bob().call("session.create", { projectId: p.id });
    expect(s).toMatchObject({ owner: "bob", projectId: p.id });
    // Only the owner changes members: bob (a member) may not add carol.
    expect(await refusalCode(add("bob", p.id, "carol"))).toBe("FORBIDDEN");
    expect(await memberAudit(p.id)).toEqual([
      { principal: "alice", action: "project.members.add", details: { projectId: p.id, member: "bob" } },
    ]);
  });

  it("a non-member cannot be named approver at session.create or session.configure", async () => {
    const p = await aliceProject();
    const named = alice().call("session.create", { projectId: p.id, approvers: ["carol"] });
    expect(await refusalCode(named)).toBe("INVALID_PARAMS");
    expect(await dbRows("SELECT id FROM sessions WHERE project_id = $1", [p.id])).toEqual([]);
    const s = await alice().call("session.create", { projectId: p.id });
    const err = await alice()
      .call("session.configure", { sessionId: s.id, approvers: ["carol"] })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "INVALID_PARAMS",
      details: { field: "approvers", notMembers: ["carol"] },
    });
    expect((await alice().call("session.get", { sessionId: s.id })).approvers).toEqual([]);
    expect(await refusalCode(carol().call("session.get", { sessionId: s.id }))).toBe("FORBIDDEN");
  });

  it("the owner cannot be removed", async () => {
    const p = await aliceProject();
    const err = await remove("alice", p.id, "alice").catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "INVALID_PARAMS", details: { field: "principal" } });
    expect(await memberRows(p.id)).toEqual([{ principal: "alice", added_by: "alice" }]);
    expect(await memberAudit(p.id)).toEqual([]);
    expect(await alice().call("projects.get", { projectId: p.id })).toEqual(p);
  });

  it("an approver removed from the project loses every approver right at once", async () => {
    const p = await aliceProject();
    await add("alice", p.id, "bob");
    const s = await alice().call("session.create", {
      projectId: p.id,
      mode: "plan",
      approvers: ["bob"],
    });
    const a = await promptAndClaim(stack, s.id);
    expect(await submitPlan(a)).toMatchObject({ isError: false, terminate: true });
    const [pending] = (await bob().call("plans.pending", { sessionId: s.id })).proposals;
    expect(pending).toBeDefined();
    const proposalId = pending!.proposalId;
    // While a member, bob may read what an approver reads.
    expect((await readArtifact(bob(), proposalId)).content).toBe("# P\n");

    await remove("alice", p.id, "bob");
    const resolve = bob().call("plans.resolve", {
      proposalId,
      sessionId: s.id,
      turnId: pending!.turnId,
      toolCallId: pending!.toolCallId,
      action: "approve",
      targetPermissionMode: "auto",
    });
    expect(await refusalCode(resolve)).toBe("FORBIDDEN");
    expect(await refusalCode(bob().call("artifacts.read", { proposalId }))).toBe("FORBIDDEN");
    expect(await refusalCode(bob().call("plans.get", { proposalId }))).toBe("FORBIDDEN");
    expect(await refusalCode(bob().call("plans.history", { sessionId: s.id }))).toBe("FORBIDDEN");
    expect(await refusalCode(bob().call("session.get", { sessionId: s.id }))).toBe("FORBIDDEN");
    expect(await refusalCode(bob().call("session.abort", { sessionId: s.id }))).toBe("FORBIDDEN");
    expect(await refusalCode(bob().call("projects.get", { projectId: p.id }))).toBe("FORBIDDEN");
    expect((await bob().call("plans.pending", {})).proposals).toEqual([]);
    const listed = (await bob().call("session.list", {})).sessions;
    expect(listed.filter((x) => x.projectId === p.id)).toEqual([]);
    // Nothing was resolved; the session's stored list keeps the name, but he no longer counts.
    expect(await dbRows("SELECT status FROM plan_approvals WHERE id = $1", [proposalId])).toEqual([
      { status: "pending" },
    ]);
    expect((await alice().call("session.get", { sessionId: s.id })).approvers).toEqual([]);
    expect(await memberAudit(p.id)).toEqual([
      expect.objectContaining({ action: "project.members.add" }),
      { principal: "alice", action: "project.members.remove", details: { projectId: p.id, member: "bob" } },
    ]);
    // Re-added, he is an approver again (the list kept his name).
    await add("alice", p.id, "bob");
    expect((await bob().call("session.get", { sessionId: s.id })).approvers).toEqual(["bob"]);
    await alice().call("session.abort", { sessionId: s.id });
  });

  it("a removed approver's live events stop at once, though the session's actor loaded him as approver", async () => {
    const p = await aliceProject();
    await add("alice", p.id, "bob");
    const s = await alice().call("session.create", {
      projectId: p.id,
      mode: "agent",
      approvers: ["bob"],
    });
    const bobs = stack.events(s.id, "bob");
    const alices = stack.events(s.id, "alice");
    try {
      // The actor is loaded (bob in its audience) and bob receives its events.
      await alice().call("session.prompt", { sessionId: s.id, text: "one" });
      await bobs.waitFor((e) => e.type === "turn.started" || e.type === "session.changed");
      await alice().call("session.abort", { sessionId: s.id });
      await remove("alice", p.id, "bob");
      const before = bobs.all.length;
      const alicesBefore = alices.all.length;
      await alice().call("session.prompt", { sessionId: s.id, text: "two" });
      await alices.waitFor(() => alices.all.length > alicesBefore);
      await alice().call("session.abort", { sessionId: s.id });
      await alices.waitFor((e) => alices.all.indexOf(e) >= alicesBefore && e.type === "turn.ended");
      expect(bobs.all.slice(before)).toEqual([]);
    } finally {
      bobs.stop();
      alices.stop();
    }
  });

  it("a removed approver can no longer answer or list a permission prompt", async () => {
    const p = await aliceProject();
    await add("alice", p.id, "bob");
    const s = await alice().call("session.create", {
      projectId: p.id,
      mode: "agent",
      permissionMode: "ask",
      approvers: ["bob"],
    });
    const a = await promptAndClaim(stack, s.id);
    const call = executeTool(stack, a, "w1", "Write", { path: "a.txt", content: "x" });
    const pendingFor = async (who: string) =>
      (await stack.client(who).call("permissions.pending", {})).requests;
    const [req] = await eventually(async () => {
      const r = await pendingFor("bob");
      if (r.length === 0) throw new Error("no request yet");
      return r;
    });
    await remove("alice", p.id, "bob");
    expect(await pendingFor("bob")).toEqual([]);
    const answer = bob().call("permissions.resolve", { requestId: req!.requestId, decision: "allow-once" });
    expect(await refusalCode(answer)).toBe("FORBIDDEN");
    expect(await dbRows("SELECT status FROM permission_requests WHERE id = $1", [req!.requestId])).toEqual([
      { status: "pending" },
    ]);
    await stack.client("alice").call("permissions.resolve", { requestId: req!.requestId, decision: "deny" });
    expect(await call).toMatchObject({ isError: true, code: "PERMISSION_DENIED" });
    await alice().call("session.abort", { sessionId: s.id });
  });
});

describe("the project-members migration", () => {
  it("gives existing projects their creator and the owners and approvers of their sessions as members", async () => {
    const db = await freshDb("members");
    const before = await migrateUp({ databaseUrl: db.url, count: 9 });
    expect(before.at(-1)).toBe("1700000000009_write-fence");
    const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
    await q(
      `INSERT INTO projects (id, name, workspace_root, owner, created_at)
       VALUES ('p1', 'One', '/srv/p1', 'alice', $1), ('p2', 'Two', '/srv/p2', 'dave', $1)`,
      [T0],
    );
    const session = (id: string, project: string, owner: string, approvers: string[], at: Date) =>
      q(
        `INSERT INTO sessions (id, project_id, title, owner, approvers, mode, permission_mode, provider, model,
                               model_config, version, created_at, updated_at)
         VALUES ($1, $2, '', $3, $4, 'agent', 'inherit', 'scripted', 'demo', '{}', 0, $5, $5)`,
        [id, project, owner, approvers, at],
      );
    await session("s1", "p1", "bob", ["carol", "alice"], T1);
    await session("s2", "p1", "alice", ["carol", "not a principal"], T0);
    // dave's project has no sessions: its members are dave alone.
    expect(await migrateUp({ databaseUrl: db.url, count: 1 })).toEqual(["1700000000010_project-members"]);
    const r = await q(
      "SELECT project_id, principal, added_by, added_at FROM project_members ORDER BY project_id, principal",
    );
    expect(r.rows).toEqual([
      { project_id: "p1", principal: "alice", added_by: null, added_at: T0 },
      { project_id: "p1", principal: "bob", added_by: null, added_at: T1 },
      { project_id: "p1", principal: "carol", added_by: null, added_at: T0 },
      { project_id: "p2", principal: "dave", added_by: null, added_at: T0 },
    ]);
    // Running up again applies nothing more of it.
    const again = await migrateUp({ databaseUrl: db.url });
    expect(again).not.toContain("1700000000010_project-members");
    expect((await q("SELECT count(*)::int AS n FROM project_members")).rows[0].n).toBe(4);
  });
});
