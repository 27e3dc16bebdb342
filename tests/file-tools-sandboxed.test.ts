// Issue #10 clauses 1 and 3, as the attacks: the file tools (Read, Glob, Grep, Write, Edit) run in
// the file helper, as the sandbox user inside the workspace's sandbox, never with the host's
// privileges. Through the real host with the test as the worker: links to / are not followed, the
// sandbox's own /usr is not the workspace, a root-only file stays unreadable, writes belong to the
// sandbox user, a deny-listed secret is not searched, a catastrophic regex costs only its own call,
// and Grep's time bound holds. Then createFileHelpers itself: a sandbox that cannot start is a clear
// refusal with its reason, and a killed, timed-out or aborted helper is replaced by the next call.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createFileHelpers } from "../services/host/tools/file-helper/file-helpers.ts";
import { agentClient } from "../services/protocol/rpc-client.ts";
import type { ToolExecuteResult, TurnAssignment } from "../services/protocol/schemas.ts";
import { openStackDir, processesWith, SANDBOX_USER, sandboxIds, sandboxTurn } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, refusalCode } from "./support/worker-double.ts";

const stack = useStack("filesandbox", {
  extra: { PI_TURN_LEASE_MS: String(3600_000) },
  prepare: openStackDir,
  host: true,
});

let calls = 0;
function tool(a: TurnAssignment, name: string, args: Record<string, unknown>): Promise<ToolExecuteResult> {
  return executeTool(stack, a, `f${++calls}`, name, args);
}

/** Pids of `comm` processes whose working folder is `dir` (what a tool started there and left behind). */
function processesIn(dir: string, comm: string): number[] {
  return readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        return (
          readlinkSync(`/proc/${e}/cwd`) === dir && readFileSync(`/proc/${e}/comm`, "utf8").trim() === comm
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}
const textOf = (r: ToolExecuteResult) => r.content.map((c) => c.text).join("\n");

/** Median of n sequential runs of fn, in ms. */
async function p50(n: number, fn: () => Promise<unknown>): Promise<number> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  out.sort((x, y) => x - y);
  return out[Math.floor(n / 2)]!;
}

