// The tool policy acceptance table (docs/architecture.md "Tools") over NATS against the real host, the test calling
// `tools.execute` directly as a worker: every tool class (plugin tools by registered risk) x both modes x the three permission modes x
// with/without a session grant x with/without a forged `requestedMode`. Each case is its own session
// and claimed turn; it asserts the decision, the code, that no file appears on a denial, and the
// exact audit rows of the call (a `tool.mode_conflict` row first when the forged mode disagrees).
// A `prompt` outcome is answered with deny, so it ends PERMISSION_DENIED and writes nothing.
// The session grant is inserted into permission_grants directly (how `allow-session` through a
// prompt creates it is covered by tests/permission-prompts.test.ts). The expected table below is
// written out by hand from docs/architecture.md "Tools", deliberately not computed with machines/tool-policy.ts.
// Also: symlinks inside the workspace that point outside are refused for Read, Write and Edit.
import { rpcClient } from "../../services/protocol/rpc-client.ts";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TurnAssignment } from "../../services/protocol/schemas.ts";
import { encodeJson } from "../../services/protocol/envelope.ts";
import { pluginWildcard } from "../../services/protocol/subjects.ts";
import { openStackDir, sandboxWorkspace, writeSandboxFile } from "../support/sandbox.ts";
import type { EventCollector } from "../support/stack.ts";
import { useStack } from "../support/stack-fixture.ts";
import { promptAndClaim } from "../support/worker-double.ts";
import { isEvent } from "../support/events.ts";

const stack = useStack("toolmatrix", {
  extra: { PI_TURN_LEASE_MS: "600000" },
  prepare: openStackDir,
  host: true,
  async setup(s) {
    // Plugin `mx`, served by the test itself: one tool per risk, each echoing its call.
    const served = s.nc.subscribe(pluginWildcard(s.env.prefix, "mx"), {
      callback: (_err, msg) => {
        pluginCalls.push(new TextDecoder().decode(msg.data));
        msg.respond(encodeJson({ result: { content: [{ type: "text", text: "echo" }] } }));
      },
    });
    await s.nc.flush();
    const tool = (name: string, risk: string) => ({ name, description: name, parameters: {}, risk });
    await s.client("alice").call("plugins.register", {
      manifest: {
        id: "mx",
        tools: [tool("mx_low", "low"), tool("mx_medium", "medium"), tool("mx_high", "high")],
      },
    });
    return () => served.unsubscribe();
  },
});

type Mode = "agent" | "plan";
type Perm = "ask" | "accept-edits" | "auto";
type Expected = { kind: "allow" } | { kind: "prompt" } | { kind: "deny"; code: string };
type ClassName =
  | "read"
  | "write"
  | "edit"
  | "bash"
  | "enter_plan"
  | "exit_plan"
  | "plugin_low"
  | "plugin_medium"
  | "plugin_high"
  | "unknown";

const ALLOW: Expected = { kind: "allow" };
const PROMPT: Expected = { kind: "prompt" };
const deny = (code: string): Expected => ({ kind: "deny", code });

