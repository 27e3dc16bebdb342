// Every other list a person reads is bounded as session.list is (docs/protocol.md "Lists and
// pages"), each written as someone else filling it: pending plans and permission prompts of sessions
// bob names alice approver of, her own tasks and a task's runs, the members of a project, the
// projects she was added to, the plugins and the workers. For each: every page within its row and
// byte bounds (the whole reply within max_payload), every row there at the start exactly once while
// rows are added meanwhile, and `pihost --json` the merged list.
import { describe, expect, it } from "vitest";
import type { ProjectView, TurnAssignment } from "../services/protocol/schemas.ts";
import { PAGED_LISTS, type PagedList } from "../services/protocol/page-walk.ts";
import { agentSubject } from "../services/protocol/subjects.ts";
import {
  bulkMembers,
  bulkPendingPlans,
  bulkPlugins,
  bulkProjects,
  bulkRuns,
  bulkSessions,
  bulkTasks,
  bulkUnwaitedRequests,
} from "./support/bulk-rows.ts";
import { jsonOut, pihost } from "./support/cli.ts";
import { readPages } from "./support/pages.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, promptAndClaim } from "./support/worker-double.ts";

const stack = useStack("listpages", { extra: { PI_TURN_LEASE_MS: "600000" }, host: true });
const maxPayload = () => stack.nc.info?.max_payload ?? 1024 * 1024;
let unique = 0;
const tag = (what: string) => `${what}${++unique}${Math.random().toString(36).slice(2, 6)}`;

/** Bob's project with alice a member (through the API). */
async function bobsProject(): Promise<ProjectView> {
  const bob = stack.client("bob");
  const p = await bob.call("projects.create", {
    name: "lists",
    workspaceRoot: stack.newWorkspace(tag("ws")),
  });
  await bob.call("projects.members.add", { projectId: p.id, principal: "alice" });
  return p;
}

/** `count` sessions of bob's in project `p` naming alice approver, in bulk. */
const namingAlice = (p: ProjectView, count: number, prefix: string) =>
  bulkSessions(stack, { projectId: p.id, owner: "bob", approvers: ["alice"], count, prefix });

/**
 * Reads `method` as `principal` by pages of `limit` (and by the default page) and checks that
 * every id of `expected` is there exactly once; returns the ids read with `limit`.
 */
async function everyRowOnce(o: {
  principal: string;
  method: PagedList;
  id: (row: Record<string, unknown>) => string;
  expected: string[];
  limit: number;
  defaultLimit?: number;
  params?: Record<string, unknown>;
  between?: (page: number) => Promise<void>;
}): Promise<{ ids: string[]; pages: number; shortPages: number }> {
  const call = (p: Record<string, unknown>) => stack.client(o.principal).call(o.method, p);
  const common = {
    ...PAGED_LISTS[o.method],
    maxPayload: maxPayload(),
    params: o.params ?? {},
    ...(o.defaultLimit !== undefined ? { defaultLimit: o.defaultLimit } : {}),
  };
  const read = await readPages<Record<string, unknown>>(call, {
    ...common,
    limit: o.limit,
    ...(o.between ? { between: o.between } : {}),
  });
  const ids = read.all.map(o.id);
  expect(new Set(ids).size).toBe(ids.length);
  const seen = new Set(ids);
  expect(o.expected.filter((id) => !seen.has(id))).toEqual([]);
  // The default page (50 rows) reads the same rows.
  const byDefault = await readPages<Record<string, unknown>>(call, common);
  const defaultIds = new Set(byDefault.all.map(o.id));
  expect(o.expected.filter((id) => !defaultIds.has(id))).toEqual([]);
  const shortPages = read.pages.filter((p, i) => i < read.pages.length - 1 && p.length < o.limit).length;
  return { ids, pages: read.pages.length, shortPages };
}