describe("file tools through the host run as the sandbox user, in the sandbox", () => {
  it("a symlink to / inside the workspace: Read, Glob and Grep never reach the host's files", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    symlinkSync("/", path.join(ws, "link"));
    writeFileSync(path.join(ws, "mine.txt"), "only this\n");
    // Control: the host (root) itself can read the target through the link.
    expect(readFileSync(path.join(ws, "link/etc/shadow"), "utf8")).toContain("root:");
    for (const p of ["link/etc/shadow", "link/etc/passwd", "link"]) {
      const r = await tool(assignment, "Read", { path: p });
      expect({ p, code: r.code }).toEqual({ p, code: "PATH_OUTSIDE_WORKSPACE" });
    }
    const glob = await tool(assignment, "Glob", { pattern: "**" });
    expect(glob.isError).toBe(false);
    expect(textOf(glob).split("\n")).toEqual(["mine.txt"]);
    const grep = await tool(assignment, "Grep", { pattern: "^root:" });
    expect(textOf(grep)).toBe("(no matches)");
    const inLink = await tool(assignment, "Grep", { pattern: "root", path: "link/etc" });
    expect(inLink.code).toBe("PATH_OUTSIDE_WORKSPACE");
  });

  it("the sandbox's own /usr and a path above the workspace are PATH_OUTSIDE_WORKSPACE", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    for (const p of ["/usr/bin/env", "../..", "../../etc/passwd", "/etc/passwd"]) {
      const r = await tool(assignment, "Read", { path: p });
      expect({ p, code: r.code }).toEqual({ p, code: "PATH_OUTSIDE_WORKSPACE" });
    }
    const w = await tool(assignment, "Write", { path: "/tmp/escape.txt", content: "x" });
    expect(w.code).toBe("PATH_OUTSIDE_WORKSPACE");
  });

  it("a root-only file inside the workspace: Read is FILE_NOT_READABLE and Grep never prints it", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const secret = `rootsecret${randomBytes(6).toString("hex")}`;
    const file = path.join(ws, "root-only.txt");
    writeFileSync(file, `${secret}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    expect(statSync(file).uid).toBe(0);
    writeFileSync(path.join(ws, "open.txt"), `${secret}-copy\n`);
    const r = await tool(assignment, "Read", { path: "root-only.txt" });
    expect(r).toMatchObject({ isError: true, code: "FILE_NOT_READABLE" });
    expect(textOf(r)).not.toContain(secret);
    const g = await tool(assignment, "Grep", { pattern: secret });
    expect(textOf(g)).toBe(`open.txt:1:${secret}-copy`);
    const direct = await tool(assignment, "Grep", { pattern: secret, path: "root-only.txt" });
    expect(textOf(direct)).not.toContain("root-only.txt:");
    const edit = await tool(assignment, "Edit", { path: "root-only.txt", oldText: secret, newText: "x" });
    expect(edit.code).toBe("FILE_NOT_READABLE");
    expect(readFileSync(file, "utf8")).toBe(`${secret}\n`);
  });

  it("Write and Edit create files owned by the sandbox user, and never write .pi/plan", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const { uid, gid } = sandboxIds();
    const w = await tool(assignment, "Write", { path: "deep/new.txt", content: "one\n" });
    expect(w.isError).toBe(false);
    for (const p of ["deep", "deep/new.txt"]) expect(statSync(path.join(ws, p))).toMatchObject({ uid, gid });
    const e = await tool(assignment, "Edit", { path: "deep/new.txt", oldText: "one", newText: "two" });
    expect(e.isError).toBe(false);
    expect(readFileSync(path.join(ws, "deep/new.txt"), "utf8")).toBe("two\n");
    const plan = await tool(assignment, "Write", { path: ".pi/plan/forged.md", content: "x" });
    expect(plan.code).toBe("WORKSPACE_PATH_DENIED");
  });

  it("a deny-listed .env or key file with a secret is not found by a plain Grep", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const secret = `envsecret${randomBytes(6).toString("hex")}`;
    mkdirSync(path.join(ws, "sub"));
    for (const f of [".env", ".env.local", "sub/.env", "sub/server.pem", "deploy.key", "id_rsa"])
      writeFileSync(path.join(ws, f), `TOKEN=${secret}\n`);
    writeFileSync(path.join(ws, "notes.txt"), "nothing\n");
    // Control: ripgrep itself (as root, no rules) finds the secret in every one of them.
    const raw = execFileSync("/usr/bin/rg", ["--no-config", "--hidden", "-l", secret, ws], {
      encoding: "utf8",
    });
    expect(raw.trim().split("\n")).toHaveLength(6);
    for (const args of [
      { pattern: secret },
      { pattern: secret, glob: "*.pem" },
      { pattern: secret, path: "sub" },
    ]) {
      const r = await tool(assignment, "Grep", args);
      expect({ args, out: textOf(r) }).toEqual({ args, out: "(no matches)" });
    }
    expect((await tool(assignment, "Read", { path: "sub/.env" })).code).toBe("WORKSPACE_PATH_DENIED");
    expect((await tool(assignment, "Grep", { pattern: secret, path: ".env" })).code).toBe(
      "WORKSPACE_PATH_DENIED",
    );
  });

  it("the deny-list ignores case: .ENV, .Env.local, ID_RSA, Server.PEM and .GIT/objects are refused everywhere", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const secret = `casesecret${randomBytes(6).toString("hex")}`;
    const variants = [
      ".ENV",
      ".Env.local",
      "ID_RSA",
      "sub/Server.PEM",
      "Deploy.KEY",
      "ID_ED25519.pub",
      ".GIT/objects/ab/cd",
    ];
    for (const f of variants) {
      mkdirSync(path.dirname(path.join(ws, f)), { recursive: true });
      writeFileSync(path.join(ws, f), `TOKEN=${secret}\n`);
    }
    writeFileSync(path.join(ws, "notes.txt"), `${secret} is mentioned here\n`);
    // Control: ripgrep itself (as root, no rules) finds the secret in every variant and in notes.txt.
    const raw = execFileSync("/usr/bin/rg", ["--no-config", "--hidden", "-l", secret, ws], {
      encoding: "utf8",
    });
    expect(raw.trim().split("\n")).toHaveLength(variants.length + 1);
    for (const f of variants) {
      expect({ f, code: (await tool(assignment, "Read", { path: f })).code }).toEqual({
        f,
        code: "WORKSPACE_PATH_DENIED",
      });
      for (const [name, args] of [
        ["Write", { path: f, content: "x" }],
        ["Edit", { path: f, oldText: "TOKEN", newText: "x" }],
        ["Grep", { pattern: secret, path: f }],
      ] as const)
        expect({ f, name, code: (await tool(assignment, name, args)).code }).toEqual({
          f,
          name,
          code: "WORKSPACE_PATH_DENIED",
        });
    }
    for (const pattern of ["**/*", "**", ".*", "*.PEM", "**/*.pem", "ID_*", ".GIT/**"]) {
      const listed = textOf(await tool(assignment, "Glob", { pattern }));
      for (const f of variants)
        expect({ pattern, f, listed: listed.includes(path.basename(f)) }).toEqual({
          pattern,
          f,
          listed: false,
        });
    }
    for (const args of [
      { pattern: secret },
      { pattern: secret, glob: "*.PEM" },
      { pattern: secret, glob: ".ENV" },
      { pattern: secret, path: "sub" },
    ]) {
      const r = await tool(assignment, "Grep", args);
      expect({ args, out: textOf(r) }).toEqual({
        args,
        out: args.glob || args.path ? "(no matches)" : `notes.txt:1:${secret} is mentioned here`,
      });
    }
    for (const f of variants) expect(readFileSync(path.join(ws, f), "utf8")).toBe(`TOKEN=${secret}\n`);
  });

  it("a catastrophic regex costs only its own call: another session's host.hello and Read keep their latency", async () => {
    const victim = await sandboxTurn(stack, "agent");
    writeFileSync(path.join(victim.ws, "v.txt"), "victim\n");
    const attacker = await sandboxTurn(stack, "agent");
    writeFileSync(path.join(attacker.ws, "a31.txt"), `${"a".repeat(31)}!\n`);
    writeFileSync(path.join(attacker.ws, "big.txt"), `${"a".repeat(4000)}!\n`.repeat(1500));
    // Control: the same pattern in a backtracking engine on a much shorter line already takes long.
    const t = performance.now();
    /^(a+)+$/.test(`${"a".repeat(24)}!`);
    expect(performance.now() - t).toBeGreaterThan(20);
    const alice = stack.client("alice");
    const hello = () => alice.call("host.hello", { protocolVersion: 1 });
    const read = () => tool(victim.assignment, "Read", { path: "v.txt" });
    await read();
    const baseHello = await p50(15, hello);
    const baseRead = await p50(15, read);
    let running = true;
    let attacks = 0;
    const loop = (async () => {
      while (running) {
        const r = await tool(attacker.assignment, "Grep", { pattern: "^(a+)+$" });
        expect(r.isError).toBe(false);
        attacks++;
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    const busyHello = await p50(15, hello);
    const busyRead = await p50(15, read);
    running = false;
    await loop;
    expect(attacks).toBeGreaterThan(1);
    expect(busyHello).toBeLessThan(Math.max(baseHello * 5, baseHello + 200));
    expect(busyRead).toBeLessThan(Math.max(baseRead * 5, baseRead + 200));
    const one = performance.now();
    const r = await tool(attacker.assignment, "Grep", { pattern: "^(a+)+$", path: "a31.txt" });
    expect(performance.now() - one).toBeLessThan(5000);
    expect(textOf(r)).toBe("(no matches)");
  });

  it("a Grep past its time bound is TOOL_TIMEOUT, and the next Grep works", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    // A FIFO nobody writes: ripgrep named it explicitly and blocks on it until the bound (10 s).
    execFileSync("mkfifo", ["-m", "0666", path.join(ws, "stuck")]);
    writeFileSync(path.join(ws, "ok.txt"), "found me\n");
    const t0 = Date.now();
    // The host answers after Grep's 10 s bound: a client that waits longer than the stack's 10 s.
    const patient = agentClient({
      nc: stack.nc,
      prefix: stack.env.prefix,
      timeoutMs: 30_000,
    }).to(stack.agentClient.host);
    const stuck = await patient.call("tools.execute", {
      sessionId: assignment.sessionId,
      turnId: assignment.turnId,
      token: assignment.token,
      toolCallId: "stuck-1",
      tool: "Grep",
      args: { pattern: "x", path: "stuck" },
      batch: [{ toolCallId: "stuck-1", tool: "Grep" }],
    });
    expect(stuck.code).toBe("TOOL_TIMEOUT");
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(processesIn(ws, "rg")).toEqual([]);
    const next = await tool(assignment, "Grep", { pattern: "found" });
    expect(textOf(next)).toBe("ok.txt:1:found me");
    const bad = await tool(assignment, "Grep", { pattern: "(unclosed" });
    expect(bad.code).toBe("INVALID_PARAMS");
    expect(textOf(bad)).toMatch(/unclosed group/);
  });
});

describe("createFileHelpers", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-fh-"));
  chmodSync(dir, 0o711);
  const settings = { user: SANDBOX_USER, dataDir: path.join(dir, "data") };
  const { uid, gid } = sandboxIds();
  const workspace = (name: string) => {
    const ws = path.join(dir, name);
    mkdirSync(ws, { mode: 0o755 });
    execFileSync("chown", [`${uid}:${gid}`, ws]);
    return ws;
  };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const read = (p: string) => ({ op: "tool" as const, tool: "Read" as const, args: { path: p } });

  it("a sandbox that cannot start is SANDBOX_UNAVAILABLE with the sandbox's real reason", async () => {
    const closedWs = path.join(dir, "closed");
    mkdirSync(closedWs, { mode: 0o700 });
    const helpers = createFileHelpers(settings);
    const err = await helpers.call("s-closed", closedWs, read("x")).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "SANDBOX_UNAVAILABLE" });
    expect(String((err as Error).message)).toMatch(/bwrap|Permission denied|not reachable/);
    const nouser = createFileHelpers({ ...settings, user: "pihost-no-such-user" });
    expect(await refusalCode(nouser.call("s", workspace("nouser"), read("x")))).toBe("SANDBOX_UNAVAILABLE");
    expect(helpers.size() + nouser.size()).toBe(0);
    await helpers.close();
    await nouser.close();
  });

  it("one warm helper per session and workspace, LRU-bounded, replaced after a kill, a timeout or an abort", async () => {
    const ws = workspace("warm");
    writeFileSync(path.join(ws, "a.txt"), "a\n");
    execFileSync("mkfifo", ["-m", "0666", path.join(ws, "fifo")]);
    const helpers = createFileHelpers(settings, { maxHelpers: 2, grepTimeoutMs: 60_000 });
    const mine = `${settings.dataDir}/sandbox-helper/file-helper-`;
    try {
      await helpers.call("s1", ws, read("a.txt"));
      await helpers.call("s1", ws, read("a.txt"));
      expect(helpers.size()).toBe(1);
      await helpers.call("s2", ws, read("a.txt"));
      await helpers.call("s3", ws, read("a.txt"));
      expect(helpers.size()).toBe(2);
      // Killed from outside: the next call starts a new one.
      const pids = processesWith(mine);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
      await new Promise((r) => setTimeout(r, 200));
      expect((await helpers.call("s3", ws, read("a.txt"))).isError).toBe(false);
      const grepFifo = { op: "tool" as const, tool: "Grep" as const, args: { pattern: "x", path: "fifo" } };
      expect(await refusalCode(helpers.call("s3", ws, grepFifo, { timeoutMs: 300 }))).toBe("TOOL_TIMEOUT");
      expect((await helpers.call("s3", ws, read("a.txt"))).isError).toBe(false);
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 300);
      expect(await refusalCode(helpers.call("s3", ws, grepFifo, { signal: ac.signal }))).toBe("TURN_ABORTED");
      expect((await helpers.call("s3", ws, { op: "listPlanFiles" })).names).toEqual([]);
      const page = await helpers.call("s3", ws, { op: "previewFile", path: "a.txt" });
      expect({ rel: page.rel, text: page.bytes.toString() }).toEqual({ rel: "a.txt", text: "a\n" });
    } finally {
      await helpers.close();
    }
    expect(helpers.size()).toBe(0);
    expect(processesWith(mine)).toEqual([]);
  });
});
