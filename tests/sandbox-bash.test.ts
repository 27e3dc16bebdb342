// Bash in the bubblewrap sandbox (docs/architecture.md "Tools"), over NATS against the real host with the test acting
// as the worker: it runs and writes the workspace (Agent + auto, and Plan + auto: the documented
// trade-off); every containment probe fails inside while the same probe succeeds outside; stdout
// and stderr stream separately and in order; bad timeouts spawn nothing; timeout and abort leave no
// descendant and no later output; the default timeout is configurable (60 s: tests/slow/).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  BASH_DEFAULT_TIMEOUT_MS,
  BASH_MAX_COMMAND_BYTES,
  bashDefaultTimeoutMs,
  parseBashArgs,
  runBash,
} from "../services/host/tools/bash-runner.ts";
import { createToolRunner } from "../services/host/tools/tool-runner.ts";
import { withWorkspaceLock } from "../services/host/tools/workspace-lock.ts";
import type { SessionEvent } from "../services/protocol/events.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import {
  openStackDir,
  processesWith,
  SANDBOX_USER,
  sandboxTurn,
  sandboxWorkspace,
} from "./support/sandbox.ts";
import { type EventCollector, eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import type { PermissionDecision } from "../services/protocol/permission-schemas.ts";
import { isEvent } from "./support/events.ts";

const FAST_DEFAULT_MS = 1500;
// Leases run on the host clock, which the prompt-timeout case moves by minutes.
const stack = useStack("sandboxbash", {
  extra: { PI_BASH_DEFAULT_TIMEOUT_MS: String(FAST_DEFAULT_MS), PI_TURN_LEASE_MS: String(3600_000) },
  prepare: openStackDir,
  host: true,
});

/** A setsid child, a backgrounded looping daemon and a long foreground command, all marked. */
function daemonsCommand(mark: string): string {
  return [
    `setsid bash -c 'sleep 300; : ${mark}' &`,
    `(bash -c 'while true; do echo tick; sleep 0.1; done; : ${mark}' &)`,
    `bash -c 'sleep 300; : ${mark}'`,
  ].join("\n");
}

let calls = 0;
function bash(a: TurnAssignment, args: Record<string, unknown>, toolCallId = `b${++calls}`) {
  return stack.agentClient.call("tools.execute", {
    sessionId: a.sessionId,
    turnId: a.turnId,
    token: a.token,
    toolCallId,
    tool: "Bash",
    args,
    batch: [{ toolCallId, tool: "Bash" }],
  });
}

/** The same probe, run by the test itself (root, no sandbox): it must succeed there. */
function control(command: string): { code: number; out: string } {
  try {
    return { code: 0, out: execFileSync("bash", ["-c", command], { encoding: "utf8", stdio: "pipe" }) };
  } catch (err) {
    return { code: (err as { status: number }).status ?? 1, out: "" };
  }
}

const outputsOf = (all: SessionEvent[], toolCallId: string) =>
  all.filter(isEvent("tool.output", (e) => e.toolCallId === toolCallId));

describe("Bash in the sandbox", () => {
  it("runs as the sandbox user with an empty environment and writes the workspace (Agent + auto)", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const r = await bash(assignment, { command: "echo made > made.txt; id -un; env | sort; pwd" });
    expect(r).toMatchObject({ isError: false });
    const out = String(r.details?.stdout);
    expect(out).toContain(SANDBOX_USER);
    expect(out).toContain("PATH=/usr/bin:/bin");
    expect(out).not.toMatch(/DATABASE_URL|NATS_URL|PI_PREFIX/);
    expect(out).toContain(ws);
    expect(readFileSync(path.join(ws, "made.txt"), "utf8")).toBe("made\n");
  });

  it("Plan + auto may mutate the workspace (documented trade-off) but never .pi/plan", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "plan");
    const r = await bash(assignment, { command: "echo p > from-plan.txt" });
    expect(r.isError).toBe(false);
    expect(existsSync(path.join(ws, "from-plan.txt"))).toBe(true);
    expect(existsSync(path.join(ws, ".pi/plan"))).toBe(true);
  });

  it("/dev/stdout and /dev/stderr can be opened inside, each reaching its own stream", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    const r = await bash(assignment, {
      command: "echo to-out > /dev/stdout; echo to-err > /dev/stderr; printf tee | tee /dev/stderr",
    });
    expect(r).toMatchObject({ isError: false });
    expect(r.details).toMatchObject({ stdout: "to-out\ntee", stderr: "to-err\ntee" });
  });

  it("non-zero exit is TOOL_FAILED with the exit code and both streams", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    const r = await bash(assignment, { command: "echo out; echo err >&2; exit 7" });
    expect(r).toMatchObject({ isError: true, code: "TOOL_FAILED" });
    expect(r.details).toMatchObject({ exitCode: 7, stdout: "out\n", stderr: "err\n" });
  });

  it("every containment probe fails inside the sandbox and succeeds outside it", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const hostPid = stack.host!.child.pid!;
    const tag = randomBytes(4).toString("hex");
    const sentinel = path.join(ws, "root-only.txt");
    writeFileSync(sentinel, "secret\n", { mode: 0o600 });
    chmodSync(sentinel, 0o600);
    const home = os.homedir();
    const probes: Record<string, { command: string; leaves?: string }> = {
      "postgres tcp": { command: "exec 3<>/dev/tcp/127.0.0.1/5432 && echo OPEN" },
      "postgres socket": { command: "test -S /var/run/postgresql/.s.PGSQL.5432 && echo SOCK" },
      "nats tcp": { command: "exec 3<>/dev/tcp/127.0.0.1/4222 && echo OPEN" },
      "host environ": { command: `tr '\\0' '\\n' < /proc/${hostPid}/environ | grep -q DATABASE_URL` },
      "root-only file": { command: `cat ${sentinel}` },
      "host /tmp": {
        command: `echo x > /tmp/pihost-probe-${tag} && test -e /tmp/pihost-probe-${tag}-outside`,
        leaves: `/tmp/pihost-probe-${tag}`,
      },
      "/dev/shm": {
        command: `echo x > /dev/shm/pihost-probe-${tag} && test -e /dev/shm/pihost-probe-${tag}-outside`,
        leaves: `/dev/shm/pihost-probe-${tag}`,
      },
      home: {
        command: `echo x > ${home}/pihost-probe-${tag} && test -e ${home}/pihost-probe-${tag}-outside`,
        leaves: `${home}/pihost-probe-${tag}`,
      },
      ".pi/plan": {
        command: `echo x > ${ws}/.pi/plan/evil-${tag}.md`,
        leaves: `${ws}/.pi/plan/evil-${tag}.md`,
      },
    };
    // Files that only exist outside: a write that lands in the host's /tmp, /dev/shm or home is seen.
    for (const p of [
      `/tmp/pihost-probe-${tag}`,
      `/dev/shm/pihost-probe-${tag}`,
      `${home}/pihost-probe-${tag}`,
    ])
      writeFileSync(`${p}-outside`, "");
    mkdirSync(path.join(ws, ".pi/plan"), { recursive: true });
    try {
      for (const [name, probe] of Object.entries(probes)) {
        const outside = control(probe.command);
        expect({ name, code: outside.code }).toEqual({ name, code: 0 });
        if (probe.leaves) rmSync(probe.leaves, { force: true });
        const inside = await bash(assignment, { command: probe.command });
        expect({ name, code: inside.code }).toEqual({ name, code: "TOOL_FAILED" });
        if (probe.leaves) expect({ name, left: existsSync(probe.leaves) }).toEqual({ name, left: false });
      }
    } finally {
      for (const p of [
        `/tmp/pihost-probe-${tag}`,
        `/dev/shm/pihost-probe-${tag}`,
        `${home}/pihost-probe-${tag}`,
      ])
        rmSync(`${p}-outside`, { force: true });
    }
  });

  it("streams stdout and stderr separately and in order while the command runs", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    const events = stack.events(assignment.sessionId);
    const command = "echo o1; sleep 0.4; echo e1 >&2; sleep 0.4; echo o2; sleep 0.4; echo e2 >&2; sleep 0.4";
    const started = Date.now();
    let firstOutputAt = 0;
    const call = bash(assignment, { command, timeout: 20 }, "stream-1");
    await events.waitFor(isEvent("tool.output", (e) => e.toolCallId === "stream-1"));
    firstOutputAt = Date.now();
    const r = await call;
    const doneAt = Date.now();
    expect(r.isError).toBe(false);
    expect(firstOutputAt - started).toBeLessThan(doneAt - started - 800);
    const outs = outputsOf(events.all, "stream-1").sort((a, b) => a.chunk - b.chunk);
    expect(outs.map((o) => o.chunk)).toEqual(outs.map((_, i) => i));
    expect(outs.map((o) => [o.stream, o.text])).toEqual([
      ["stdout", "o1\n"],
      ["stderr", "e1\n"],
      ["stdout", "o2\n"],
      ["stderr", "e2\n"],
    ]);
    const resultIndex = events.all.findIndex(isEvent("tool.result", (e) => e.toolCallId === "stream-1"));
    expect(resultIndex).toBeGreaterThan(events.all.indexOf(outs.at(-1)!));
    events.stop();
  });

  it("refuses out-of-range timeouts with INVALID_PARAMS before spawning anything", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const events = stack.events(assignment.sessionId);
    for (const [i, timeout] of [0, 301, 1.5, -1, "10", null].entries()) {
      const r = await bash(assignment, { command: `touch spawned-${i}; echo ran`, timeout }, `t-${i}`);
      expect(r).toMatchObject({ isError: true, code: "INVALID_PARAMS", details: { field: "timeout" } });
      expect(existsSync(path.join(ws, `spawned-${i}`))).toBe(false);
    }
    expect(events.all.filter((e) => e.type === "tool.output")).toEqual([]);
    expect((await bash(assignment, { command: "true", timeout: 300 })).isError).toBe(false);
    expect((await bash(assignment, { command: "true", timeout: 1 })).isError).toBe(false);
    events.stop();
  });

  it("refuses a command too long for exec or with a NUL with INVALID_PARAMS, spawning nothing", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const long = `touch spawned-long; echo ${"x".repeat(BASH_MAX_COMMAND_BYTES)}`;
    const tooLong = await bash(assignment, { command: long }, "long-1");
    expect(tooLong).toMatchObject({
      isError: true,
      code: "INVALID_PARAMS",
      details: { field: "command", max: BASH_MAX_COMMAND_BYTES },
    });
    const nul = await bash(assignment, { command: "touch spawned-nul\u0000; echo" }, "nul-1");
    expect(nul).toMatchObject({ isError: true, code: "INVALID_PARAMS", details: { field: "command" } });
    expect(existsSync(path.join(ws, "spawned-long"))).toBe(false);
    expect(existsSync(path.join(ws, "spawned-nul"))).toBe(false);
    // Just under the limit runs (one argument of that size is fine for exec).
    const fits = `echo ${"y".repeat(BASH_MAX_COMMAND_BYTES - 200)} | wc -c`;
    const ok = await bash(assignment, { command: fits });
    expect(ok).toMatchObject({ isError: false });
    expect(String(ok.details?.stdout).trim()).toBe(String(BASH_MAX_COMMAND_BYTES - 200 + 1));
  });

  it("a timeout ends the command and every descendant, and nothing is reported after it", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    const events = stack.events(assignment.sessionId);
    const mark = `pihostmark${randomBytes(4).toString("hex")}`;
    const command = daemonsCommand(mark);
    const t0 = Date.now();
    const r = await bash(assignment, { command, timeout: 1 }, "to-1");
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(r).toMatchObject({ isError: true, code: "TOOL_TIMEOUT", details: { timeoutMs: 1000 } });
    expect(processesWith(mark)).toEqual([]);
    const seen = outputsOf(events.all, "to-1").length;
    expect(seen).toBeGreaterThan(0);
    await new Promise((res) => setTimeout(res, 600));
    expect(outputsOf(events.all, "to-1").length).toBe(seen);
    const resultIndex = events.all.findIndex(isEvent("tool.result", (e) => e.toolCallId === "to-1"));
    expect(events.all.slice(resultIndex).filter((e) => e.type === "tool.output")).toEqual([]);
    events.stop();
  });

  it("the default timeout comes from PI_BASH_DEFAULT_TIMEOUT_MS (60 s when unset)", async () => {
    expect(BASH_DEFAULT_TIMEOUT_MS).toBe(60_000);
    expect(bashDefaultTimeoutMs({})).toBe(60_000);
    expect(parseBashArgs({ command: "x" }, bashDefaultTimeoutMs({}))).toEqual({
      command: "x",
      timeoutMs: 60_000,
    });
    const { assignment } = await sandboxTurn(stack, "agent");
    const t0 = Date.now();
    const r = await bash(assignment, { command: "sleep 30" });
    expect(r).toMatchObject({ code: "TOOL_TIMEOUT", details: { timeoutMs: FAST_DEFAULT_MS } });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(FAST_DEFAULT_MS - 50);
  });

  it("session.abort ends a running command and every descendant over NATS; nothing is reported after", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    const events = stack.events(assignment.sessionId);
    const mark = `pihostmark${randomBytes(4).toString("hex")}`;
    const command = daemonsCommand(mark);
    const call = bash(assignment, { command, timeout: 120 }, "abort-1");
    await eventually(
      async () => outputsOf(events.all, "abort-1").length > 0 && processesWith(mark).length >= 2,
      10_000,
      "daemons",
    );
    const t0 = Date.now();
    await stack.client("alice").call("session.abort", { sessionId: assignment.sessionId });
    const r = await call.catch((e) => e);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(r?.code === "TURN_ABORTED" || r?.code === "TURN_TOKEN_INVALID").toBe(true);
    await eventually(async () => processesWith(mark).length === 0, 5_000, "no descendants");
    const seen = outputsOf(events.all, "abort-1").length;
    await new Promise((res) => setTimeout(res, 600));
    expect(outputsOf(events.all, "abort-1").length).toBe(seen);
    events.stop();
  });
});

