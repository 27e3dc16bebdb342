// The per-sandbox bounds on this machine's real cgroups: parsing of the environment and of
// /proc/self/{mountinfo,cgroup}, a launcher joining its cgroup before it execs (the whole tree
// inside), oom_score_adj on every kind, the fail-closed launcher, release and the leftover cleanup.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  cleanupLeftoverCgroups,
  joinArgs,
  parseBytes,
  parseMountinfo,
  parseProcCgroup,
  sandboxLimitSettingsFromEnv,
  sandboxLimits,
} from "./sandbox-limits.ts";

const limits = { pidsMax: 16, memoryMaxBytes: 64 * 1024 ** 2 };
const settings = { user: "pihost-sandbox", dataDir: "/nonexistent", limits };
const bounds = (await sandboxLimits(settings)).describe();
const noCgroups = bounds.kind === "none" ? `no cgroup kind: ${bounds.reason}` : "";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});
/** A launcher as sandbox.ts runs one: it joins `procsFiles` (joinArgs), then execs bash -c script. */
function joined(procsFiles: readonly string[], script: string): ChildProcess {
  const child = spawn("/bin/sh", joinArgs(procsFiles, ["/bin/bash", "-c", script]), { stdio: "ignore" });
  children.push(child);
  return child;
}

function gated(script: string): { child: ChildProcess; go: () => void } {
  // Waits for a line on stdin before running the script, like the sandbox's start gate.
  const child = spawn("bash", ["-c", `read -r go; ${script}`], { stdio: ["pipe", "ignore", "ignore"] });
  children.push(child);
  return { child, go: () => child.stdin!.write("go\n") };
}
const alive = (pid: number) =>
  existsSync(`/proc/${pid}`) && !/\)\s+[ZX]\s/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