/** docs/architecture.md "Tools" written out: [class][mode][permission mode] without a grant. A grant turns prompt into allow. */
const TABLE: Record<ClassName, Record<Mode, Record<Perm, Expected>>> = {
  read: {
    agent: { ask: ALLOW, "accept-edits": ALLOW, auto: ALLOW },
    plan: { ask: ALLOW, "accept-edits": ALLOW, auto: ALLOW },
  },
  write: {
    agent: { ask: PROMPT, "accept-edits": ALLOW, auto: ALLOW },
    plan: {
      ask: deny("WRITE_DISABLED_IN_PLAN"),
      "accept-edits": deny("WRITE_DISABLED_IN_PLAN"),
      auto: deny("WRITE_DISABLED_IN_PLAN"),
    },
  },
  edit: {
    agent: { ask: PROMPT, "accept-edits": ALLOW, auto: ALLOW },
    plan: {
      ask: deny("EDIT_DISABLED_IN_PLAN"),
      "accept-edits": deny("EDIT_DISABLED_IN_PLAN"),
      auto: deny("EDIT_DISABLED_IN_PLAN"),
    },
  },
  bash: {
    agent: { ask: PROMPT, "accept-edits": PROMPT, auto: ALLOW },
    plan: { ask: PROMPT, "accept-edits": PROMPT, auto: ALLOW },
  },
  enter_plan: {
    agent: { ask: ALLOW, "accept-edits": ALLOW, auto: ALLOW },
    plan: {
      ask: deny("PLAN_ALREADY_ACTIVE"),
      "accept-edits": deny("PLAN_ALREADY_ACTIVE"),
      auto: deny("PLAN_ALREADY_ACTIVE"),
    },
  },
  exit_plan: {
    agent: {
      ask: deny("PLAN_NOT_ACTIVE"),
      "accept-edits": deny("PLAN_NOT_ACTIVE"),
      auto: deny("PLAN_NOT_ACTIVE"),
    },
    plan: { ask: ALLOW, "accept-edits": ALLOW, auto: ALLOW },
  },
  plugin_low: {
    agent: { ask: ALLOW, "accept-edits": ALLOW, auto: ALLOW },
    plan: {
      ask: deny("PLUGIN_DISABLED_IN_PLAN"),
      "accept-edits": deny("PLUGIN_DISABLED_IN_PLAN"),
      auto: deny("PLUGIN_DISABLED_IN_PLAN"),
    },
  },
  plugin_medium: {
    agent: { ask: PROMPT, "accept-edits": PROMPT, auto: ALLOW },
    plan: {
      ask: deny("PLUGIN_DISABLED_IN_PLAN"),
      "accept-edits": deny("PLUGIN_DISABLED_IN_PLAN"),
      auto: deny("PLUGIN_DISABLED_IN_PLAN"),
    },
  },
  plugin_high: {
    agent: { ask: PROMPT, "accept-edits": PROMPT, auto: ALLOW },
    plan: {
      ask: deny("PLUGIN_DISABLED_IN_PLAN"),
      "accept-edits": deny("PLUGIN_DISABLED_IN_PLAN"),
      auto: deny("PLUGIN_DISABLED_IN_PLAN"),
    },
  },
  unknown: {
    agent: {
      ask: deny("TOOL_NOT_FOUND"),
      "accept-edits": deny("TOOL_NOT_FOUND"),
      auto: deny("TOOL_NOT_FOUND"),
    },
    plan: {
      ask: deny("TOOL_DISABLED_IN_PLAN"),
      "accept-edits": deny("TOOL_DISABLED_IN_PLAN"),
      auto: deny("TOOL_DISABLED_IN_PLAN"),
    },
  },
};

/**
 * The call of each class; `creates` is the file an allowed call makes (absent on every denial);
 * `effect` is the audit row an allowed call's own effect writes before its decision row.
 */
const CALLS: Record<
  ClassName,
  { tool: string; args: Record<string, unknown>; creates?: string; effect?: string }
> = {
  read: { tool: "Read", args: { path: "seed.txt" } },
  write: { tool: "Write", args: { path: "out.txt", content: "written" }, creates: "out.txt" },
  edit: { tool: "Edit", args: { path: "seed.txt", oldText: "seed", newText: "edited" } },
  bash: { tool: "Bash", args: { command: "echo ran > bash.txt" }, creates: "bash.txt" },
  enter_plan: { tool: "EnterPlanMode", args: {}, effect: "plan.enter" },
  exit_plan: {
    tool: "ExitPlanMode",
    args: { title: "A plan", markdown: "# Plan\n\n1. do it\n", question: "Proceed?" },
    effect: "plan.submit",
  },
  plugin_low: { tool: "mx_low", args: { text: "hi" } },
  plugin_medium: { tool: "mx_medium", args: { text: "hi" } },
  plugin_high: { tool: "mx_high", args: { text: "hi" } },
  unknown: { tool: "Frobnicate", args: {} },
};

