// Issue #10 clause 5, as the attack: session A runs a fork bomb and a memory hog in its sandbox
// through the real host; session B's `Bash true` keeps its latency, A's sandbox stays inside its own
// pids and memory bounds (the hog is killed in A's cgroup, not the host), and once A is aborted no
// process of A's sandbox and no per-sandbox cgroup folder remains. Skipped, with the reason, where
// the machine offers no usable cgroup kind (docs/operations.md "Per-sandbox bounds").
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { sandboxLimits, sandboxLimitSettingsFromEnv } from "../../services/host/tools/sandbox-limits.ts";
import { agentClient } from "../../services/protocol/rpc-client.ts";
import type { ToolExecuteResult, TurnAssignment } from "../../services/protocol/schemas.ts";
import { openStackDir, SANDBOX_USER, sandboxIds, sandboxTurn } from "../support/sandbox.ts";
import { eventually } from "../support/stack.ts";
import { useStack } from "../support/stack-fixture.ts";

const PIDS_MAX = 64;
const MEMORY = "256M";
const MEMORY_BYTES = 256 * 1024 ** 2;
const env = { PI_SANDBOX_PIDS_MAX: String(PIDS_MAX), PI_SANDBOX_MEMORY_MAX: MEMORY };
// What the host will detect on this machine (the same detection, run in the test process).
const bounds = (
  await sandboxLimits({
    user: SANDBOX_USER,
    dataDir: "/nonexistent",
    limits: sandboxLimitSettingsFromEnv(env),
  })
).describe();
const skipReason = bounds.kind === "none" ? `no cgroup kind available: ${bounds.reason}` : "";

const stack = useStack("sandboxlimits", {
  extra: { ...env, PI_TURN_LEASE_MS: String(3600_000) },
  prepare: openStackDir,
  host: true,
});

let calls = 0;
function bash(a: TurnAssignment, command: string, timeout = 30): Promise<ToolExecuteResult> {
  const toolCallId = `l${++calls}`;
  // A call may outlast the stack agent's 10 s request timeout (the attack runs until aborted).
  return agentClient({
    nc: stack.nc,
    prefix: stack.env.prefix,
    timeoutMs: 40_000,
  })
    .to(stack.agentClient.host)
    .call("tools.execute", {
      sessionId: a.sessionId,
      turnId: a.turnId,
      token: a.token,
      toolCallId,
      tool: "Bash",
      args: { command, timeout },
      batch: [{ toolCallId, tool: "Bash" }],
    });
}

async function p50(a: TurnAssignment, n = 10): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    expect(await bash(a, "true")).toMatchObject({ isError: false });
    times.push(performance.now() - t0);
  }
  times.sort((x, y) => x - y);
  return (times[Math.floor((n - 1) / 2)]! + times[Math.ceil((n - 1) / 2)]!) / 2;
}

/** The per-sandbox cgroup folders whose name ends in the label (the host names them after the session). */
function cgroupsOf(label: string): string[] {
  return (bounds.parents ?? []).flatMap((p) =>
    (existsSync(p) ? readdirSync(p) : []).filter((n) => n.endsWith(`-${label}`)).map((n) => path.join(p, n)),
  );
}
function hostCgroups(hostPid: number): string[] {
  return (bounds.parents ?? []).flatMap((p) =>
    (existsSync(p) ? readdirSync(p) : []).filter((n) => n.startsWith(`sbx-${hostPid}-`)),
  );
}
const readIn = (dirs: string[], file: string) => {
  const dir = dirs.find((d) => existsSync(path.join(d, file)));
  return dir ? readFileSync(path.join(dir, file), "utf8") : null;
};
const counter = (text: string | null, key: string) =>
  Number(new RegExp(`^${key} (\\d+)$`, "m").exec(text ?? "")?.[1] ?? 0);

/** Live processes of the sandbox user carrying the marker (A's, not a concurrent test file's). */
function markedProcesses(mark: string): number[] {
  const { uid } = sandboxIds();
  const found: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const status = readFileSync(`/proc/${e}/status`, "utf8");
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) !== uid || /^State:\s+Z/m.test(status)) continue;
      // Forked shells show the command (with the mark) as cmdline; exec'd programs carry it in environ.
      const cmd = readFileSync(`/proc/${e}/cmdline`, "utf8");
      if (cmd.includes(mark) || readFileSync(`/proc/${e}/environ`, "utf8").includes(mark))
        found.push(Number(e));
    } catch {}
  }
  return found;
}