const cgOf = (pid: number) => readFileSync(`/proc/${pid}/cgroup`, "utf8");
const until = async (fn: () => boolean, ms = 5000) => {
  for (const end = Date.now() + ms; !fn(); ) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe("settings and parsing", () => {
  it("reads sizes with K/M/G/T suffixes and refuses anything else", () => {
    const cases: Array<[string, number | null]> = [
      ["123", 123],
      ["64K", 65536],
      ["256M", 256 * 1024 ** 2],
      ["2G", 2 * 1024 ** 3],
      ["2g", 2 * 1024 ** 3],
      ["1GiB", 1024 ** 3],
      ["1T", 1024 ** 4],
      ["", null],
      ["-1", null],
      ["1.5G", null],
      ["12X", null],
      ["0", null],
      ["99999999999T", null],
    ];
    for (const [raw, want] of cases) expect({ raw, got: parseBytes(raw) }).toEqual({ raw, got: want });
  });

  it("takes defaults from nothing and refuses malformed variables at start", () => {
    const cores = Math.max(1, os.availableParallelism() - 1);
    expect(sandboxLimitSettingsFromEnv({})).toEqual({
      pidsMax: 512,
      memoryMaxBytes: 2 * 1024 ** 3,
      cpuMax: cores,
    });
    expect(sandboxLimitSettingsFromEnv({ PI_SANDBOX_CPU_MAX: "0" })).toEqual({
      pidsMax: 512,
      memoryMaxBytes: 2 * 1024 ** 3,
    });
    expect(
      sandboxLimitSettingsFromEnv({
        PI_SANDBOX_PIDS_MAX: "64",
        PI_SANDBOX_MEMORY_MAX: "256M",
        PI_SANDBOX_CPU_MAX: "1.5",
      }),
    ).toEqual({ pidsMax: 64, memoryMaxBytes: 256 * 1024 ** 2, cpuMax: 1.5 });
    for (const env of [
      { PI_SANDBOX_PIDS_MAX: "lots" },
      { PI_SANDBOX_PIDS_MAX: "2" },
      { PI_SANDBOX_MEMORY_MAX: "1M" },
      { PI_SANDBOX_MEMORY_MAX: "big" },
      { PI_SANDBOX_CPU_MAX: "-1" },
      { PI_SANDBOX_CPU_MAX: "all" },
    ])
      expect(() => sandboxLimitSettingsFromEnv(env)).toThrow(/PI_SANDBOX_/);
  });

  it("parses mountinfo (escapes, super options) and /proc/self/cgroup", () => {
    const mounts = parseMountinfo(
      [
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
        "41 31 0:38 /sub /sys/fs/cgroup/uni\\040fied rw,relatime shared:9 - cgroup2 cgroup2 rw",
        "garbage",
      ].join("\n"),
    );
    expect(mounts).toEqual([
      {
        root: "/",
        point: "/sys/fs/cgroup/memory",
        fstype: "cgroup",
        options: ["rw", "relatime"],
        superOptions: ["rw", "memory"],
      },
      {
        root: "/sub",
        point: "/sys/fs/cgroup/uni fied",
        fstype: "cgroup2",
        options: ["rw", "relatime"],
        superOptions: ["rw"],
      },
    ]);
    const own = parseProcCgroup("8:pids:/\n4:memory:/a/b\n1:cpu,cpuacct:/c\n0::/x\n");
    expect([...own]).toEqual([
      ["pids", "/"],
      ["memory", "/a/b"],
      ["cpu,cpuacct", "/c"],
      ["", "/x"],
    ]);
  });
});

describe.skipIf(!!noCgroups)(`cgroups on this machine${noCgroups ? ` (skipped: ${noCgroups})` : ""}`, () => {
  it("a launcher joins before it execs: the whole tree is inside, oom_score_adj 1000, pids bounded; release ends it all", async () => {
    const l = await sandboxLimits(settings);
    const g = await l.create("unit-join");
    expect(g.dirs.length).toBeGreaterThanOrEqual(2);
    const child = joined(g.procsFiles, "for i in $(seq 40); do sleep 30 & done; wait");
    const pidsDir = g.dirs.find((d) => existsSync(path.join(d, "pids.max")))!;
    await until(() => /^max [1-9]/m.test(readFileSync(path.join(pidsDir, "pids.events"), "utf8")));
    const inside = readFileSync(path.join(pidsDir, "cgroup.procs"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map(Number);
    expect(inside).toContain(child.pid);
    expect(inside.length).toBeGreaterThan(2);
    expect(inside.length).toBeLessThanOrEqual(limits.pidsMax);
    for (const p of inside) {
      if (!alive(p)) continue;
      expect(readFileSync(`/proc/${p}/oom_score_adj`, "utf8").trim()).toBe("1000");
      for (const dir of g.dirs) expect(cgOf(p)).toContain(`/${path.basename(dir)}`);
    }
    await g.release();
    for (const p of inside) await until(() => !alive(p));
    for (const dir of g.dirs) expect(existsSync(dir)).toBe(false);
  });

  it("fails closed: a launcher that cannot join exits 125 before running anything", async () => {
    const l = await sandboxLimits(settings);
    const g = await l.create("unit-closed");
    const marker = path.join(os.tmpdir(), `pihost-limits-ran-${process.pid}`);
    const child = joined([...g.procsFiles, "/nonexistent/cgroup.procs"], `touch ${marker}`);
    const code = await new Promise((r) => child.on("exit", r));
    expect(code).toBe(125);
    expect(existsSync(marker)).toBe(false);
    await g.release();
    for (const dir of g.dirs) expect(existsSync(dir)).toBe(false);
  });

  it("cleanup at start kills and removes a dead host's cgroups, and leaves a live host's", async () => {
    const l = await sandboxLimits(settings);
    const mine = await l.create("unit-live");
    const dead = spawn("true");
    await new Promise((r) => dead.on("exit", r));
    const { child: victim } = gated("sleep 30");
    const leftover = (bounds.parents ?? []).map((p) => path.join(p, `sbx-${dead.pid}-1-1-unit-left`));
    for (const dir of leftover) {
      mkdirSync(dir);
      writeFileSync(path.join(dir, "cgroup.procs"), String(victim.pid));
    }
    const r = await cleanupLeftoverCgroups(settings);
    expect(r.failed).toEqual([]);
    expect(r.removed).toBeGreaterThanOrEqual(leftover.length);
    for (const dir of leftover) expect(existsSync(dir)).toBe(false);
    await until(() => !alive(victim.pid!));
    for (const dir of mine.dirs) expect(existsSync(dir)).toBe(true);
    await mine.release();
    for (const dir of mine.dirs) expect(existsSync(dir)).toBe(false);
  });
});

describe("without cgroups", () => {
  it("still writes oom_score_adj 1000 and describes the weaker guarantee", async () => {
    // A configured cgroup2 parent that does not exist: kind none, with the reason.
    const l = await sandboxLimits({ ...settings, limits: { ...limits, cgroup: "/nonexistent/cg" } });
    expect(l.describe()).toMatchObject({ kind: "none", reason: expect.stringMatching(/.+/) });
    const g = await l.create("unit-none");
    expect(g.dirs).toEqual([]);
    expect(g.procsFiles).toEqual([]);
    const child = joined(g.procsFiles, "sleep 30");
    await until(
      () =>
        existsSync(`/proc/${child.pid}`) &&
        readFileSync(`/proc/${child.pid}/cmdline`, "utf8").startsWith("sleep"),
    );
    expect(readFileSync(`/proc/${child.pid}/oom_score_adj`, "utf8").trim()).toBe("1000");
    await g.release();
  });
});
