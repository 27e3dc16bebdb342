// A person sees who made them a member or an approver, and may leave (docs/protocol.md "Who made me
// a member or an approver", `projects.leave`), written as the attack: bob adds alice to his project
// without asking and names her approver of his sessions. Alice gets an `approvers.added` event
// naming bob on each session (live and from events.since) and reads the audit rows of both changes,
// which carol cannot. Alice leaves with `pihost project leave`: from that commit she is no approver
// (resolving bob's pending plan is FORBIDDEN, his sessions leave her lists) while bob's sessions are
// untouched and the session alice owns there stays hers; the owner cannot leave.
import type { Subscription } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import type { AuditEntryView } from "../services/protocol/audit-schemas.ts";
import type { SessionEvent } from "../services/protocol/events.ts";
import type { ProjectView, SessionView } from "../services/protocol/schemas.ts";
import { sessionEventsWildcard } from "../services/protocol/subjects.ts";
import { jsonError, pihost } from "./support/cli.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, promptAndClaim, refusalCode } from "./support/worker-double.ts";
import type { TypedRpcClient } from "../services/protocol/rpc-client.ts";
import { decodeEvent, isEvent } from "./support/events.ts";

const stack = useStack("projleave", { extra: { PI_TURN_LEASE_MS: "600000" }, host: true });
const bob = () => stack.client("bob");
const alice = () => stack.client("alice");
const carol = () => stack.client("carol");

/** Every event published to `principal` of any session, until stopped. */
function allEventsOf(principal: string): { all: SessionEvent[]; sub: Subscription } {
  const all: SessionEvent[] = [];
  const sub = stack.nc.subscribe(sessionEventsWildcard(stack.env.prefix, principal, "*"), {
    callback: (_err, msg) => {
      all.push(decodeEvent(msg.data));
    },
  });
  return { all, sub };
}

const audit = async (principal: string, params: Record<string, unknown> = {}) =>
  (await stack.client(principal).call("audit.list", { limit: 200, ...params })).entries;

/** The rows that say who made `who` a member or an approver, or ended it (audit-query.ts). */
const naming = (entries: AuditEntryView[], who: string) =>
  entries.filter((e) =>
    e.action === "session.approvers.add"
      ? (e.details.approvers as string[]).includes(who)
      : ["project.members.add", "project.members.remove", "project.leave"].includes(e.action) &&
        e.details.member === who,
  );

describe("who made me a member or an approver, and leaving", () => {
  it("alice sees bob's doing (event and audit, carol neither), leaves, and is no approver from then on", async () => {
    const live = allEventsOf("alice");
    try {
      await attackAndLeave(live.all);
    } finally {
      live.sub.unsubscribe();
    }
  });
});

/** Bob makes alice a member and an approver; she learns who did it. `live`: her events as they come. */
async function attackAndLeave(live: SessionEvent[]): Promise<void> {
  await stack.nc.flush();
  const project = await bob().call("projects.create", {
    name: "bobs",
    workspaceRoot: stack.newWorkspace("bobs"),
  });
  await bob().call("projects.members.add", { projectId: project.id, principal: "alice" });
  // Named at create (a Plan session that will wait for approval) and by configure.
  const named = await bob().call("session.create", {
    projectId: project.id,
    mode: "plan",
    approvers: ["alice"],
  });
  const later = await bob().call("session.create", { projectId: project.id });
  await bob().call("session.configure", { sessionId: later.id, approvers: ["alice"] });
  // Configuring again with her already there names nobody new: no second event, no second row.
  await bob().call("session.configure", { sessionId: later.id, mode: "plan", approvers: ["alice"] });
  const mine = await alice().call("session.create", { projectId: project.id });

  // The event, live and stored, on each session: bob added alice.
  for (const s of [named, later]) {
    const seen = await eventually(async () =>
      live.find((e) => e.type === "approvers.added" && e.sessionId === s.id),
    );
    expect(seen).toMatchObject({ approvers: ["alice"], addedBy: "bob" });
    const stored = await alice().call("events.since", { sessionId: s.id });
    expect(stored.events.filter((e) => e.type === "approvers.added")).toEqual([
      expect.objectContaining({ approvers: ["alice"], addedBy: "bob", sessionId: s.id }),
    ]);
  }
  expect(live.filter(isEvent("approvers.added")).map((e) => e.sessionId)).toEqual([named.id, later.id]);

  // The audit rows that name alice: who (bob), when, which project and sessions.
  const rows = naming(await audit("alice"), "alice");
  expect(rows.map((e) => [e.action, e.principal, e.projectId, e.sessionId])).toEqual([
    ["session.approvers.add", "bob", project.id, later.id],
    ["session.approvers.add", "bob", project.id, named.id],
    ["project.members.add", "bob", project.id, null],
  ]);
  expect(rows.every((e) => !Number.isNaN(Date.parse(e.at)))).toBe(true);
  // projects.list says the same of the membership.
  const listed = await alice().call("projects.list", {});
  expect(listed.projects).toEqual([
    expect.objectContaining({ id: project.id, owner: "bob", addedBy: "bob" }),
  ]);
  // Carol reads none of them, however she asks.
  for (const params of [{}, { projectId: project.id }, { sessionId: named.id }, { sessionId: later.id }])
    expect(naming(await audit("carol", params), "alice")).toEqual([]);

  await leaveAndCheck({ project, named, later, mine });
}

