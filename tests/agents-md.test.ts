// Issue #13 clause 6: a project's AGENTS.md at the workspace root is appended to the system prompt of
// every turn, read at each claim by the session's sandboxed file helper as the sandbox user, confined
// to the workspace and bounded. Through the real host with the test as the worker: the text reaches
// Agent, Plan and execution turns and EnterPlanMode's next prompt; links to /etc/passwd or out of the
// workspace bring nothing; a root-only file is no instructions; 100 KiB is cut to 16 KiB with the marker.
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { decodeJson } from "../services/protocol/envelope.ts";
import type { TurnAssignment, TurnOffer } from "../services/protocol/schemas.ts";
import { agentSubject } from "../services/protocol/subjects.ts";
import { openStackDir, sandboxWorkspace, writeSandboxFile } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, promptAndClaim } from "./support/worker-double.ts";

const stack = useStack("agentsmd", {
  extra: { PI_TURN_LEASE_MS: String(3600_000) },
  prepare: openStackDir,
  host: true,
});

const HEADING = "## Project instructions (AGENTS.md)";
const CUT_MARKER = "[AGENTS.md was cut here: only its first 16384 bytes are shown]";
/** Sentences the Plan prompt must say (the full list is in prompt-composition.test.ts). */
const PLAN_SENTENCES = [
  /Inspect the relevant files, tests and docs/,
  /Submit one complete Markdown plan with ExitPlanMode/,
  /as the only call of its batch/,
  /Never claim the plan was executed/,
  /Write, Edit and plugin tools are unavailable/,
];

const tag = () => randomBytes(6).toString("hex");

/** A session of alice's new project on a sandbox-owned workspace, prepared by `prepare` before any claim. */
async function sessionOn(mode: "agent" | "plan", prepare: (ws: string) => void) {
  const ws = sandboxWorkspace(stack, `ws-${mode}-${tag()}`);
  prepare(ws);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "p", workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode,
    permissionMode: "auto",
  });
  return { ws, session };
}

async function claimIn(mode: "agent" | "plan", prepare: (ws: string) => void): Promise<TurnAssignment> {
  const { session } = await sessionOn(mode, prepare);
  return promptAndClaim(stack, session.id);
}

const endTurn = (a: TurnAssignment) =>
  stack.agentClient.call("turn.end", { turnId: a.turnId, token: a.token, status: "completed" });