describe("each sandbox has its own bounds", () => {
  it("describes the bounds the host applies", () => {
    expect(bounds).toMatchObject({ pidsMax: PIDS_MAX, memoryMaxBytes: MEMORY_BYTES });
    if (bounds.kind === "none") expect(bounds.reason).toBeTruthy();
  });

  it.skipIf(!!skipReason)(
    `a fork bomb and a memory hog in session A leave session B's Bash latency and the host alone${skipReason ? ` (skipped: ${skipReason})` : ""}`,
    async () => {
      const b = (await sandboxTurn(stack, "agent")).assignment;
      await p50(b, 3); // warm up
      const baseline = await p50(b);

      const { ws, assignment: a } = await sandboxTurn(stack, "agent");
      const mark = `pihostmark${randomBytes(4).toString("hex")}`;
      // The hog first (it needs CPU to reach the bound), the fork bomb once the test creates go-bomb.
      // Bounded by itself (depth 8: at most 511 busy processes for 40 s) in case the bounds fail.
      const attack = [
        `export PIHOST_MARK=${mark}`,
        "while :; do head -c 4G /dev/zero | tail; echo hog-exit-$?; done 2>/dev/null &",
        "bomb() { local d=$1; if [ $d -gt 0 ]; then bomb $((d-1)) & bomb $((d-1)) & fi;",
        "  local end=$((SECONDS+40)); while [ $SECONDS -lt $end ]; do :; done; wait; }",
        "while [ ! -e go-bomb ]; do sleep 0.1; done; bomb 8 2>/dev/null &",
        "wait",
      ].join("\n");
      const running = bash(a, attack, 120).catch((e: { code?: string }) => e);
      const dirs = await eventually(
        async () => {
          const d = cgroupsOf(a.sessionId);
          return d.length === bounds.parents?.length && d;
        },
        10_000,
        "A's cgroup",
      );
      let maxPids = 0;
      let over = false;
      const sampler = setInterval(() => {
        const cur = Number(readIn(dirs, "pids.current") ?? 0);
        maxPids = Math.max(maxPids, cur);
        if (cur > PIDS_MAX) over = true;
      }, 20);
      const oomKills = () =>
        bounds.kind === "cgroup2"
          ? counter(readIn(dirs, "memory.events"), "oom_kill")
          : counter(readIn(dirs, "memory.oom_control"), "oom_kill");
      try {
        // Both attacks at their bounds: the hog OOM-killed in A's cgroup, forks refused at pids.max.
        await eventually(async () => oomKills() > 0, 30_000, "the hog OOM-killed in A's cgroup");
        writeFileSync(path.join(ws, "go-bomb"), "");
        await eventually(
          async () => counter(readIn(dirs, "pids.events"), "max") > 0,
          30_000,
          "forks refused",
        );
        const loaded = await p50(b);
        console.log(
          `Bash true p50: baseline ${baseline.toFixed(0)} ms, under attack ${loaded.toFixed(0)} ms`,
        );
        // Within 3x: on 2 cores B shares the core the attack's quota leaves with the host and the
        // test (2x was measured at 2.06x once in CI); without the bounds B takes seconds.
        expect(loaded).toBeLessThan(3 * baseline);
        expect(oomKills()).toBeGreaterThan(0);
        const peakFile = bounds.kind === "cgroup2" ? "memory.peak" : "memory.max_usage_in_bytes";
        const peak = readIn(dirs, peakFile);
        if (peak !== null) expect(Number(peak)).toBeLessThanOrEqual(MEMORY_BYTES);
        const pidsPeak = readIn(dirs, "pids.peak");
        if (pidsPeak !== null) expect(Number(pidsPeak)).toBeLessThanOrEqual(PIDS_MAX);
        expect(maxPids).toBeGreaterThan(PIDS_MAX / 2);
        expect(over).toBe(false);
        // Every process of A carries oom_score_adj 1000 (inherited from the two the host set).
        const adj = markedProcesses(mark).map((p) => {
          try {
            return readFileSync(`/proc/${p}/oom_score_adj`, "utf8").trim();
          } catch {
            return "1000"; // ended meanwhile
          }
        });
        expect(adj.length).toBeGreaterThan(PIDS_MAX / 2);
        expect(new Set(adj)).toEqual(new Set(["1000"]));
        expect(stack.host!.child.exitCode).toBeNull();
      } finally {
        clearInterval(sampler);
        await stack.client("alice").call("session.abort", { sessionId: a.sessionId });
      }
      expect(["TURN_ABORTED", "TURN_TOKEN_INVALID"]).toContain(((await running) as { code?: string }).code);
      await eventually(async () => markedProcesses(mark).length === 0, 10_000, "no process of A's sandbox");
      await eventually(async () => cgroupsOf(a.sessionId).length === 0, 10_000, "A's cgroups removed");
      await eventually(
        async () => hostCgroups(stack.host!.child.pid!).length === 0,
        10_000,
        "no per-sandbox cgroup of this host",
      );
      expect(stack.host!.child.exitCode).toBeNull();
    },
    180_000,
  );
});