describe("every list is keyset-paged and bounded", () => {
  it("plans.pending: 700 pending plans of sessions alice approves, in byte-bounded pages, each once", async () => {
    const p = await bobsProject();
    const sessions = await namingAlice(p, 700, tag("ses_pp"));
    const plans = await bulkPendingPlans(stack, sessions);
    const r = await everyRowOnce({
      principal: "alice",
      method: "plans.pending",
      id: (x) => x.proposalId as string,
      expected: plans,
      limit: 200,
      // Oldest first: plans submitted meanwhile come after and may be read, never twice.
      between: async (n) => {
        const more = await namingAlice(p, 2, tag(`ses_ppm${n}`));
        await bulkPendingPlans(stack, more);
      },
    });
    expect(r.shortPages).toBeGreaterThan(0); // the byte bound cut pages below 200
    // One session's filter pages too; carol sees none of them.
    const one = await stack.client("alice").call("plans.pending", {
      sessionId: sessions[0],
    });
    expect(one).toMatchObject({ proposals: [{ proposalId: plans[0] }], next: null });
    expect(await stack.client("carol").call("plans.pending", {})).toEqual({ proposals: [], next: null });
    const cli = jsonOut(await pihost(stack, ["--json", "plans", "pending"], "alice")) as {
      proposals: unknown[];
    };
    expect(cli.proposals.length).toBeGreaterThanOrEqual(plans.length);
  });

  it("permissions.pending: 500 requests no host waits on are passed over; the three that wait come once each", async () => {
    const p = await bobsProject();
    const sessions = await namingAlice(p, 500, tag("ses_pr"));
    await bulkPendingPlans(stack, sessions);
    await bulkUnwaitedRequests(stack, sessions);
    // Three real prompts: bob's sessions under ask, each turn's Write waiting for a person.
    const live: Array<{ a: TurnAssignment; call: Promise<unknown> }> = [];
    for (let i = 0; i < 3; i++) {
      const s = await stack.client("bob").call("session.create", {
        projectId: p.id,
        permissionMode: "ask",
        approvers: ["alice"],
      });
      const a = await promptAndClaim(stack, s.id, "go", "bob");
      live.push({ a, call: executeTool(stack, a, `w${i}`, "Write", { path: `f${i}.txt`, content: "x" }) });
    }
    const waiting = await eventually(async () => {
      const r = await stack.client("alice").call("permissions.pending", {
        limit: 200,
        // Past the bulk rows (2020): only what was asked today.
        after: "1600000000000000.zzz",
      });
      return r.requests.length === 3 ? r.requests.map((q) => q.requestId) : null;
    });
    const r = await everyRowOnce({
      principal: "alice",
      method: "permissions.pending",
      id: (x) => x.requestId as string,
      expected: waiting,
      limit: 7,
    });
    expect(r.ids.sort()).toEqual([...waiting].sort());
    expect(r.pages).toBeGreaterThan(500 / 7);
    for (const requestId of waiting)
      await stack.client("bob").call("permissions.resolve", { requestId, decision: "deny" });
    expect(await Promise.all(live.map((l) => l.call))).toMatchObject([
      { code: "PERMISSION_DENIED" },
      { code: "PERMISSION_DENIED" },
      { code: "PERMISSION_DENIED" },
    ]);
  });

  it("scheduled.list and scheduled.runs: 400 tasks and a task's 1,500 runs, each once", async () => {
    const p = await bobsProject();
    const made: string[] = [];
    for (let i = 0; i < 2; i++)
      made.push(
        (
          await stack.client("alice").call("scheduled.create", {
            name: `t${i}`,
            cron: "0 9 * * 1-5",
            timezone: "UTC",
            projectId: p.id,
            prompt: "go",
            enabled: false,
          })
        ).id,
      );
    const tasks = [
      ...(await bulkTasks(stack, { owner: "alice", projectId: p.id, count: 400, prefix: tag("task") })),
      ...made,
    ];
    const t = await everyRowOnce({
      principal: "alice",
      method: "scheduled.list",
      id: (x) => x.id as string,
      expected: tasks,
      limit: 200,
      between: async (n) => {
        await bulkTasks(stack, { owner: "alice", projectId: p.id, count: 3, prefix: tag(`taskm${n}`) });
      },
    });
    expect(t.shortPages).toBeGreaterThan(0);
    expect((await stack.client("bob").call("scheduled.list", {})).tasks).toEqual([]);

    const runs = await bulkRuns(stack, made[0]!, 1_500);
    const r = await everyRowOnce({
      principal: "alice",
      method: "scheduled.runs",
      id: (x) => x.runId as string,
      expected: runs,
      limit: 500,
      defaultLimit: 100,
      params: { taskId: made[0] },
    });
    expect(r.ids).toHaveLength(1_500);
    expect(r.shortPages).toBeGreaterThan(0);
    const cli = jsonOut(await pihost(stack, ["--json", "scheduled", "runs", made[0]!], "alice")) as {
      runs: unknown[];
      next: null;
    };
    expect(cli.runs).toHaveLength(1_500);
  });

  it("projects.members.list and projects.list: 1,200 members of a project, 300 projects alice was added to", async () => {
    const p = await bobsProject();
    const members = await bulkMembers(stack, {
      projectId: p.id,
      prefix: tag("m"),
      count: 1_200,
      addedBy: "bob",
    });
    const r = await everyRowOnce({
      principal: "alice",
      method: "projects.members.list",
      id: (x) => x.principal as string,
      expected: ["bob", "alice", ...members],
      limit: 200,
      params: { projectId: p.id },
      between: async (n) => {
        await bulkMembers(stack, { projectId: p.id, prefix: tag(`mm${n}`), count: 2, addedBy: "bob" });
      },
    });
    expect(r.ids[0]).toBe("bob"); // the owner first
    const cli = jsonOut(await pihost(stack, ["--json", "project", "members", p.id], "alice")) as {
      owner: string;
      members: unknown[];
      next: null;
    };
    expect(cli.owner).toBe("bob");
    expect(cli.members.length).toBeGreaterThanOrEqual(1_202);

    const projects = await bulkProjects(stack, {
      owner: "bob",
      member: "alice",
      count: 300,
      prefix: tag("prj"),
    });
    const mine = await everyRowOnce({
      principal: "alice",
      method: "projects.list",
      id: (x) => x.id as string,
      expected: [...projects, p.id],
      limit: 40,
    });
    expect(mine.ids[0]).toBe(p.id); // newest membership first: the one made through the API today
    const listed = await stack.client("alice").call("projects.list", { limit: 1 });
    expect(listed.projects[0]).toMatchObject({ id: p.id, owner: "bob", addedBy: "bob" });
    expect(await stack.client("carol").call("projects.list", {})).toEqual({
      projects: [],
      next: null,
    });
  });

  it("plugins.list: 250 plugins of a few KiB each, in byte-bounded pages", async () => {
    const plugins = await bulkPlugins(stack, tag("plug"), 250);
    const r = await everyRowOnce({
      principal: "carol",
      method: "plugins.list",
      id: (x) => x.id as string,
      expected: plugins,
      limit: 200,
    });
    expect(r.shortPages).toBeGreaterThan(0);
  });

  it("workers.list: 300 workers announcing many models each, in byte-bounded pages by id", async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `${tag("wk")}-${String(i).padStart(3, "0")}`);
    const models = Array.from({ length: 20 }, (_, i) => `${"m".repeat(100)}${i}`);
    for (const workerId of ids)
      stack.nc.publish(
        agentSubject(stack.env.prefix, "hello"),
        JSON.stringify({
          workerId,
          protocolVersion: 1,
          serves: [{ provider: "scripted", models, keyConfigured: true }],
        }),
      );
    await stack.nc.flush();
    await eventually(async () => {
      const all = jsonOut(await pihost(stack, ["--json", "workers"], "carol")) as {
        workers: Array<{ workerId: string }>;
      };
      return ids.every((id) => all.workers.some((w) => w.workerId === id));
    });
    const r = await everyRowOnce({
      principal: "carol",
      method: "workers.list",
      id: (x) => x.workerId as string,
      expected: ids,
      limit: 200,
    });
    const sorted = [...r.ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(r.ids).toEqual(sorted);
    expect(r.shortPages).toBeGreaterThan(0);
  });
});
