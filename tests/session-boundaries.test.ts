// Session boundaries (docs/architecture.md "Session actors") over NATS against the real host, the test acting as the worker:
// one active turn, no configuration while work is in progress, abort fails closed, and principals
// who are neither owner nor approver are refused.
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { decodeJson } from "../services/protocol/envelope.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { addMembers } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";

const stack = useStack("bounds", { host: true });

const codeOf = refusalCode;

async function session(mode: "plan" | "agent", approvers: string[] = []) {
  const ws = stack.newWorkspace(`b-${Math.random().toString(36).slice(2, 8)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "b", workspaceRoot: ws });
  await addMembers(stack, project.id, approvers);
  const s = await alice.call("session.create", { projectId: project.id, mode, approvers });
  return { ws, s, alice };
}

function submit(a: TurnAssignment, title = "P") {
  return stack.agentClient.call("tools.execute", {
    sessionId: a.sessionId,
    turnId: a.turnId,
    token: a.token,
    toolCallId: `exit-${title}`,
    tool: "ExitPlanMode",
    args: { title, markdown: `# ${title}\n`, question: "ok?" },
    batch: [{ toolCallId: `exit-${title}`, tool: "ExitPlanMode" }],
  });
}

describe("session boundaries", () => {
  it("one active turn: a second prompt is AGENT_BUSY; configure is blocked; idempotent retry returns the first turn", async () => {
    const { s, alice } = await session("agent");
    const first = await alice.call("session.prompt", {
      sessionId: s.id,
      text: "a",
      idempotencyKey: "k1",
    });
    expect(await codeOf(alice.call("session.prompt", { sessionId: s.id, text: "b" }))).toBe("AGENT_BUSY");
    expect(await alice.call("session.prompt", { sessionId: s.id, text: "a", idempotencyKey: "k1" })).toEqual(
      first,
    );
    expect(await codeOf(alice.call("session.configure", { sessionId: s.id, mode: "plan" }))).toBe(
      "PLAN_CONFIGURATION_BLOCKED",
    );
    const abort = await alice.call("session.abort", {
      sessionId: s.id,
    });
    expect(abort.aborted).toMatchObject({ turnId: first.turnId, code: "TURN_ABORTED" });
    const turn = (
      await stack.db.pool.query("SELECT status, error_code FROM turns WHERE id = $1", [first.turnId])
    ).rows[0];
    expect(turn).toEqual({ status: "aborted", error_code: "TURN_ABORTED" });
    // Idle again: configuration is accepted, and a configure that changes nothing too.
    const v = await alice.call("session.configure", {
      sessionId: s.id,
      mode: "plan",
      permissionMode: "auto",
    });
    expect(v).toMatchObject({ mode: "plan", permissionMode: "auto", planningState: "planning" });
    expect((await alice.call("session.configure", { sessionId: s.id, mode: "plan" })).version).toBe(
      v.version,
    );
  });

  it("while an approval is pending: prompt busy, configure blocked, a second plan refused, abort interrupts", async () => {
    const { ws, s, alice } = await session("plan");
    const a = await promptAndClaim(stack, s.id);
    const submitted = await submit(a, "First");
    expect(submitted).toMatchObject({ isError: false, terminate: true });
    // The token died when the run parked.
    expect(await codeOf(submit(a, "Second"))).toBe("TURN_TOKEN_INVALID");
    expect(await codeOf(alice.call("session.prompt", { sessionId: s.id, text: "again" }))).toBe("AGENT_BUSY");
    expect(await codeOf(alice.call("session.configure", { sessionId: s.id, permissionMode: "auto" }))).toBe(
      "PLAN_CONFIGURATION_BLOCKED",
    );
    const [pending] = (await alice.call("plans.pending", { sessionId: s.id })).proposals;
    expect(pending).toBeDefined();
    const abort = await alice.call("session.abort", {
      sessionId: s.id,
    });
    expect(abort.aborted).toMatchObject({
      code: "PLAN_APPROVAL_INTERRUPTED",
      proposalId: pending!.proposalId,
    });
    const row = (
      await stack.db.pool.query("SELECT status, error_code FROM plan_approvals WHERE id = $1", [
        pending!.proposalId,
      ])
    ).rows[0];
    expect(row).toEqual({ status: "interrupted", error_code: "PLAN_APPROVAL_INTERRUPTED" });
    expect((await alice.call("session.get", { sessionId: s.id })).mode).toBe("plan");
    const stale = alice.call("plans.resolve", {
      proposalId: pending!.proposalId,
      sessionId: s.id,
      turnId: pending!.turnId,
      toolCallId: pending!.toolCallId,
      action: "approve",
      targetPermissionMode: "auto",
    });
    expect(await codeOf(stale)).toBe("PLAN_APPROVAL_STALE");
    expect(existsSync(path.join(ws, pending!.artifactPath))).toBe(true);
  });

  it("resolve refusals in order: not found, forbidden, stale identity, invalid action, mode required/invalid; approvers may resolve", async () => {
    const { s, alice } = await session("plan", ["bob"]);
    const a = await promptAndClaim(stack, s.id);
    await submit(a, "Checks");
    const [p] = (await alice.call("plans.pending", { sessionId: s.id })).proposals;
    const base = { proposalId: p!.proposalId, sessionId: s.id, turnId: p!.turnId, toolCallId: p!.toolCallId };
    expect(
      await codeOf(alice.call("plans.resolve", { ...base, proposalId: "plan_nope", action: "approve" })),
    ).toBe("PLAN_NOT_FOUND");
    expect(
      await codeOf(
        stack
          .client("mallory")
          .call("plans.resolve", { ...base, action: "approve", targetPermissionMode: "auto" }),
      ),
    ).toBe("FORBIDDEN");
    expect(await codeOf(stack.client("mallory").call("session.get", { sessionId: s.id }))).toBe("FORBIDDEN");
    expect(
      await codeOf(
        alice.call("plans.resolve", {
          ...base,
          toolCallId: "forged",
          action: "approve",
          targetPermissionMode: "auto",
        }),
      ),
    ).toBe("PLAN_APPROVAL_STALE");
    expect(await codeOf(alice.call("plans.resolve", { ...base, action: "request-changes" }))).toBe(
      "PLAN_INVALID_ACTION",
    );
    expect(await codeOf(alice.call("plans.resolve", { ...base, action: "approve" }))).toBe(
      "PLAN_PERMISSION_MODE_REQUIRED",
    );
    expect(
      await codeOf(
        alice.call("plans.resolve", { ...base, action: "approve", targetPermissionMode: "inherit" }),
      ),
    ).toBe("PLAN_PERMISSION_MODE_INVALID");
    expect(
      await codeOf(
        alice.call("plans.resolve", { ...base, action: "approve", targetPermissionMode: "ask", version: 99 }),
      ),
    ).toBe("PLAN_APPROVAL_CONFLICT");
    // Nothing above changed the row or the session.
    const row = (
      await stack.db.pool.query("SELECT status, version FROM plan_approvals WHERE id = $1", [p!.proposalId])
    ).rows[0];
    expect(row).toEqual({ status: "pending", version: 0 });
    expect((await alice.call("session.get", { sessionId: s.id })).mode).toBe("plan");
    // bob is an approver: his approve commits; the same answer again returns the recorded result.
    const bob = stack.client("bob");
    const approved = await bob.call("plans.resolve", {
      ...base,
      action: "approve",
      targetPermissionMode: "ask",
    });
    expect(approved.status).toBe("approved");
    expect(
      await bob.call("plans.resolve", {
        ...base,
        action: "approve",
        targetPermissionMode: "ask",
      }),
    ).toMatchObject({
      status: "approved",
      executionId: approved.executionId,
    });
    expect(await codeOf(alice.call("plans.resolve", { ...base, action: "reject" }))).toBe(
      "PLAN_ALREADY_RESOLVED",
    );
    expect(
      await codeOf(alice.call("plans.resolve", { ...base, action: "approve", targetPermissionMode: "auto" })),
    ).toBe("PLAN_ALREADY_RESOLVED");
    // The execution is queued: the session is busy and configuration is blocked until it ends.
    expect(await codeOf(alice.call("session.prompt", { sessionId: s.id, text: "x" }))).toBe("AGENT_BUSY");
    expect(await codeOf(alice.call("session.configure", { sessionId: s.id, permissionMode: "auto" }))).toBe(
      "PLAN_CONFIGURATION_BLOCKED",
    );
    const abort = await alice.call("session.abort", { sessionId: s.id });
    expect(abort.aborted?.code).toBe("PLAN_EXECUTION_INTERRUPTED");
    const done = (
      await stack.db.pool.query(
        "SELECT status, execution_state, error_code FROM plan_approvals WHERE id = $1",
        [p!.proposalId],
      )
    ).rows[0];
    expect(done).toEqual({
      status: "approved",
      execution_state: "interrupted",
      error_code: "PLAN_EXECUTION_INTERRUPTED",
    });
    expect((await alice.call("session.get", { sessionId: s.id })).mode).toBe("agent");
  });

  it("malformed requests are INVALID_PARAMS and change nothing", async () => {
    const alice = stack.client("alice");
    const before = (await stack.db.pool.query("SELECT count(*)::int AS n FROM sessions")).rows[0].n;
    expect(await codeOf(alice.raw("session.create", { projectId: "a.b>" }))).toBe("INVALID_PARAMS");
    expect(await codeOf(alice.raw("session.create", { projectId: "p", mode: "chat" }))).toBe(
      "INVALID_PARAMS",
    );
    expect(await codeOf(alice.raw("session.prompt", { sessionId: "s", text: "" }))).toBe("INVALID_PARAMS");
    expect(await codeOf(alice.raw("no.such.method", {}))).toBe("UNKNOWN_METHOD");
    expect(await codeOf(alice.raw("host.hello", { protocolVersion: 999 }))).toBe("PROTOCOL_MISMATCH");
    expect(await codeOf(alice.call("projects.create", { name: "x", workspaceRoot: "/etc" }))).toBe(
      "WORKSPACE_NOT_ALLOWED",
    );
    const raw = await stack.nc.request(
      `${stack.env.prefix}.rpc.alice.session.list`,
      new TextEncoder().encode("{not json"),
    );
    expect((decodeJson(raw.data) as { error: { code: string } }).error.code).toBe("INVALID_PARAMS");
    expect((await stack.db.pool.query("SELECT count(*)::int AS n FROM sessions")).rows[0].n).toBe(before);
  });
});
