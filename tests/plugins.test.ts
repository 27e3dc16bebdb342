// Plugins (docs/architecture.md "Processes", "Tools"; docs/protocol.md "Plugins") over NATS against the real host, the test acting
// as the worker and tests/support/echo-plugin.ts as the plugin process: registration, the risk table
// in Agent (auto, ask, low, invalid risk = medium), Plan hiding and denying plugin tools before the
// plugin receives anything (even with auto and a session grant), disable/enable taking effect at once,
// built-in names refused, and a plugin without a process.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionEvent } from "../services/protocol/events.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { type ManagedProcess, spawnTs } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode, executeTool } from "./support/worker-double.ts";
import type { PermissionMode } from "../services/protocol/modes.ts";
import { isEvent } from "./support/events.ts";

let plugin: ManagedProcess;
let pluginLog: string;

const MANIFEST = {
  id: "echo",
  name: "Echo",
  tools: [
    {
      name: "echo",
      description: "Echo the text back.",
      parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      risk: "medium",
    },
    {
      name: "peek",
      description: "Echo, harmless.",
      parameters: { type: "object", properties: { text: { type: "string" } } },
      risk: "low",
    },
    {
      name: "odd",
      description: "Echo with a risk nobody knows.",
      parameters: { type: "object", properties: { text: { type: "string" } } },
      risk: "extreme",
    },
  ],
};

const stack = useStack("plugins", {
  host: true,
  async setup(s) {
    pluginLog = path.join(s.dir, "echo-calls.jsonl");
    plugin = spawnTs("tests/support/echo-plugin.ts", {
      NATS_URL: s.env.natsUrl,
      PI_PREFIX: s.env.prefix,
      ECHO_PLUGIN_CALL_LOG: pluginLog,
    });
    await plugin.waitForEvent("plugin.ready");
    return () => plugin.stop();
  },
});