/** Bodies the test's plugin `mx` received (a denied plugin call must never reach it). */
const pluginCalls: string[] = [];

interface Case {
  cls: ClassName;
  mode: Mode;
  perm: Perm;
  grant: boolean;
  forged: boolean;
}

const CASES: Case[] = [];
for (const cls of Object.keys(TABLE) as ClassName[])
  for (const mode of ["agent", "plan"] as const)
    for (const perm of ["ask", "accept-edits", "auto"] as const)
      for (const grant of [false, true])
        for (const forged of [false, true]) CASES.push({ cls, mode, perm, grant, forged });

function expectedOf(c: Case): Expected {
  const base = TABLE[c.cls][c.mode][c.perm];
  return base.kind === "prompt" && c.grant ? ALLOW : base;
}

interface AuditRow {
  action: string;
  decision: string | null;
  code: string | null;
}

async function liveTurn(mode: Mode, perm: Perm) {
  const ws = sandboxWorkspace(stack, `ws-${Math.random().toString(36).slice(2, 10)}`);
  writeSandboxFile(path.join(ws, "seed.txt"), "seed\n");
  // Twelve cases at once, each creating its project (a sandbox access check apiece), while the other
  // long files start beside this one: the host answers late, not never, so the wait is long.
  const alice = rpcClient({
    nc: stack.nc,
    prefix: stack.env.prefix,
    principal: "alice",
    timeoutMs: 60_000,
  });
  const project = await alice.call("projects.create", { name: "p", workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode,
    permissionMode: perm,
  });
  const events = stack.events(session.id);
  return { ws, session, events, assignment: await promptAndClaim(stack, session.id) };
}

function exec(
  a: TurnAssignment,
  toolCallId: string,
  tool: string,
  args: Record<string, unknown>,
  requestedMode?: Mode,
) {
  return stack.agentClient.call("tools.execute", {
    sessionId: a.sessionId,
    turnId: a.turnId,
    token: a.token,
    toolCallId,
    tool,
    args,
    batch: [{ toolCallId, tool }],
    ...(requestedMode ? { requestedMode } : {}),
  });
}

async function denyPrompt(events: EventCollector, toolCallId: string) {
  const ev = await events.waitFor(isEvent("permission.requested", (e) => e.toolCallId === toolCallId));
  await stack.client("alice").call("permissions.resolve", { requestId: ev.requestId, decision: "deny" });
}

async function runCase(c: Case): Promise<void> {
  const label = `${c.cls}/${c.mode}/${c.perm}/${c.grant ? "grant" : "no-grant"}/${c.forged ? "forged" : "honest"}`;
  const { ws, session, events, assignment } = await liveTurn(c.mode, c.perm);
  const call = CALLS[c.cls];
  if (c.grant)
    await stack.db.pool.query(
      "INSERT INTO permission_grants (session_id, tool, granted_by, created_at) VALUES ($1, $2, 'alice', now())",
      [session.id, call.tool],
    );
  const other: Mode = c.mode === "agent" ? "plan" : "agent";
  const expected = expectedOf(c);
  const pending = exec(assignment, "c1", call.tool, call.args, c.forged ? other : c.mode);
  if (expected.kind === "prompt") await denyPrompt(events, "c1");
  const result = await pending;
  events.stop();

  const rows: AuditRow[] = [];
  if (c.forged) rows.push({ action: "tool.mode_conflict", decision: null, code: null });
  if (expected.kind === "allow") {
    // Allowed by policy; Bash without a usable sandbox still ends SANDBOX_UNAVAILABLE (allowed, not run).
    const code = result.code ?? null;
    if (c.cls === "bash") expect([null, "SANDBOX_UNAVAILABLE"], label).toContain(code);
    else expect(result.isError, `${label}: ${JSON.stringify(result)}`).toBe(false);
    if (call.effect) rows.push({ action: call.effect, decision: null, code: null });
    rows.push({ action: "tool.decision", decision: "allow", code });
    if (call.creates && code === null) expect(existsSync(path.join(ws, call.creates)), label).toBe(true);
    if (c.cls.startsWith("plugin_"))
      expect(pluginCalls.filter((b) => b.includes(assignment.turnId)).length, label).toBe(1);
  } else {
    const code = expected.kind === "deny" ? expected.code : "PERMISSION_DENIED";
    expect(result, label).toMatchObject({ isError: true, code });
    if (expected.kind === "prompt")
      rows.push(
        { action: "permission.request", decision: "prompt", code: null },
        { action: "permission.resolve", decision: "deny", code: "PERMISSION_DENIED" },
      );
    rows.push({ action: "tool.decision", decision: "deny", code });
    for (const f of ["out.txt", "bash.txt"])
      expect(existsSync(path.join(ws, f)), `${label}: ${f}`).toBe(false);
    expect(readFileSync(path.join(ws, "seed.txt"), "utf8"), label).toBe("seed\n");
    expect(
      pluginCalls.filter((b) => b.includes(assignment.turnId)),
      label,
    ).toEqual([]);
  }
  const audit = await stack.db.pool.query<AuditRow>(
    "SELECT action, decision, code FROM audit_log WHERE turn_id = $1 AND tool_call_id = 'c1' ORDER BY id",
    [assignment.turnId],
  );
  expect(audit.rows, label).toEqual(rows);
}

