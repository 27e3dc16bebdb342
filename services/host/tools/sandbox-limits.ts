// Per-sandbox bounds (docs/operations.md "Per-sandbox bounds"): one cgroup per sandbox (v2, else the
// v1 pids + memory hierarchies) with pids and memory limits and a fair CPU share, and
// oom_score_adj=1000 on every sandbox process. Owns the host's cgroup folders; nothing else.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";

export interface SandboxLimitSettings {
  /** pids.max: tasks (threads count), the default 512 leaves Chromium room. */
  pidsMax: number;
  /** memory.max in bytes (v1: memory.limit_in_bytes and memsw), default 2 GiB. */
  memoryMaxBytes: number;
  /** CPU quota in cores (cpu.max / cfs_quota_us) on top of the fair share; unset: no quota. */
  cpuMax?: number;
  /** A cgroup v2 folder the host may create children in (PI_SANDBOX_CGROUP). */
  cgroup?: string;
}

/** The sandbox's settings (sandbox.ts SandboxSettings); only `limits` is read. */
export type LimitsInput = { user?: string; dataDir?: string; limits?: SandboxLimitSettings };
export type LimitsKind = "cgroup2" | "cgroup1" | "none";
/** What the host prints at start: the kind, why not better (reason), the bounds, the parent folders. */
export interface LimitsDescription {
  kind: LimitsKind;
  reason?: string;
  pidsMax: number;
  memoryMaxBytes: number;
  cpuMax?: number;
  parents?: string[];
}

/** A sandbox's cgroup folders (none when kind is none) and their removal. */
export interface AttachedLimits {
  dirs: readonly string[];
  release(): Promise<void>;
}

export interface SandboxLimits {
  /**
   * One sandbox's cgroup, made and configured before the sandbox starts; the sandbox's launcher
   * moves itself in (`joinArgs`, or the browser wrapper) before it execs bwrap.
   */
  create(label: string): Promise<AttachedLimits & { procsFiles: readonly string[] }>;
  describe(): LimitsDescription;
}

export const DEFAULT_PIDS_MAX = 512;
export const DEFAULT_MEMORY_MAX_BYTES = 2 * 1024 ** 3;
export const OOM_SCORE_ADJ = 1000;
/**
 * The launcher of a sandbox (run by /bin/sh as root): oom_score_adj 1000 for itself (inherited by
 * every descendant), then `$1` cgroup.procs files joined by its own pid, then exec of the rest
 * (setpriv, bwrap). Exit 125, with the shell's reason on stderr, if either fails: nothing ran.
 * Joining before the exec leaves no window in which a forked process stays outside.
 */
const JOIN = `echo ${OOM_SCORE_ADJ} > /proc/self/oom_score_adj || exit 125; n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"`;

/** `/bin/sh` arguments that join `procsFiles` (see JOIN) and then exec `argv`. */
export function joinArgs(procsFiles: readonly string[], argv: readonly string[]): string[] {
  return ["-c", JOIN, "sh", String(procsFiles.length), ...procsFiles, ...argv];
}
/** A sandbox's CPU weight against one host process (1024): the host and Postgres come first. */
/**
 * The CPU weight of the folder every sandbox's cgroup sits in. Under CFS the folder competes as ONE
 * entity with the host's processes: at the default weight all sandboxes together would get one
 * process's share and starve while the host is busy; far above it, a sandbox's bursts (its quota is
 * spent per period) would starve the host. One default weight per core: the sandboxes together
 * compete like one process per core. Each sandbox keeps the default weight and its quota.
 */
const PARENT_CPU_SHARES = 1024 * os.availableParallelism();
const PARENT_CPU_WEIGHT = 100 * os.availableParallelism();
const BASE = "pihost-sandboxes";
const NAME = /^sbx-(\d+)-(\d+)-\d+-[A-Za-z0-9_-]*$/;

