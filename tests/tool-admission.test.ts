// Admission control of tools.execute (docs/architecture.md "Tools", services/host/tool-admission.ts) over NATS
// against the real host, the test acting as the worker: with PI_TOOLS_MAX_PER_SESSION=1 a Write
// waiting on its permission prompt holds the session's slot, so a second call of that session is
// refused at once with HOST_OVERLOADED (not run, not recorded, not audited), while a retry of the
// waiting call joins it and another session is unaffected; after the prompt is answered the refused
// call's retry (same toolCallId) succeeds.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AppError } from "../services/protocol/app-error.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode, executeTool } from "./support/worker-double.ts";
import type { PermissionMode } from "../services/protocol/modes.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("tooladmit", {
  extra: { PI_TOOLS_MAX_PER_SESSION: "1", PI_TOOLS_MAX_CONCURRENT: "64" },
  host: true,
});

async function liveTurn(permissionMode: PermissionMode) {
  const ws = stack.newWorkspace(`ws-${Math.random().toString(36).slice(2, 8)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "p", workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode: "agent",
    permissionMode,
  });
  const events = stack.events(session.id);
  return { ws, session, events, assignment: await promptAndClaim(stack, session.id) };
}

const exec = (a: TurnAssignment, toolCallId: string, tool: string, args: Record<string, unknown>) =>
  executeTool(stack, a, toolCallId, tool, args);

describe("tools.execute admission", () => {
  it("a prompt holds the session's slot; a second call is HOST_OVERLOADED, retriable, unrecorded", async () => {
    const a = await liveTurn("ask");
    const first = exec(a.assignment, "w1", "Write", { path: "a.txt", content: "one" });
    const ev = await a.events.waitFor(isEvent("permission.requested", (e) => e.toolCallId === "w1"));

    // Over the per-session bound: refused at once, as a retriable error reply.
    const err = await exec(a.assignment, "w2", "Write", { path: "b.txt", content: "two" }).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("HOST_OVERLOADED");
    expect((err as AppError).retriable).toBe(true);
    expect(await refusalCode(exec(a.assignment, "r1", "Read", { path: "a.txt" }))).toBe("HOST_OVERLOADED");
    expect(existsSync(path.join(a.ws, "b.txt"))).toBe(false);
    const rows = await stack.db.pool.query(
      "SELECT tool_call_id FROM tool_calls WHERE turn_id = $1 AND tool_call_id IN ('w2', 'r1')",
      [a.assignment.turnId],
    );
    expect(rows.rows).toEqual([]);
    const audit = await stack.db.pool.query(
      "SELECT action FROM audit_log WHERE turn_id = $1 AND tool_call_id IN ('w2', 'r1')",
      [a.assignment.turnId],
    );
    expect(audit.rows).toEqual([]);

    // A retry of the waiting call joins it (coalesced), it does not count twice.
    const retry = exec(a.assignment, "w1", "Write", { path: "a.txt", content: "one" });

    // Another session is unaffected (the global bound is high).
    const b = await liveTurn("auto");
    expect(await exec(b.assignment, "w1", "Write", { path: "x.txt", content: "x" })).toMatchObject({
      isError: false,
    });
    expect(readFileSync(path.join(b.ws, "x.txt"), "utf8")).toBe("x");

    // Answer the prompt: the slot is released and the refused call's retry runs.
    await stack
      .client("alice")
      .call("permissions.resolve", { requestId: ev.requestId, decision: "allow-once" });
    expect(await first).toMatchObject({ isError: false });
    expect(await retry).toMatchObject({ isError: false });
    expect(readFileSync(path.join(a.ws, "a.txt"), "utf8")).toBe("one");
    const w1Rows = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM tool_calls WHERE turn_id = $1 AND tool_call_id = 'w1'",
      [a.assignment.turnId],
    );
    expect(w1Rows.rows[0].n).toBe(1);

    // The retry of w2 still prompts (ask) and takes the freed slot; deny it, allow it, then Read runs.
    const w2 = exec(a.assignment, "w2", "Write", { path: "b.txt", content: "two" });
    const ev2 = await a.events.waitFor(isEvent("permission.requested", (e) => e.toolCallId === "w2"));
    await stack
      .client("alice")
      .call("permissions.resolve", { requestId: ev2.requestId, decision: "allow-once" });
    expect(await w2).toMatchObject({ isError: false });
    expect(readFileSync(path.join(a.ws, "b.txt"), "utf8")).toBe("two");
    expect(await exec(a.assignment, "r1", "Read", { path: "b.txt" })).toMatchObject({ isError: false });
  });
});
