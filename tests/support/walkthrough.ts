// README.md's walk-through, run as written with `bash -euo pipefail` against a real host and agent
// worker (own database, own subject prefix): how they are started is the caller's (tsx from the
// sources in tests/slow/readme-walkthrough.test.ts, the production build in tests/slow/deploy-build.test.ts).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type ManagedProcess, REPO_ROOT, type StackEnv } from "./processes.ts";
import { fencedBlock } from "./readme.ts";
import { useStack } from "./stack-fixture.ts";

const HEADING = "## Walk-through";
const SCRIPT_HEADING = "### The script";

/** README.md's walk-through: the watch for the second terminal and the script; missing ones fail. */
function loadWalkthrough(): { source: string; watch: string; script: string } {
  const readme = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
  const watch = fencedBlock(readme, HEADING);
  const script = fencedBlock(readme, SCRIPT_HEADING);
  if (watch === null) throw new Error(`README.md has no \`\`\`sh block under ${HEADING}`);
  if (script === null) throw new Error(`README.md has no \`\`\`sh block under ${SCRIPT_HEADING}`);
  if (watch === script) throw new Error("README.md's walk-through has no watch block before the script");
  return { source: "README.md", watch, script };
}

interface Bash {
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
  output(): string;
  /** Ends it (and everything it started) as Ctrl-C in its terminal would, then SIGKILL. */
  stop(): Promise<void>;
}

function startBash(script: string, env: Record<string, string>, timeoutMs: number): Bash {
  let out = "";
  let child: ReturnType<typeof spawn> | null = null;
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child = spawn("bash", ["-euo", "pipefail", "-c", script], {
      cwd: REPO_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // own process group, so a timeout kills npx, node and tsx beneath it too
    });
    let stdout = "";
    let stderr = "";
    const c = child;
    c.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      out = stdout;
    });
    c.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      stderr += `\n[test] walk-through timed out after ${timeoutMs} ms\n`;
      if (c.pid !== undefined) process.kill(-c.pid, "SIGKILL");
    }, timeoutMs);
    c.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return {
    done,
    output: () => out,
    async stop() {
      const pid = child?.pid;
      if (pid === undefined) return;
      try {
        process.kill(-pid, "SIGINT");
      } catch {
        return; // already gone
      }
      const killer = setTimeout(() => {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {}
      }, 5_000);
      await done;
      clearTimeout(killer);
    },
  };
}

/** How a walk-through's host and worker are started. */
export interface WalkthroughProcesses {
  host: (s: StackEnv) => ManagedProcess;
  worker: (s: StackEnv) => ManagedProcess;
}

/** The walk-through as one test under `name`, against the host and worker `processes` starts. */
export function describeWalkthrough(name: string, processes: WalkthroughProcesses): void {
  describe(name, () => {
    walkthroughTest(processes);
  });
}

