// Permission prompts (docs/architecture.md "Tools", docs/protocol.md "Permission prompts") over NATS against the real
// host, the test acting as the worker: Agent + ask prompts for Write with a durable request and an
// event; deny, allow-once, allow-session, the deadline (on the host clock) and an abort settle it;
// grants never lift a Plan denial; only the owner or an approver may answer; unattended runs never
// wait; everything is audited.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { decodeJson } from "../services/protocol/envelope.ts";
import type { SessionEvent } from "../services/protocol/events.ts";
import type { TurnAssignment, TurnOffer } from "../services/protocol/schemas.ts";
import { agentSubject } from "../services/protocol/subjects.ts";
import { addMembers, type EventCollector } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode, executeTool } from "./support/worker-double.ts";
import type { PermissionMode } from "../services/protocol/modes.ts";
import type { PermissionDecision } from "../services/protocol/permission-schemas.ts";
import { isEvent } from "./support/events.ts";

// The deadline test moves the host clock by 121 s; the turn's lease (host clock too) must outlive it.
const stack = useStack("permprompt", { extra: { PI_TURN_LEASE_MS: "600000" }, host: true });

async function liveTurn(
  opts: { mode?: "agent" | "plan"; permissionMode?: PermissionMode; approvers?: string[] } = {},
) {
  const ws = stack.newWorkspace(`ws-${Math.random().toString(36).slice(2, 8)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "p", workspaceRoot: ws });
  await addMembers(stack, project.id, opts.approvers ?? []);
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode: opts.mode ?? "agent",
    permissionMode: opts.permissionMode ?? "ask",
    ...(opts.approvers ? { approvers: opts.approvers } : {}),
  });
  const events = stack.events(session.id);
  const assignment = await promptAndClaim(stack, session.id);
  return { ws, session, assignment, events };
}

const exec = (a: TurnAssignment, toolCallId: string, tool: string, args: Record<string, unknown>) =>
  executeTool(stack, a, toolCallId, tool, args);

type Requested = SessionEvent<"permission.requested">;
type Resolved = SessionEvent<"permission.resolved">;

async function requested(events: EventCollector, toolCallId: string): Promise<Requested> {
  return await events.waitFor(isEvent("permission.requested", (e) => e.toolCallId === toolCallId));
}

async function resolved(events: EventCollector, requestId: string): Promise<Resolved> {
  return await events.waitFor(isEvent("permission.resolved", (e) => e.requestId === requestId));
}

function resolve(principal: string, requestId: string, decision: PermissionDecision) {
  return stack.client(principal).call("permissions.resolve", { requestId, decision });
}

async function pending(principal: string, sessionId?: string) {
  return (await stack.client(principal).call("permissions.pending", sessionId ? { sessionId } : {})).requests;
}

describe("permission prompts", () => {
  it("Write under ask prompts; only the owner or an approver answers; deny stops it; all audited", async () => {
    const { ws, session, assignment, events } = await liveTurn({ approvers: ["carol"] });
    const clock = await stack.hook<{ now: number }>("clock.get");
    const call = exec(assignment, "w1", "Write", { path: "a.txt", content: "hello" });
    const ev = await requested(events, "w1");
    expect(ev).toMatchObject({
      sessionId: session.id,
      turnId: assignment.turnId,
      tool: "Write",
      risk: "medium",
      preview: { path: "a.txt", content: "hello" },
    });
    const deadline = new Date(ev.deadline).getTime();
    expect(deadline - clock.now).toBeGreaterThanOrEqual(119_000);
    expect(deadline - clock.now).toBeLessThan(130_000);

    // Listed for the owner and the approver, not for anyone else.
    const live = await pending("alice", session.id);
    expect(live.map((r) => r.requestId)).toEqual([ev.requestId]);
    expect(live[0]).toMatchObject({ status: "pending", tool: "Write", toolCallId: "w1", decision: null });
    expect((await pending("carol")).map((r) => r.requestId)).toContain(ev.requestId);
    expect(await pending("mallory")).toEqual([]);
    expect(await refusalCode(pending("mallory", session.id))).toBe("FORBIDDEN");
    expect(await refusalCode(resolve("mallory", ev.requestId, "allow-once"))).toBe("FORBIDDEN");
    expect(
      await refusalCode(
        stack.client("alice").raw("permissions.resolve", { requestId: ev.requestId, decision: "sure" }),
      ),
    ).toBe("INVALID_PARAMS");
    expect(await refusalCode(resolve("alice", "req_nope", "deny"))).toBe("PERMISSION_NOT_FOUND");

    const answer = await resolve("alice", ev.requestId, "deny");
    expect(answer).toMatchObject({
      status: "denied",
      decision: "deny",
      principal: "alice",
      code: "PERMISSION_DENIED",
    });
    const result = await call;
    expect(result).toMatchObject({ isError: true, code: "PERMISSION_DENIED" });
    expect(existsSync(path.join(ws, "a.txt"))).toBe(false);
    expect(await resolved(events, ev.requestId)).toMatchObject({
      decision: "deny",
      code: "PERMISSION_DENIED",
    });
    expect(await refusalCode(resolve("alice", ev.requestId, "allow-once"))).toBe(
      "PERMISSION_ALREADY_RESOLVED",
    );
    // The same answer again (a retry) is the recorded result, as approving a plan twice is.
    expect(await resolve("alice", ev.requestId, "deny")).toMatchObject({
      status: "denied",
      decision: "deny",
    });
    expect(await pending("alice", session.id)).toEqual([]);

    const audit = await stack.db.pool.query(
      `SELECT action, principal, decision, code FROM audit_log
       WHERE turn_id = $1 AND tool_call_id = 'w1' ORDER BY id`,
      [assignment.turnId],
    );
    expect(audit.rows).toEqual([
      { action: "permission.request", principal: "worker:testworker", decision: "prompt", code: null },
      { action: "permission.resolve", principal: "alice", decision: "deny", code: "PERMISSION_DENIED" },
      {
        action: "tool.decision",
        principal: "worker:testworker",
        decision: "deny",
        code: "PERMISSION_DENIED",
      },
    ]);
  });

  it("allow-once runs the call; allow-session grants the tool for the session, per tool", async () => {
    const { ws, session, assignment, events } = await liveTurn({ approvers: ["carol"] });
    const first = exec(assignment, "w1", "Write", { path: "a.txt", content: "one" });
    const r1 = await requested(events, "w1");
    expect(await resolve("carol", r1.requestId, "allow-once")).toMatchObject({
      status: "allowed",
      decision: "allow-once",
      principal: "carol",
    });
    expect(await first).toMatchObject({ isError: false });
    expect(readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("one");
    expect(await resolved(events, r1.requestId)).toMatchObject({ decision: "allow-once" });

    // allow-once grants nothing: the next Write prompts again.
    const second = exec(assignment, "w2", "Write", { path: "b.txt", content: "two" });
    const r2 = await requested(events, "w2");
    await resolve("alice", r2.requestId, "allow-session");
    expect(await second).toMatchObject({ isError: false });
    expect(existsSync(path.join(ws, "b.txt"))).toBe(true);
    expect(
      (
        await stack.db.pool.query("SELECT tool, granted_by FROM permission_grants WHERE session_id = $1", [
          session.id,
        ])
      ).rows,
    ).toEqual([{ tool: "Write", granted_by: "alice" }]);

    // The grant skips the prompt for Write...
    expect(await exec(assignment, "w3", "Write", { path: "c.txt", content: "three" })).toMatchObject({
      isError: false,
    });
    expect(existsSync(path.join(ws, "c.txt"))).toBe(true);
    expect(events.all.some(isEvent("permission.requested", (e) => e.toolCallId === "w3"))).toBe(false);
    // ...but not for Edit.
    const edit = exec(assignment, "e1", "Edit", { path: "c.txt", oldText: "three", newText: "3" });
    const r3 = await requested(events, "e1");
    await resolve("alice", r3.requestId, "deny");
    expect((await edit).code).toBe("PERMISSION_DENIED");
    expect(readFileSync(path.join(ws, "c.txt"), "utf8")).toBe("three");
  });

  it("no answer by the deadline (host clock) is PERMISSION_TIMEOUT", async () => {
    const { ws, assignment, events } = await liveTurn();
    const call = exec(assignment, "w1", "Write", { path: "late.txt", content: "x" });
    const ev = await requested(events, "w1");
    await stack.hook("clock.advance", { ms: 121_000 });
    expect(await call).toMatchObject({ isError: true, code: "PERMISSION_TIMEOUT" });
    expect(existsSync(path.join(ws, "late.txt"))).toBe(false);
    expect(await resolved(events, ev.requestId)).toMatchObject({
      decision: "deny",
      code: "PERMISSION_TIMEOUT",
    });
    expect(await refusalCode(resolve("alice", ev.requestId, "allow-once"))).toBe("PERMISSION_TIMEOUT");
    const row = await stack.db.pool.query("SELECT status, code FROM permission_requests WHERE id = $1", [
      ev.requestId,
    ]);
    expect(row.rows).toEqual([{ status: "denied", code: "PERMISSION_TIMEOUT" }]);
  });

  it("a grant never lifts a Plan denial", async () => {
    const { ws, session, assignment, events } = await liveTurn();
    const call = exec(assignment, "w1", "Write", { path: "a.txt", content: "a" });
    await resolve("alice", (await requested(events, "w1")).requestId, "allow-session");
    expect((await call).isError).toBe(false);
    expect(await exec(assignment, "p1", "EnterPlanMode", {})).toMatchObject({
      isError: false,
      terminate: true,
    });
    const denied = await exec(assignment, "w2", "Write", { path: "b.txt", content: "b" });
    expect(denied.code).toBe("WRITE_DISABLED_IN_PLAN");
    expect(existsSync(path.join(ws, "b.txt"))).toBe(false);
    expect(events.all.some(isEvent("permission.requested", (e) => e.toolCallId === "w2"))).toBe(false);
    expect(
      (
        await stack.db.pool.query("SELECT count(*)::int AS n FROM permission_grants WHERE session_id = $1", [
          session.id,
        ])
      ).rows[0].n,
    ).toBe(1);
  });

  it("a session that becomes degraded while a prompt waits denies it; nothing runs", async () => {
    const { ws, session, assignment, events } = await liveTurn();
    const call = exec(assignment, "w1", "Write", { path: "a.txt", content: "a" });
    const ev = await requested(events, "w1");
    // PI_ACTOR_MAX_RESTARTS is 3: the fourth actor failure degrades the session.
    for (let n = 1; n <= 4; n++) {
      const r = await stack.hook<{ degraded: boolean }>("actor.fault", { sessionId: session.id });
      expect(r.degraded).toBe(n === 4);
    }
    expect(await call).toMatchObject({ isError: true, code: "PERMISSION_INTERRUPTED" });
    expect(existsSync(path.join(ws, "a.txt"))).toBe(false);
    expect(await pending("alice", session.id)).toEqual([]);
    expect(await refusalCode(resolve("alice", ev.requestId, "allow-once"))).toBe(
      "PERMISSION_ALREADY_RESOLVED",
    );
  });

  it("an abort of the turn while waiting denies the prompt and aborts the turn", async () => {
    const { ws, session, assignment, events } = await liveTurn();
    const call = exec(assignment, "w1", "Write", { path: "a.txt", content: "a" });
    const ev = await requested(events, "w1");
    await stack.client("alice").call("session.abort", { sessionId: session.id });
    expect(await call).toMatchObject({ isError: true, code: "PERMISSION_INTERRUPTED" });
    expect(existsSync(path.join(ws, "a.txt"))).toBe(false);
    expect(await resolved(events, ev.requestId)).toMatchObject({
      decision: "deny",
      code: "PERMISSION_INTERRUPTED",
    });
    await events.waitFor(isEvent("turn.ended", (e) => e.status === "aborted"));
    expect(await refusalCode(resolve("alice", ev.requestId, "allow-once"))).toBe(
      "PERMISSION_ALREADY_RESOLVED",
    );
  });

  it("an unattended (scheduled) run never waits: a prompt is PERMISSION_REQUIRED at once", async () => {
    const ws = stack.newWorkspace("ws-sched");
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", { name: "s", workspaceRoot: ws });
    const task = await alice.call("scheduled.create", {
      name: "nightly",
      cron: "0 3 * * *",
      timezone: "UTC",
      projectId: project.id,
      prompt: "tidy up",
      permissionMode: "ask",
      enabled: false,
    });
    const offers = stack.nc.subscribe(agentSubject(stack.env.prefix, "offer"));
    const run = await alice.call("scheduled.run", { taskId: task.id });
    for await (const m of offers) if ((decodeJson(m.data) as TurnOffer).turnId === run.turnId) break;
    offers.unsubscribe();
    const a = await stack.agentClient.call("claim", { turnId: run.turnId!, workerId: "testworker" });
    const result = await exec(a, "w1", "Write", { path: "a.txt", content: "a" });
    expect(result).toMatchObject({ isError: true, code: "PERMISSION_REQUIRED" });
    expect(existsSync(path.join(ws, "a.txt"))).toBe(false);
    const rows = await stack.db.pool.query("SELECT id FROM permission_requests WHERE session_id = $1", [
      run.sessionId,
    ]);
    expect(rows.rows).toEqual([]);
  });

  // Last: it restarts the host.
  it("a host restart while a prompt is pending denies it (startup fence)", async () => {
    const { ws, assignment, events } = await liveTurn();
    const call = exec(assignment, "w1", "Write", { path: "a.txt", content: "a" }).catch((e: unknown) => e);
    const ev = await requested(events, "w1");
    await stack.host!.kill();
    await stack.startHost();
    const row = await stack.db.pool.query("SELECT status, code FROM permission_requests WHERE id = $1", [
      ev.requestId,
    ]);
    expect(row.rows).toEqual([{ status: "denied", code: "PERMISSION_INTERRUPTED" }]);
    const audit = await stack.db.pool.query(
      "SELECT code FROM audit_log WHERE action = 'fence.permission' AND details->>'requestId' = $1",
      [ev.requestId],
    );
    expect(audit.rows).toEqual([{ code: "PERMISSION_INTERRUPTED" }]);
    expect(await refusalCode(resolve("alice", ev.requestId, "allow-once"))).toBe(
      "PERMISSION_ALREADY_RESOLVED",
    );
    expect(await pending("alice")).toEqual([]);
    // The killed host never answers that call (the worker's request times out); nothing was written.
    void call;
    expect(existsSync(path.join(ws, "a.txt"))).toBe(false);
  });
});