describe("Plan + ask: Bash waits for a person", () => {
  const requested = (events: EventCollector, toolCallId: string) =>
    events.waitFor(isEvent("permission.requested", (e) => e.toolCallId === toolCallId));

  it("a prompt appears; deny stops it; allow-once runs it; no answer times out to a denial", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "plan", "ask");
    const events = stack.events(assignment.sessionId);
    const alice = stack.client("alice");
    const answer = async (toolCallId: string, decision: PermissionDecision) => {
      const e = await requested(events, toolCallId);
      expect(e.tool).toBe("Bash");
      await alice.call("permissions.resolve", { requestId: e.requestId, decision });
    };
    const denied = bash(assignment, { command: "touch denied.txt" }, "ask-deny");
    await answer("ask-deny", "deny");
    expect((await denied).code).toBe("PERMISSION_DENIED");
    expect(existsSync(path.join(ws, "denied.txt"))).toBe(false);

    const allowed = bash(assignment, { command: "touch allowed.txt" }, "ask-allow");
    await answer("ask-allow", "allow-once");
    expect((await allowed).isError).toBe(false);
    expect(existsSync(path.join(ws, "allowed.txt"))).toBe(true);

    const silent = bash(assignment, { command: "touch silent.txt" }, "ask-silent");
    await requested(events, "ask-silent");
    await stack.hook("clock.advance", { ms: 121_000 });
    expect((await silent).code).toBe("PERMISSION_TIMEOUT");
    expect(existsSync(path.join(ws, "silent.txt"))).toBe(false);
    events.stop();
  });
});

