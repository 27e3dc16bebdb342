// audit.list (issue #11 clause 8): a person reads the audit rows of the sessions they own or approve
// and of the projects they own, never another person's; settings admins read every row; pages are
// newest first and resume by `next` without gaps or repeats.
import { describe, expect, it } from "vitest";
import { addMembers } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("auditlist", { extra: { PI_SETTINGS_ADMINS: "auditor" }, host: true });

async function aliceSession(approvers: string[] = []) {
  const alice = stack.client("alice");
  const ws = stack.newWorkspace(`ws-${Math.random().toString(36).slice(2, 8)}`);
  const project = await alice.call("projects.create", { name: "audited", workspaceRoot: ws });
  // Approvers must be members of the project.
  await addMembers(stack, project.id, approvers);
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode: "agent",
    approvers,
  });
  return { project, session };
}

const list = (principal: string, params: Record<string, unknown> = {}) =>
  stack.client(principal).call("audit.list", params);

describe("audit.list", () => {
  it("the owner reads her session's and project's rows; another person reads none of them", async () => {
    const { project, session } = await aliceSession();
    const mine = await list("alice", { projectId: project.id });
    const actions = mine.entries.map((e) => e.action);
    expect(actions).toContain("project.create");
    expect(actions).toContain("session.create");
    expect(mine.entries.every((e) => e.projectId === project.id)).toBe(true);
    expect(mine.entries.find((e) => e.action === "session.create")?.sessionId).toBe(session.id);

    // Mallory asks for alice's project, alice's session, and everything: nothing of alice's.
    for (const params of [{ projectId: project.id }, { sessionId: session.id }, {}]) {
      const theirs = await list("mallory", params);
      expect(theirs.entries.filter((e) => e.projectId === project.id || e.sessionId === session.id)).toEqual(
        [],
      );
    }
  });

  it("an approver reads the session's rows but not the owner's project rows", async () => {
    const { project, session } = await aliceSession(["carol"]);
    const page = await list("carol", { projectId: project.id });
    expect(page.entries.map((e) => e.action)).toContain("session.create");
    // Besides the session's rows, only the row that made carol a member (it names her: audit-query.ts).
    expect(page.entries.every((e) => e.sessionId === session.id || e.details.member === "carol")).toBe(true);
    expect(page.entries.map((e) => e.action)).not.toContain("project.create");
  });

  it("a settings admin reads every row", async () => {
    const { project } = await aliceSession();
    const page = await list("auditor", { projectId: project.id });
    expect(page.entries.map((e) => e.action)).toEqual(
      expect.arrayContaining(["project.create", "session.create"]),
    );
  });

  it("pages newest first and resumes by next without gaps or repeats", async () => {
    for (let i = 0; i < 3; i++) await aliceSession();
    const all = await list("alice", { limit: 200 });
    expect(all.entries.length).toBeGreaterThanOrEqual(6);
    const ids = all.entries.map((e) => e.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    const seen: number[] = [];
    let before: number | undefined;
    for (;;) {
      const page = await list("alice", { limit: 2, ...(before ? { before } : {}) });
      expect(page.entries.length).toBeLessThanOrEqual(2);
      seen.push(...page.entries.map((e) => e.id));
      if (page.next === null) break;
      before = page.next;
    }
    expect(seen).toEqual(ids);
  });

  it("refuses malformed paging with INVALID_PARAMS", async () => {
    for (const params of [{ limit: 0 }, { limit: 201 }, { before: -1 }, { extra: 1 }])
      await expect(list("alice", params)).rejects.toMatchObject({ code: "INVALID_PARAMS" });
  });
});