function walkthroughTest(processes: WalkthroughProcesses): void {
  const walkthrough = loadWalkthrough();
  let dir: string;
  let tmp: string;
  let stack: StackEnv;
  let logs: () => string = () => "";

  useStack("readme", {
    timeoutMs: 90_000,
    prepare(s) {
      // The script's `mktemp -d` lands here (TMPDIR), the only folder projects may use.
      dir = s.dir;
      tmp = path.join(dir, "tmp");
      mkdirSync(tmp);
      s.env.workspaceRoots = [tmp];
      s.env.callLog = undefined;
      stack = s.env;
    },
    async setup() {
      const host = processes.host(stack);
      const worker = processes.worker(stack);
      logs = () =>
        `--- host (last 30 lines)\n${host.lines.slice(-30).join("\n")}\n--- worker (last 30 lines)\n${worker.lines.slice(-30).join("\n")}`;
      const stopBoth = async () => {
        // SIGTERM first, so both end as they would under a service manager.
        await Promise.all([host.stop(), worker.stop()]);
      };
      try {
        await Promise.all([
          host.waitForEvent("host.ready", 60_000),
          worker.waitForEvent("worker.ready", 60_000),
        ]);
      } catch (err) {
        await stopBoth();
        throw err;
      }
      return stopBoth;
    },
  });

  it(`runs as written (${walkthrough.source})`, { timeout: 300_000 }, async () => {
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? dir,
      TMPDIR: tmp,
      NATS_URL: stack.natsUrl,
      PI_PREFIX: stack.prefix,
      PI_PRINCIPAL: "alice",
    };
    // The second terminal: the watch runs first and the whole time.
    const watch = startBash(walkthrough.watch, env, 280_000);
    let r: Awaited<Bash["done"]>;
    try {
      for (let i = 0; !watch.output().includes("watching all your sessions"); i++) {
        if (i > 600) throw new Error(`the watch never started:\n${watch.output()}`);
        await new Promise((res) => setTimeout(res, 100));
      }
      r = await startBash(walkthrough.script, env, 240_000).done;
      // What the watch saw of the last events may still be on its way.
      for (
        let i = 0;
        i < 100 && !/\] turn ended: \S+ completed\n[\s\S]*\] turn ended: \S+ completed/.test(watch.output());
        i++
      )
        await new Promise((res) => setTimeout(res, 100));
    } finally {
      await watch.stop();
    }
    const w = await watch.done;
    const report = `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}\n--- watch\n${w.stdout}${w.stderr}\n${logs()}`;
    expect(r.code, report).toBe(0);

    // The watch in the second terminal showed the same session's story as it happened, labelled.
    const session = /^\[(ses_\S+)\] turn started: \S+ \(prompt\)$/m.exec(w.stdout)?.[1];
    expect(session, report).toBeDefined();
    for (const line of [
      "tool call: Glob",
      "tool result: Bash allow: On branch",
      "plan submitted: ",
      "plan approved: ",
      "turn started: \\S+ \\(execution\\)",
      "tool result: Write allow",
      "turn ended: \\S+ completed",
    ])
      expect(w.stdout, report).toMatch(new RegExp(`^\\[${session}\\] ${line}`, "m"));
    // Ctrl-C ends it as a person would (130), with no stack trace.
    expect(w.stderr, report).not.toMatch(/Error|at /);

    // The prompt stopped at the approval step and said how to approve.
    expect(r.stdout, report).toMatch(/^ {2}network: {9}off$/m);
    expect(r.stdout, report).toMatch(/^ {2}preview origins: none \(loopback and workspace files only\)$/m);
    // The agent's `git status` ran in the Bash sandbox, in the root-owned `mktemp -d` repository.
    expect(r.stdout, report).toMatch(/^tool result: Bash allow: On branch \S+ No commits yet/m);
    expect(r.stdout, report).toMatch(/^plan submitted: \S+/m);
    expect(r.stdout, report).toMatch(/^plan awaiting approval: \S+/m);
    expect(r.stdout, report).toMatch(/pihost plans approve \S+ --mode/);
    // The approval with an explicit mode, then the execution turn to its end.
    expect(r.stdout, report).toMatch(/^plan approved: \S+ \(permission mode accept-edits\)/m);
    expect(r.stdout, report).toMatch(/^turn started: \S+ \(execution\)$/m);
    expect(r.stdout, report).toMatch(/^tool result: Write allow/m);
    expect(r.stdout, report).toMatch(/^turn ended: \S+ completed$/m);

    // Exactly one workspace was made, it holds GREETING.md, and the script's last output is that file.
    const workspaces = readdirSync(tmp, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(path.join(tmp, d.name, "GREETING.md")))
      .map((d) => path.join(tmp, d.name));
    expect(workspaces, report).toHaveLength(1);
    const greeting = readFileSync(path.join(workspaces[0]!, "GREETING.md"), "utf8");
    expect(greeting.length).toBeGreaterThan(0);
    expect(r.stdout.endsWith(greeting), report).toBe(true);
    // The plan file printed by `plans show` is the one the host wrote, byte for byte.
    const planDir = path.join(workspaces[0]!, ".pi", "plan");
    const planFiles = readdirSync(planDir);
    expect(planFiles).toHaveLength(1);
    expect(r.stdout).toContain(readFileSync(path.join(planDir, planFiles[0]!), "utf8"));
  });
}