describe("AGENTS.md in the claimed turn's system prompt", () => {
  it("its text is appended under the heading in Agent and in Plan, and re-read at the next claim", async () => {
    const secret = `agents-${tag()}`;
    const text = `# Project rules\n\nRun npm test before you finish. (${secret})\n`;
    const agent = await claimIn("agent", (ws) => writeSandboxFile(path.join(ws, "AGENTS.md"), text));
    expect(agent.systemPrompt).toContain(`${HEADING}\n`);
    expect(agent.systemPrompt).toContain(`Run npm test before you finish. (${secret})`);
    expect(agent.systemPrompt).toMatch(/call EnterPlanMode alone/);
    expect(agent.systemPrompt).not.toContain(CUT_MARKER);

    const { ws, session } = await sessionOn("plan", (w) => writeSandboxFile(path.join(w, "AGENTS.md"), text));
    const plan = await promptAndClaim(stack, session.id);
    for (const s of PLAN_SENTENCES) expect(plan.systemPrompt).toMatch(s);
    expect(plan.systemPrompt).toContain(`${HEADING}\n`);
    expect(plan.systemPrompt).toContain(secret);
    expect(plan.tools.map((t) => t.name)).not.toContain("Write");

    // Edited between turns: the next claim has the new text, not the old.
    await endTurn(plan);
    const edited = `edited-${tag()}`;
    writeSandboxFile(path.join(ws, "AGENTS.md"), `Now: ${edited}\n`);
    const next = await promptAndClaim(stack, session.id, "again");
    expect(next.systemPrompt).toContain(edited);
    expect(next.systemPrompt).not.toContain(secret);
  });

  it("no AGENTS.md, or one only root may read: no instructions, and the claim still succeeds", async () => {
    const none = await claimIn("agent", () => {});
    expect(none.systemPrompt).not.toContain(HEADING);
    const secret = `rootonly-${tag()}`;
    const rootOnly = await claimIn("agent", (ws) => {
      const file = path.join(ws, "AGENTS.md");
      writeFileSync(file, `${secret}\n`);
      chmodSync(file, 0o600);
    });
    expect(rootOnly.systemPrompt).not.toContain(secret);
    expect(rootOnly.systemPrompt).not.toContain(HEADING);
    expect(rootOnly.systemPrompt).toBe(none.systemPrompt);
  });

  it("a symlinked AGENTS.md (to /etc/passwd, to a readable file outside the workspace) brings nothing in", async () => {
    const toPasswd = await claimIn("agent", (ws) => symlinkSync("/etc/passwd", path.join(ws, "AGENTS.md")));
    expect(toPasswd.systemPrompt).not.toMatch(/root:x?:0:0/);
    expect(toPasswd.systemPrompt).not.toContain(HEADING);

    // A file the sandbox user could read, but outside the workspace: confinement, not permissions, refuses it.
    const secret = `outside-${tag()}`;
    const outsideDir = path.join(stack.dir, `outside-${tag()}`);
    mkdirSync(outsideDir, { mode: 0o755 });
    const outside = path.join(outsideDir, "notes.md");
    writeFileSync(outside, `${secret}\n`, { mode: 0o644 });
    const toOutside = await claimIn("agent", (ws) => symlinkSync(outside, path.join(ws, "AGENTS.md")));
    expect(toOutside.systemPrompt).not.toContain(secret);
    expect(toOutside.systemPrompt).not.toContain(HEADING);
    // ... and a link through a linked folder is refused the same way.
    const throughDir = await claimIn("plan", (ws) => {
      mkdirSync(path.join(ws, "docs"));
      symlinkSync(outsideDir, path.join(ws, "docs", "out"));
      symlinkSync("docs/out/notes.md", path.join(ws, "AGENTS.md"));
    });
    expect(throughDir.systemPrompt).not.toContain(secret);
    for (const s of PLAN_SENTENCES) expect(throughDir.systemPrompt).toMatch(s);
  });

  it("a 100 KiB AGENTS.md is cut to 16 KiB with the visible marker", async () => {
    const line = `${"abcdefghij".repeat(9)}é\n`; // 93 bytes, a 2-byte character in each line
    const big = line.repeat(Math.ceil((100 * 1024) / Buffer.byteLength(line)));
    expect(Buffer.byteLength(big)).toBeGreaterThanOrEqual(100 * 1024);
    const a = await claimIn("agent", (ws) => writeSandboxFile(path.join(ws, "AGENTS.md"), big));
    const start = a.systemPrompt.indexOf(`${line}`);
    const cut = a.systemPrompt.indexOf(`\n\n${CUT_MARKER}`);
    expect(start).toBeGreaterThan(0);
    expect(cut).toBeGreaterThan(start);
    const kept = a.systemPrompt.slice(start, cut);
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(16 * 1024);
    expect(Buffer.byteLength(kept)).toBeGreaterThan(16 * 1024 - 2);
    expect(big.startsWith(kept)).toBe(true);
    expect(a.systemPrompt.endsWith(CUT_MARKER)).toBe(true);
  });

  it("EnterPlanMode's next prompt is the Plan prompt with the instructions; the execution turn says it executes the plan", async () => {
    const secret = `enter-${tag()}`;
    const { session } = await sessionOn("agent", (ws) =>
      writeSandboxFile(path.join(ws, "AGENTS.md"), `Keep ${secret} in mind.\n`),
    );
    const a = await promptAndClaim(stack, session.id);
    const entered = await executeTool(stack, a, "e1", "EnterPlanMode", {});
    expect(entered.isError).toBe(false);
    const next = entered.next!;
    expect(next.mode).toBe("plan");
    for (const s of PLAN_SENTENCES) expect(next.systemPrompt).toMatch(s);
    expect(next.systemPrompt).toContain(`${HEADING}\n`);
    expect(next.systemPrompt).toContain(secret);
    expect(next.tools.map((t) => t.name)).toContain("ExitPlanMode");
    expect(next.tools.map((t) => t.name)).not.toContain("EnterPlanMode");

    // The run submits its plan; once approved, the execution turn's prompt says it executes it.
    const submitted = await executeTool(stack, a, "x1", "ExitPlanMode", {
      title: "Greet",
      markdown: "# Greet\n\n1. Write greeting.txt.\n",
      question: "Greet?",
    });
    expect(submitted.isError).toBe(false);
    const [proposal] = (
      await stack.db.pool.query(
        "SELECT id, turn_id, tool_call_id FROM plan_approvals WHERE session_id = $1",
        [session.id],
      )
    ).rows as Array<{ id: string; turn_id: string; tool_call_id: string }>;
    const offers = stack.nc.subscribe(agentSubject(stack.env.prefix, "offer"));
    let executionTurnId = "";
    try {
      await stack.nc.flush();
      const approved = await stack.client("alice").call("plans.resolve", {
        proposalId: proposal!.id,
        sessionId: session.id,
        turnId: proposal!.turn_id,
        toolCallId: proposal!.tool_call_id,
        action: "approve",
        targetPermissionMode: "auto",
      });
      expect(approved.status).toBe("approved");
      for await (const m of offers) {
        const offer = decodeJson(m.data) as TurnOffer;
        if (offer.sessionId === session.id) {
          executionTurnId = offer.turnId;
          break;
        }
      }
    } finally {
      offers.unsubscribe();
    }
    const execution = await stack.agentClient.call("claim", {
      turnId: executionTurnId,
      workerId: "testworker",
    });
    expect(execution.kind).toBe("execution");
    expect(execution.systemPrompt).toMatch(/This turn executes a plan a person approved/);
    expect(execution.systemPrompt).toContain(secret);
    expect(execution.tools.map((t) => t.name)).toContain("Write");
  });
});