describe("the sandbox runner directly", () => {
  const settings = () => ({ user: SANDBOX_USER, dataDir: stack.env.dataDir });

  it("an abort ends the command and every descendant; nothing is reported after the result", async () => {
    const ws = sandboxWorkspace(stack, "direct-abort");
    const mark = `pihostmark${randomBytes(4).toString("hex")}`;
    const ac = new AbortController();
    const outputs: string[] = [];
    let returned = false;
    let lateOutput = false;
    const run = runBash(
      {
        command: `setsid bash -c 'sleep 300; : ${mark}' & (bash -c 'while :; do echo tick; sleep 0.1; done; : ${mark}' &); sleep 300`,
      },
      {
        workspace: ws,
        sessionId: "ses_directabort",
        settings: settings(),
        signal: ac.signal,
        onOutput: (_s, t) => {
          if (returned) lateOutput = true;
          outputs.push(t);
        },
      },
    );
    await eventually(async () => outputs.length > 0 && processesWith(mark).length >= 2, 10_000, "daemons");
    ac.abort();
    const r = await run;
    returned = true;
    expect(r).toMatchObject({ isError: true, code: "TURN_ABORTED" });
    expect(processesWith(mark)).toEqual([]);
    await new Promise((res) => setTimeout(res, 500));
    expect(lateOutput).toBe(false);
  });

  it("a missing sandbox user or a bwrap that cannot start is SANDBOX_UNAVAILABLE and runs nothing", async () => {
    const ws = sandboxWorkspace(stack, "direct-unavailable");
    const noUser = await runBash(
      { command: "touch ran" },
      { workspace: ws, settings: { ...settings(), user: "pihost-no-such-user" } },
    );
    expect(noUser).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE" });
    // A workspace the sandbox user cannot even reach: bwrap fails before the command starts.
    const hidden = path.join(stack.dir, "hidden");
    mkdirSync(path.join(hidden, "ws"), { recursive: true });
    chmodSync(hidden, 0o700);
    const outputs: string[] = [];
    const noStart = await runBash(
      { command: "echo ran; touch ran" },
      { workspace: path.join(hidden, "ws"), settings: settings(), onOutput: (_s, t) => outputs.push(t) },
    );
    expect(noStart).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE" });
    expect(outputs).toEqual([]);
    expect(existsSync(path.join(ws, "ran"))).toBe(false);
    expect(existsSync(path.join(hidden, "ws", "ran"))).toBe(false);
  });

  it("a Read racing a Bash that swaps a symlink to outside never reads outside; a Write waits for the Bash", async () => {
    const ws = sandboxWorkspace(stack, "direct-lock");
    writeFileSync(path.join(ws, "a.txt"), "inside\n");
    // Built once like the host's, with scratch in the stack; the workspace comes with each call.
    const runner = createToolRunner({ sandbox: settings(), bashDefaultTimeoutMs: 60_000 });
    const ctx = { workspaceRoot: ws, sessionId: "ses_directlock" };
    // Read takes no workspace lock: it runs as the sandbox user, in a sandbox bound to the workspace.
    const bash = runner.run(
      "Bash",
      { command: "for i in $(seq 1 300); do ln -sfn /etc/passwd a-link; ln -sfn a.txt a-link; done" },
      ctx,
    );
    const seen: string[] = [];
    for (let i = 0; i < 25; i++)
      seen.push(
        await runner.run("Read", { path: "a-link" }, ctx).then(
          (r) => r.content.map((c) => c.text).join(""),
          (err: { code?: string }) => String(err.code),
        ),
      );
    expect((await bash).isError).toBe(false);
    expect(seen.some((t) => t.includes("root:"))).toBe(false);
    // Write still waits for the workspace's running Bash command.
    const order: string[] = [];
    const slow = runner
      .run("Bash", { command: "sleep 0.6; echo late > w.txt" }, ctx)
      .then(() => order.push("bash"));
    await new Promise((res) => setTimeout(res, 150));
    const write = runner
      .run("Write", { path: "w.txt", content: "write\n" }, ctx)
      .then(() => order.push("write"));
    await Promise.all([slow, write]);
    expect(order).toEqual(["bash", "write"]);
    expect(readFileSync(path.join(ws, "w.txt"), "utf8")).toBe("write\n");
  });

  it("file tools wait for the workspace's running Bash command (one lock per workspace)", async () => {
    const order: string[] = [];
    const slow = withWorkspaceLock("/ws-lock-test", async () => {
      order.push("bash start");
      await new Promise((res) => setTimeout(res, 200));
      order.push("bash end");
    });
    const file = withWorkspaceLock("/ws-lock-test", async () => {
      order.push("read");
    });
    await Promise.all([slow, file]);
    expect(order).toEqual(["bash start", "bash end", "read"]);
  });
});