function pluginCalls(): Array<Record<string, unknown>> {
  try {
    return readFileSync(pluginLog, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

async function liveTurn(mode: "agent" | "plan", permissionMode: PermissionMode) {
  const ws = stack.newWorkspace(`ws-${Math.random().toString(36).slice(2, 8)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "p", workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode,
    permissionMode,
  });
  const events = stack.events(session.id);
  const assignment = await promptAndClaim(stack, session.id);
  return { session, assignment, events };
}

const exec = (a: TurnAssignment, toolCallId: string, tool: string, args: Record<string, unknown>) =>
  executeTool(stack, a, toolCallId, tool, args);

type Requested = SessionEvent<"permission.requested">;

describe("plugins", () => {
  it("registers a manifest with normalised risks, listed and audited", async () => {
    const view = await stack.client("alice").call("plugins.register", { manifest: MANIFEST });
    expect(view).toMatchObject({ id: "echo", name: "Echo", enabled: true, registeredBy: "alice" });
    expect(view.tools.map((t) => [t.name, t.risk])).toEqual([
      ["echo", "medium"],
      ["peek", "low"],
      ["odd", "medium"],
    ]);
    const { plugins } = await stack.client("bob").call("plugins.list", {});
    expect(plugins.map((p) => p.id)).toEqual(["echo"]);
    const audit = await stack.db.pool.query(
      "SELECT principal, details FROM audit_log WHERE action = 'plugin.register'",
    );
    expect(audit.rows).toHaveLength(1);
    expect(audit.rows[0]).toMatchObject({ principal: "alice", details: { pluginId: "echo" } });
  });

  it("refuses a built-in tool name, a duplicate and a name another plugin has", async () => {
    const tool = (name: string) => ({ name, description: "x", parameters: { type: "object" } });
    const register = (manifest: unknown) => stack.client("alice").raw("plugins.register", { manifest });
    for (const name of ["Bash", "Write", "Read", "EnterPlanMode", "BrowserPreview", "new_context"])
      expect(await refusalCode(register({ id: "bad", tools: [tool(name)] }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(register({ id: "bad", tools: [tool("a"), tool("a")] }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(register({ id: "bad", tools: [tool("echo")] }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(register({ id: "bad.id", tools: [tool("z")] }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(register({ id: "bad", tools: [] }))).toBe("INVALID_PARAMS");
    const badSchema = { name: "z", description: "x", parameters: { type: "string", pattern: "(" } };
    expect(await refusalCode(register({ id: "bad", tools: [badSchema] }))).toBe("INVALID_PARAMS");
    const rows = await stack.db.pool.query("SELECT id FROM plugins ORDER BY id");
    expect(rows.rows.map((r) => r.id)).toEqual(["echo"]);
    expect(await refusalCode(stack.client("alice").call("plugins.enable", { pluginId: "nope" }))).toBe(
      "PLUGIN_NOT_FOUND",
    );
  });

  it("arguments that do not fit the tool's schema reach neither a person nor the plugin", async () => {
    for (const permissionMode of ["auto", "ask"] as const) {
      const { assignment, events } = await liveTurn("agent", permissionMode);
      const before = pluginCalls().length;
      for (const [i, args] of [{}, { text: 5 }, { text: ["x"] }].entries()) {
        const r = await exec(assignment, `bad-${i}`, "echo", args);
        expect({ args, code: r.code }).toEqual({ args, code: "INVALID_PARAMS" });
        expect((r.details as { problems: string[] }).problems.length).toBeGreaterThan(0);
      }
      expect(pluginCalls().length).toBe(before);
      expect(events.all.filter((e) => e.type === "permission.requested")).toEqual([]);
      const audit = await stack.db.pool.query(
        "SELECT decision, code FROM audit_log WHERE turn_id = $1 AND action = 'tool.decision' ORDER BY id",
        [assignment.turnId],
      );
      expect(audit.rows).toEqual(Array(3).fill({ decision: "deny", code: "INVALID_PARAMS" }));
      events.stop();
    }
  });

  it("Agent + auto: the turn lists the plugin tools and a medium tool runs in the plugin", async () => {
    const { session, assignment } = await liveTurn("agent", "auto");
    const names = assignment.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["Read", "echo", "peek", "odd"]));
    expect(assignment.tools.find((t) => t.name === "echo")).toEqual({
      name: "echo",
      description: "Echo the text back.",
      parameters: MANIFEST.tools[0]!.parameters,
    });
    const before = pluginCalls().length;
    const result = await exec(assignment, "e1", "echo", { text: "hello" });
    expect(result).toMatchObject({ isError: false, content: [{ type: "text", text: "echo: hello" }] });
    const calls = pluginCalls().slice(before);
    expect(calls).toEqual([
      {
        tool: "echo",
        sessionId: session.id,
        turnId: assignment.turnId,
        toolCallId: "e1",
        args: { text: "hello" },
      },
    ]);
    // A retry returns the recorded result; the plugin does not run again.
    expect(await exec(assignment, "e1", "echo", { text: "hello" })).toEqual(result);
    expect(pluginCalls().length).toBe(before + 1);
  });

  it("Agent + ask: medium (and invalid risk) prompt with their risk, low runs without a prompt", async () => {
    const { session, assignment, events } = await liveTurn("agent", "ask");
    const before = pluginCalls().length;
    const low = await exec(assignment, "l1", "peek", { text: "quiet" });
    expect(low).toMatchObject({ isError: false, content: [{ type: "text", text: "peek: quiet" }] });
    expect(events.all.filter((e) => e.type === "permission.requested")).toEqual([]);

    for (const [id, tool] of [
      ["m1", "echo"],
      ["o1", "odd"],
    ] as const) {
      const call = exec(assignment, id, tool, { text: "loud" });
      const ev = await events.waitFor(isEvent("permission.requested", (e) => e.toolCallId === id));
      expect(ev).toMatchObject({ sessionId: session.id, tool, risk: "medium" });
      // Nothing reached the plugin while the prompt waits.
      expect(pluginCalls().filter((c) => c.toolCallId === id)).toEqual([]);
      const answer = await stack.client("alice").call("permissions.resolve", {
        requestId: ev.requestId,
        decision: "allow-once",
      });
      expect(answer).toMatchObject({ status: "allowed", risk: "medium" });
      expect(await call).toMatchObject({
        isError: false,
        content: [{ type: "text", text: `${tool}: loud` }],
      });
    }
    expect(
      pluginCalls()
        .slice(before)
        .map((c) => c.toolCallId),
    ).toEqual(["l1", "m1", "o1"]);
  });

  it("Plan (auto, with a session grant): hidden from the model and denied before the plugin receives anything", async () => {
    const { session, assignment, events } = await liveTurn("plan", "auto");
    const names = assignment.tools.map((t) => t.name);
    expect(names).not.toContain("echo");
    expect(names).not.toContain("peek");
    expect(names).not.toContain("odd");
    await stack.db.pool.query(
      "INSERT INTO permission_grants (session_id, tool, granted_by, created_at) VALUES ($1, 'echo', 'alice', now()), ($1, 'peek', 'alice', now())",
      [session.id],
    );
    const before = pluginCalls().length;
    for (const [id, tool] of [
      ["p1", "echo"],
      ["p2", "peek"],
      ["p3", "odd"],
    ] as const) {
      const r = await exec(assignment, id, tool, { text: "x" });
      expect(r).toMatchObject({ isError: true, code: "PLUGIN_DISABLED_IN_PLAN" });
    }
    expect(pluginCalls().length).toBe(before);
    expect(events.all.filter((e) => e.type === "permission.requested")).toEqual([]);
    const rec = await stack.db.pool.query(
      "SELECT decision, code FROM tool_calls WHERE turn_id = $1 ORDER BY tool_call_id",
      [assignment.turnId],
    );
    expect(rec.rows).toEqual([
      { decision: "deny", code: "PLUGIN_DISABLED_IN_PLAN" },
      { decision: "deny", code: "PLUGIN_DISABLED_IN_PLAN" },
      { decision: "deny", code: "PLUGIN_DISABLED_IN_PLAN" },
    ]);
  });

  it("disable takes effect at once (TOOL_NOT_FOUND, not offered); enable brings it back", async () => {
    const { assignment } = await liveTurn("agent", "auto");
    const off = await stack.client("alice").call("plugins.disable", { pluginId: "echo" });
    expect(off.enabled).toBe(false);
    const before = pluginCalls().length;
    expect(await exec(assignment, "d1", "echo", { text: "x" })).toMatchObject({
      isError: true,
      code: "TOOL_NOT_FOUND",
    });
    expect(pluginCalls().length).toBe(before);

    const next = await liveTurn("agent", "auto");
    expect(next.assignment.tools.map((t) => t.name)).not.toContain("echo");
    const plan = await liveTurn("plan", "auto");
    expect(await exec(plan.assignment, "d2", "echo", { text: "x" })).toMatchObject({
      isError: true,
      code: "TOOL_DISABLED_IN_PLAN",
    });

    await stack.client("alice").call("plugins.enable", { pluginId: "echo" });
    expect(await exec(assignment, "d3", "echo", { text: "back" })).toMatchObject({
      isError: false,
      content: [{ type: "text", text: "echo: back" }],
    });
    expect(pluginCalls().length).toBe(before + 1);
    const audit = await stack.db.pool.query(
      "SELECT action FROM audit_log WHERE action IN ('plugin.disable', 'plugin.enable') ORDER BY id",
    );
    expect(audit.rows.map((r) => r.action)).toEqual(["plugin.disable", "plugin.enable"]);
  });

  it("a plugin without a process: PLUGIN_UNAVAILABLE", async () => {
    await stack.client("alice").call("plugins.register", {
      manifest: {
        id: "ghost",
        tools: [{ name: "boo", description: "nobody serves this", parameters: {}, risk: "low" }],
      },
    });
    const { assignment } = await liveTurn("agent", "ask");
    expect(await exec(assignment, "g1", "boo", {})).toMatchObject({
      isError: true,
      code: "PLUGIN_UNAVAILABLE",
    });
  });
});
