// The CLI on a real terminal (tmux), as a person uses it: a permission prompt answered inline while
// `pihost prompt` follows the turn, Ctrl-C at that question (left pending, exit 130), the mode
// question of `plans approve` with Ask preselected, the refusal to approve without a mode when no
// terminal can ask, and colour only on a terminal and never with NO_COLOR.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SessionView } from "../services/protocol/schemas.ts";
import type { ScriptStep } from "../services/protocol/values.ts";
import { pihost } from "./support/cli.ts";
import { exitPlanStep, newPlanSession } from "./support/plans.ts";
import { REPO_ROOT } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("cli-tty", { host: true, worker: true });
const SOCKET = `pihost-tty-${process.pid}`;
const MAIN = path.join(REPO_ROOT, "services/cli/main.ts");
const ESC = String.fromCharCode(27);

function tmux(...args: string[]): string {
  return execFileSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8" });
}

/** Runs `pihost <args>` in a fresh tmux window; `EXIT=<code>` is printed when it ends. */
function terminal(name: string, args: string[], env: Record<string, string> = {}) {
  const vars = {
    NATS_URL: stack.env.natsUrl,
    PI_PREFIX: stack.env.prefix,
    PI_PRINCIPAL: "alice",
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    TERM: "xterm-256color",
    ...env,
  };
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = `env -i ${Object.entries(vars)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(
      " ",
    )} ${quote(process.execPath)} --import tsx ${quote(MAIN)} ${args.map(quote).join(" ")}; echo EXIT=$?; sleep 600`;
  tmux("new-session", "-d", "-s", name, "-x", "220", "-y", "60", "-c", REPO_ROOT, command);
  const screen = (escapes = false) =>
    tmux("capture-pane", "-p", "-J", ...(escapes ? ["-e"] : []), "-t", name, "-S", "-500");
  return {
    screen,
    keys: (...keys: string[]) => tmux("send-keys", "-t", name, ...keys),
    async shows(re: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const m = screen().match(re);
        if (m) return m;
        if (Date.now() > until) throw new Error(`the terminal never showed ${re}:\n${screen()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

afterEach(() => {
  try {
    tmux("kill-server");
  } catch {
    // no server left
  }
});

async function agentSession(script: ScriptStep[]): Promise<SessionView> {
  const alice = stack.client("alice");
  const ws = stack.newWorkspace(`tty-${Math.random().toString(36).slice(2, 8)}`);
  const project = await alice.call("projects.create", { name: "tty", workspaceRoot: ws });
  return alice.call("session.create", {
    projectId: project.id,
    mode: "agent",
    permissionMode: "ask",
    model: { provider: "scripted", model: "script", script },
  });
}

const BASH: ScriptStep[] = [
  { toolCalls: [{ name: "Bash", args: { command: "echo from-the-sandbox" } }] },
  { text: "Finished." },
];

describe("on a terminal", () => {
  it("a permission prompt is asked inline while following; the answer lets the turn finish", async () => {
    const s = await agentSession(BASH);
    const t = terminal("inline", ["prompt", s.id, "run it"]);
    await t.shows(
      /req_\S+ answer \[a\] allow once, \[s\] allow for the session, \[d\] deny, \[l\] later \(no default\):/,
    );
    // Enter alone answers nothing: the question comes back.
    t.keys("Enter");
    await t.shows(/type a, s, d or l/);
    t.keys("a", "Enter");
    await t.shows(/EXIT=0/);
    const screen = t.screen();
    expect(screen).toMatch(/^permission needed: Bash \(\w+\) /m);
    expect(screen).toMatch(/^answered req_\S+: allow-once$/m);
    expect(screen).toMatch(/^ {2}\| from-the-sandbox$/m);
    expect(screen).toMatch(/^turn ended: turn_\S+ completed$/m);
    // On a terminal the prompt stands out (colour); NO_COLOR is the next test.
    expect(t.screen(true)).toMatch(
      new RegExp(`${ESC}\\[[0-9;]*m(${ESC}\\[[0-9;]*m)*permission needed: Bash`),
    );
  });

  it("Ctrl-C at the question leaves the prompt pending on the host and stops (exit 130); no colour under NO_COLOR", async () => {
    const s = await agentSession(BASH);
    const t = terminal("ctrlc", ["prompt", s.id, "run it"], { NO_COLOR: "1" });
    const m = await t.shows(/(req_\S+) answer \[a\]/);
    t.keys("C-c");
    await t.shows(/EXIT=130/);
    expect(t.screen()).toContain(`left pending: ${m[1]}`);
    expect(t.screen(true)).not.toContain(ESC);
    const { requests } = await stack.client("alice").call("permissions.pending", { sessionId: s.id });
    expect(requests.map((r) => r.requestId)).toEqual([m[1]]);
    await stack.client("alice").call("session.abort", { sessionId: s.id });
  });

  it("end of input (Ctrl-D) at the question leaves the prompt pending and keeps following", async () => {
    const s = await agentSession(BASH);
    const t = terminal("eof", ["prompt", s.id, "run it"]);
    const m = await t.shows(/(req_\S+) answer \[a\]/);
    t.keys("C-d");
    await t.shows(/left pending \(end of input\): req_/);
    // Still following: answered elsewhere, the turn ends here.
    const other = await pihost(stack, ["permissions", "allow", m[1]!]);
    expect(other.code).toBe(0);
    await t.shows(/EXIT=0/);
    expect(t.screen()).toMatch(/^turn ended: turn_\S+ completed$/m);
  });

  it("plans approve shows the plan and its hash, asks for the mode with Ask preselected, and Enter takes Ask", async () => {
    const { session } = await newPlanSession(stack, "tty-plan", [
      exitPlanStep("Greeting plan"),
      { text: "Ran." },
    ]);
    const events = stack.events(session.id);
    await stack.client("alice").call("session.prompt", { sessionId: session.id, text: "plan it" });
    const awaiting = await events.waitFor(isEvent("plan.changed", (e) => e.state === "awaiting_approval"));
    const proposal = awaiting.proposal!;

    // No terminal and no --mode: refused before anything is sent, never defaulted.
    const refused = await pihost(stack, ["plans", "approve", proposal.proposalId]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^error USAGE: approve needs --mode ask\|accept-edits\|auto; no mode is ever assumed/,
    );
    expect((await stack.client("alice").call("plans.get", { proposalId: proposal.proposalId })).status).toBe(
      "pending",
    );

    const t = terminal("approve", ["plans", "approve", proposal.proposalId]);
    await t.shows(/mode \[1-3, Enter = ask\]:/);
    const screen = t.screen();
    expect(screen).toContain(`plan ${proposal.proposalId}: Greeting plan`);
    expect(screen).toMatch(/^# Greeting plan$/m);
    expect(screen).toContain(`sha256 ${proposal.sha256} matches the record`);
    expect(screen).toMatch(
      /^ {2}1\) ask +every edit and every Bash call waits for a person {2}\(preselected\)$/m,
    );
    expect(screen).toMatch(/^ {2}3\) auto +.*WARNING, Bash may change any file/m);
    t.keys("Enter");
    await t.shows(/EXIT=0/);
    expect(t.screen()).toMatch(
      new RegExp(`^plan approved: ${proposal.proposalId} \\(permission mode ask\\)`, "m"),
    );
    const after = await stack.client("alice").call("plans.get", { proposalId: proposal.proposalId });
    expect(after).toMatchObject({ status: "approved", targetPermissionMode: "ask" });
  });
});
