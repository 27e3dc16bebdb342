// The README's walk-through, run as written with `bash -euo pipefail` against a real host and agent
// worker (own database, own subject prefix), so the documented commands cannot drift from the CLI.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, type StackEnv, startHost, startWorker } from "./support/processes.ts";
import { fencedBlock } from "./support/readme.ts";
import { useStack } from "./support/stack-fixture.ts";

const HEADING = "## Walk-through";

/** README.md's walk-through script: a missing section or block fails the test. */
function loadWalkthrough(): { source: string; script: string } {
  const script = fencedBlock(readFileSync(path.join(REPO_ROOT, "README.md"), "utf8"), HEADING);
  if (script === null) throw new Error("README.md has no ```sh block under ## Walk-through");
  return { source: "README.md", script };
}

function runBash(
  script: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-euo", "pipefail", "-c", script], {
      cwd: REPO_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // own process group, so a timeout kills npx, node and tsx beneath it too
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    const timer = setTimeout(() => {
      stderr += `\n[test] walk-through timed out after ${timeoutMs} ms\n`;
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("README walk-through", () => {
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
      const host = startHost(stack);
      const worker = startWorker(stack);
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
    const r = await runBash(
      walkthrough.script,
      {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? dir,
        TMPDIR: tmp,
        NATS_URL: stack.natsUrl,
        PI_PREFIX: stack.prefix,
        PI_PRINCIPAL: "alice",
      },
      240_000,
    );
    const report = `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}\n${logs()}`;
    expect(r.code, report).toBe(0);

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
});