/** Bytes from `123`, `64K`, `256M`, `2G`, `1T` (1024-based); null when malformed. */
export function parseBytes(raw: string): number | null {
  const m = /^\s*(\d+)\s*([KMGT]?)i?B?\s*$/i.exec(raw);
  if (!m) return null;
  const n = Number(m[1]) * 1024 ** "_KMGT".indexOf((m[2] || "_").toUpperCase());
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** The bounds from the host's environment; a malformed value is an error at start, not a default. */
export function sandboxLimitSettingsFromEnv(env: NodeJS.ProcessEnv): SandboxLimitSettings {
  const pids = Number(env.PI_SANDBOX_PIDS_MAX || DEFAULT_PIDS_MAX);
  if (!Number.isInteger(pids) || pids < 8)
    throw new Error("PI_SANDBOX_PIDS_MAX must be an integer, at least 8");
  const mem = env.PI_SANDBOX_MEMORY_MAX ? parseBytes(env.PI_SANDBOX_MEMORY_MAX) : DEFAULT_MEMORY_MAX_BYTES;
  if (mem === null || mem < 16 * 1024 ** 2)
    throw new Error("PI_SANDBOX_MEMORY_MAX must be bytes or K/M/G with a suffix, at least 16M");
  const out: SandboxLimitSettings = { pidsMax: pids, memoryMaxBytes: mem };
  // One sandbox never gets every core (default: all but one, at least one); 0 means no quota.
  const cpu = env.PI_SANDBOX_CPU_MAX
    ? Number(env.PI_SANDBOX_CPU_MAX)
    : Math.max(1, os.availableParallelism() - 1);
  if (!Number.isFinite(cpu) || (cpu !== 0 && cpu < 0.01))
    throw new Error("PI_SANDBOX_CPU_MAX must be a number of cores (0: no quota)");
  if (cpu > 0) out.cpuMax = cpu;
  if (env.PI_SANDBOX_CGROUP) out.cgroup = path.resolve(env.PI_SANDBOX_CGROUP);
  return out;
}

type Mount = { root: string; point: string; fstype: string; options: string[]; superOptions: string[] };

/** /proc/self/mountinfo's cgroup mounts (octal escapes decoded). */
export function parseMountinfo(text: string): Mount[] {
  const decode = (s: string) =>
    s.replace(/\\(\d{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
  const out: Mount[] = [];
  for (const line of text.split("\n")) {
    const [pre, post] = line.split(" - ");
    if (!pre || !post) continue;
    const f = pre.split(" ");
    const [fstype, , superOpts] = post.split(" ");
    if (!fstype || f.length < 6) continue;
    out.push({
      root: decode(f[3]!),
      point: decode(f[4]!),
      fstype,
      options: f[5]!.split(","),
      superOptions: (superOpts ?? "").split(","),
    });
  }
  return out;
}

/** /proc/self/cgroup: hierarchy controllers ("" for v2) -> path. */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** The folder of cgroup `cg` in `mount`, or null when the mount does not show it. */
function folderOf(mount: Mount, cg: string): string | null {
  const rel = path.posix.relative(mount.root, cg);
  if (rel.startsWith("..")) return null;
  return path.join(mount.point, rel);
}

const read = (p: string) => fs.readFile(p, "utf8").then((s) => s.trim());
const write = (p: string, v: string) => fs.writeFile(p, v);
const ok = (p: Promise<unknown>) => p.then(() => true).catch(() => false);
const exists = (p: string) => ok(fs.access(p));

interface Hierarchy {
  /** The folder per-sandbox cgroups are created in. */
  base: string;
  /** Files to write in each per-sandbox cgroup, in order (absent optional files are skipped). */
  files: Array<[name: string, value: string, optional?: boolean]>;
}
type Detected = { kind: LimitsKind; reason?: string; hierarchies: Hierarchy[] };

const cpuQuota = (cores: number, period = 100_000) => String(Math.max(1000, Math.round(cores * period)));

async function detectV2(
  mounts: Mount[],
  own: Map<string, string>,
  s: SandboxLimitSettings,
): Promise<Detected | string> {
  const mount = mounts.find((m) => m.fstype === "cgroup2");
  if (!mount) return "no cgroup2 mount";
  if (!mount.options.includes("rw")) return `cgroup2 at ${mount.point} is read-only`;
  let base: string;
  let parent: string;
  if (s.cgroup) {
    base = s.cgroup;
    parent = path.dirname(base);
    if (path.relative(mount.point, base).startsWith(".."))
      return `PI_SANDBOX_CGROUP ${base} is not under ${mount.point}`;
  } else {
    const ownDir = folderOf(mount, own.get("") ?? "/");
    if (!ownDir) return "the host's cgroup2 folder is not visible";
    // No internal processes: the sandboxes' parent is a sibling of the host's cgroup, not a child.
    parent = ownDir === mount.point ? mount.point : path.dirname(ownDir);
    base = path.join(parent, BASE);
  }
  try {
    if (s.cgroup) await fs.mkdir(base, { recursive: true });
    const offered = (await read(path.join(s.cgroup ? base : parent, "cgroup.controllers"))).split(" ");
    const missing = ["pids", "memory"].filter((c) => !offered.includes(c));
    if (missing.length) return `cgroup2 at ${s.cgroup ? base : parent} offers no ${missing.join(", ")}`;
    const wanted = ["pids", "memory", ...(offered.includes("cpu") ? ["cpu"] : [])];
    for (const dir of s.cgroup ? [base] : [parent, base]) {
      await fs.mkdir(dir, { recursive: true });
      const on = (await read(path.join(dir, "cgroup.subtree_control"))).split(" ");
      const add = wanted.filter((c) => !on.includes(c));
      if (add.length)
        await write(path.join(dir, "cgroup.subtree_control"), add.map((c) => `+${c}`).join(" "));
    }
    const on = (await read(path.join(base, "cgroup.subtree_control"))).split(" ");
    const files: Hierarchy["files"] = [
      ["pids.max", String(s.pidsMax)],
      ["memory.max", String(s.memoryMaxBytes)],
      ["memory.swap.max", "0", true],
    ];
    if (on.includes("cpu"))
      await write(path.join(base, "cpu.weight"), String(PARENT_CPU_WEIGHT)).catch(() => {});
    if (on.includes("cpu") && s.cpuMax) files.push(["cpu.max", `${cpuQuota(s.cpuMax)} 100000`]);
    return { kind: "cgroup2", hierarchies: [{ base, files }] };
  } catch (err) {
    return `cgroup2 at ${parent}: ${(err as Error).message}`;
  }
}

async function detectV1(
  mounts: Mount[],
  own: Map<string, string>,
  s: SandboxLimitSettings,
): Promise<Detected | string> {
  const hier = (ctrl: string) => {
    const m = mounts.find((x) => x.fstype === "cgroup" && x.superOptions.includes(ctrl));
    const key = m && [...own.keys()].find((k) => k.split(",").includes(ctrl));
    return m && key !== undefined ? { mount: m, dir: folderOf(m, own.get(key)!) } : null;
  };
  const out: Hierarchy[] = [];
  for (const ctrl of ["pids", "memory", "cpu"]) {
    const h = hier(ctrl);
    const optional = ctrl === "cpu"; // a fair CPU share where the cpu hierarchy is usable
    if (!h?.dir || !h.mount.options.includes("rw")) {
      if (optional) continue;
      return `cgroup v1 ${ctrl} hierarchy is ${h ? "not writable or not visible" : "not mounted"}`;
    }
    const base = path.join(h.dir, BASE);
    const files: Hierarchy["files"] = [];
    if (ctrl === "pids") files.push(["pids.max", String(s.pidsMax)]);
    const m = String(s.memoryMaxBytes);
    if (ctrl === "memory") files.push(["memory.limit_in_bytes", m], ["memory.memsw.limit_in_bytes", m, true]);
    if (ctrl === "cpu" && s.cpuMax)
      files.push(["cpu.cfs_period_us", "100000"], ["cpu.cfs_quota_us", cpuQuota(s.cpuMax)]);
    const same = out.find((x) => x.base === base);
    if (same) {
      same.files.push(...files); // co-mounted controllers share one folder
      continue;
    }
    try {
      await fs.mkdir(base, { recursive: true });
      await fs.access(base, 2);
      if (ctrl === "cpu")
        await write(path.join(base, "cpu.shares"), String(PARENT_CPU_SHARES)).catch(() => {});
    } catch (err) {
      if (optional) continue;
      return `cgroup v1 ${ctrl}: ${(err as Error).message}`;
    }
    out.push({ base, files });
  }
  return { kind: "cgroup1", hierarchies: out };
}

const detections = new Map<string, Promise<Detected>>();

/** Which cgroup kind the host can use, decided once per process (and configured parent). */
function detect(s: SandboxLimitSettings): Promise<Detected> {
  const key = JSON.stringify(s);
  let d = detections.get(key);
  if (!d) {
    d = (async (): Promise<Detected> => {
      const [mountinfo, cg] = await Promise.all([
        read("/proc/self/mountinfo").catch(() => ""),
        read("/proc/self/cgroup").catch(() => ""),
      ]);
      const mounts = parseMountinfo(mountinfo);
      const own = parseProcCgroup(cg);
      const v2 = await detectV2(mounts, own, s);
      if (typeof v2 !== "string") return v2;
      if (s.cgroup) return { kind: "none", reason: v2, hierarchies: [] };
      const v1 = await detectV1(mounts, own, s);
      if (typeof v1 !== "string") return { ...v1, reason: v2 };
      return { kind: "none", reason: `${v2}; ${v1}`, hierarchies: [] };
    })();
    detections.set(key, d);
  }
  return d;
}

/** A process's start time in clock ticks (field 22 of /proc/<pid>/stat): pid plus this is unique. */
async function startTime(pid: number): Promise<string | null> {
  const stat = await read(`/proc/${pid}/stat`).catch(() => null);
  return stat ? (stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null) : null;
}
let seq = 0;
let startTicks: string | null = null;
/** A label fit for a cgroup folder name (see NAME): letters, digits, `_` and `-`, at most 40. */
const safeLabel = (label: string) => label.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 40);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Kills everything in one cgroup folder (v2 cgroup.kill, else SIGKILL rounds), then removes it. */
async function removeCgroup(dir: string): Promise<boolean> {
  const hasKill = await exists(path.join(dir, "cgroup.kill"));
  for (let round = 0; round < 100; round++) {
    const procs = await read(path.join(dir, "cgroup.procs")).catch(() => null);
    if (procs === null) return !(await exists(dir));
    const pids = procs.split("\n").filter(Boolean).map(Number);
    if (pids.length === 0 && (await ok(fs.rmdir(dir)))) return true;
    if (hasKill && pids.length) await write(path.join(dir, "cgroup.kill"), "1").catch(() => {});
    else
      for (const p of pids) {
        try {
          process.kill(p, "SIGKILL");
        } catch {}
      }
    await sleep(round < 10 ? 5 : 20);
  }
  return false;
}

function boundsOf(d: Detected, s: SandboxLimitSettings): SandboxLimits {
  const create = async (label: string) => {
    startTicks ??= (await startTime(process.pid)) ?? "0";
    const name = `sbx-${process.pid}-${startTicks}-${++seq}-${safeLabel(label)}`;
    const dirs: string[] = [];
    const release = async () => {
      for (const dir of dirs) await removeCgroup(dir).catch(() => false);
    };
    try {
      for (const h of d.hierarchies) {
        const dir = path.join(h.base, name);
        await fs.mkdir(dir);
        dirs.push(dir);
        for (const [file, value, optional] of h.files) {
          if (optional && !(await exists(path.join(dir, file)))) continue;
          await write(path.join(dir, file), value);
        }
      }
    } catch (err) {
      await release();
      throw new Error(`cannot create the sandbox's cgroup: ${(err as Error).message}`, { cause: err });
    }
    return { dirs, release, procsFiles: dirs.map((dir) => path.join(dir, "cgroup.procs")) };
  };
  return {
    create,
    describe: () => ({
      kind: d.kind,
      ...(d.reason ? { reason: d.reason } : {}),
      pidsMax: s.pidsMax,
      memoryMaxBytes: s.memoryMaxBytes,
      ...(s.cpuMax ? { cpuMax: s.cpuMax } : {}),
      ...(d.hierarchies.length ? { parents: d.hierarchies.map((h) => h.base) } : {}),
    }),
  };
}

/**
 * The bounds every sandbox gets: `settings.limits` or, unset, the host's environment
 * (sandboxLimitSettingsFromEnv). Detection runs once per process; attach rejects (fail closed) when
 * a cgroup kind was detected but the sandbox's cgroup cannot be made, configured or joined.
 */
export async function sandboxLimits(settings: LimitsInput): Promise<SandboxLimits> {
  // Without settings (read once from the environment by the host's config), the defaults.
  const s = settings.limits ?? sandboxLimitSettingsFromEnv({});
  return boundsOf(await detect(s), s);
}

/**
 * Start-time cleanup: per-sandbox cgroups left by a host process that is gone (another pid, or the
 * same pid with another start time) are killed and removed; a live host's are left alone. Never
 * throws; returns the counts for the start log.
 */
export async function cleanupLeftoverCgroups(settings: {
  limits?: SandboxLimitSettings;
}): Promise<{ removed: number; failed: string[] }> {
  const s = settings.limits ?? sandboxLimitSettingsFromEnv({});
  const d = await detect(s).catch(() => null);
  let removed = 0;
  const failed: string[] = [];
  for (const h of d?.hierarchies ?? []) {
    for (const name of await fs.readdir(h.base).catch(() => [] as string[])) {
      const m = NAME.exec(name);
      if (!m) continue;
      if ((await startTime(Number(m[1]))) === m[2]) continue; // its host still runs (this or another)
      if (await removeCgroup(path.join(h.base, name)).catch(() => false)) removed++;
      else failed.push(path.join(h.base, name));
    }
  }
  return { removed, failed };
}