/** Alice leaves bob's project: from that commit she is no approver; bob's and her own sessions stay. */
async function leaveAndCheck(o: {
  project: ProjectView;
  named: SessionView;
  later: SessionView;
  mine: SessionView;
}): Promise<void> {
  const { project, named, later, mine } = o;
  // Bob's plan waits for approval; alice may see it (as an approver) before she leaves.
  const a = await promptAndClaim(stack, named.id, "go", "bob");
  await executeTool(stack, a, "exit-1", "ExitPlanMode", { title: "P", markdown: "# P\n", question: "ok?" });
  const [pending] = (await alice().call("plans.pending", {})).proposals;
  expect(pending?.sessionId).toBe(named.id);

  // The owner cannot leave; carol (no member) cannot; an unknown project is not found.
  const ownerLeaves = await pihost(stack, ["--json", "project", "leave", project.id], "bob");
  expect(ownerLeaves.code).toBe(1);
  expect(jsonError(ownerLeaves).code).toBe("PROJECT_OWNER_CANNOT_LEAVE");
  expect(await refusalCode(carol().call("projects.leave", { projectId: project.id }))).toBe("FORBIDDEN");
  expect(await refusalCode(alice().call("projects.leave", { projectId: "prj_nope" }))).toBe(
    "PROJECT_NOT_FOUND",
  );

  const left = await pihost(stack, ["project", "leave", project.id], "alice");
  expect(left).toMatchObject({ code: 0, stdout: `left project ${project.id}\n` });
  expect(await refusalCode(alice().call("projects.leave", { projectId: project.id }))).toBe("FORBIDDEN");

  // From that commit she is no approver: resolving bob's plan is FORBIDDEN and changes nothing.
  const resolve = (who: () => TypedRpcClient, action: "approve" | "reject") =>
    who().call("plans.resolve", {
      proposalId: pending!.proposalId,
      sessionId: named.id,
      turnId: pending!.turnId,
      toolCallId: pending!.toolCallId,
      action,
      ...(action === "approve" ? { targetPermissionMode: "ask" } : {}),
    });
  expect(await refusalCode(resolve(alice, "approve"))).toBe("FORBIDDEN");
  for (const s of [named, later])
    expect(await refusalCode(alice().call("session.get", { sessionId: s.id }))).toBe("FORBIDDEN");
  expect(await refusalCode(alice().call("projects.get", { projectId: project.id }))).toBe("FORBIDDEN");
  expect((await alice().call("plans.pending", {})).proposals).toEqual([]);
  const hers = (await alice().call("session.list", {})).sessions;
  expect(hers.map((s) => s.id)).toEqual([mine.id]);
  expect((await alice().call("projects.list", {})).projects).toEqual([]);

  // Bob's sessions are untouched: his stored lists keep her name (it no longer counts), the plan
  // still waits, and bob decides it.
  const stored = await stack.db.pool.query(
    "SELECT id, owner, approvers FROM sessions WHERE project_id = $1",
    [project.id],
  );
  expect(stored.rows.filter((r) => r.owner === "bob").map((r) => r.approvers)).toEqual([
    ["alice"],
    ["alice"],
  ]);
  expect((await bob().call("session.get", { sessionId: named.id })).approvers).toEqual([]);
  expect(await resolve(bob, "reject")).toMatchObject({ status: "rejected" });
  // Her own session there stays hers: she reads and configures it as its owner.
  expect(await alice().call("session.get", { sessionId: mine.id })).toMatchObject({
    owner: "alice",
    projectId: project.id,
  });
  expect(
    await alice().call("session.configure", { sessionId: mine.id, permissionMode: "ask" }),
  ).toMatchObject({ owner: "alice", permissionMode: "ask" });

  // The leaving is audited; alice still reads what named her (and her leaving), carol nothing.
  const after = naming(await audit("alice"), "alice");
  expect(after.map((e) => [e.action, e.principal])).toEqual([
    ["project.leave", "alice"],
    ["session.approvers.add", "bob"],
    ["session.approvers.add", "bob"],
    ["project.members.add", "bob"],
  ]);
  expect((await audit("bob", { projectId: project.id })).map((e) => e.action)).toContain("project.leave");
  expect(naming(await audit("carol"), "alice")).toEqual([]);
  // No longer approver, alice reads no other row of bob's sessions.
  expect(
    (await audit("alice", { sessionId: named.id })).filter((e) => e.action !== "session.approvers.add"),
  ).toEqual([]);
}