describe("tool policy matrix (docs/architecture.md, Tools)", () => {
  it(`all ${CASES.length} cases: decision, code, no file on denial, exact audit rows`, {
    timeout: 120_000,
  }, async () => {
    const failures: string[] = [];
    const GROUP = 12;
    for (let i = 0; i < CASES.length; i += GROUP) {
      const settled = await Promise.allSettled(CASES.slice(i, i + GROUP).map(runCase));
      for (const s of settled)
        if (s.status === "rejected") failures.push(String(s.reason?.message ?? s.reason));
    }
    expect(failures).toEqual([]);
  });
});

describe("symlinks out of the workspace", () => {
  it("a link to /etc/passwd or to an outside folder is PATH_OUTSIDE_WORKSPACE for Read, Write and Edit", async () => {
    const { ws, assignment } = await liveTurn("agent", "auto");
    const outside = path.join(stack.dir, `outside-${Math.random().toString(36).slice(2, 8)}`);
    mkdirSync(outside);
    writeFileSync(path.join(outside, "secret.txt"), "secret\n");
    symlinkSync("/etc/passwd", path.join(ws, "passwd"));
    symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "secret"));
    symlinkSync(outside, path.join(ws, "out"));
    const passwd = createHash("sha256").update(readFileSync("/etc/passwd")).digest("hex");

    let n = 0;
    const refused = async (tool: string, args: Record<string, unknown>) => {
      const r = await exec(assignment, `s${++n}`, tool, args);
      expect(r, `${tool} ${JSON.stringify(args)}`).toMatchObject({
        isError: true,
        code: "PATH_OUTSIDE_WORKSPACE",
      });
      expect(JSON.stringify(r.content)).not.toContain("root:");
      expect(JSON.stringify(r.content)).not.toContain("secret\\n");
    };
    await refused("Read", { path: "passwd" });
    await refused("Read", { path: "secret" });
    await refused("Read", { path: "out/secret.txt" });
    // Write and Edit only through links to files this test owns: nothing outside may change.
    await refused("Write", { path: "secret", content: "pwned" });
    await refused("Write", { path: "out/new.txt", content: "pwned" });
    await refused("Write", { path: "out/secret.txt", content: "pwned" });
    await refused("Edit", { path: "secret", oldText: "secret", newText: "pwned" });
    await refused("Edit", { path: "out/secret.txt", oldText: "secret", newText: "pwned" });

    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret\n");
    expect(existsSync(path.join(outside, "new.txt"))).toBe(false);
    expect(createHash("sha256").update(readFileSync("/etc/passwd")).digest("hex")).toBe(passwd);
  });
});
