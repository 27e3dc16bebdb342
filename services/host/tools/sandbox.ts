// The bubblewrap sandbox every program a tool runs goes through (docs/operations.md "The Bash sandbox"):
// bwrap as the unprivileged sandbox user, own namespaces, a fixed read-only system part, the workspace
// writable and `.pi` read-only; the network part is sandbox-network.ts, the bounds sandbox-limits.ts.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, lstatSync } from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { AppError } from "../../protocol/app-error.ts";
import { sealedPiDir } from "./plan-dir.ts";
import { outputFifos, prepareSandboxEtc, prepareScratch } from "./sandbox-folders.ts";
import {
  joinArgs,
  type SandboxLimitSettings,
  type SandboxLimits,
  sandboxLimitSettingsFromEnv,
  sandboxLimits,
} from "./sandbox-limits.ts";
import { prepareNetworkEtc, startSlirp } from "./sandbox-network.ts";
import { noUserNamespaceFilter } from "./sandbox-seccomp.ts";
import { outputEndedOf, startedOf, watchFirstPid } from "./sandbox-streams.ts";
import {
  asUser,
  DEFAULT_SANDBOX_USER,
  lookupSandboxUser,
  type SandboxUser,
  sandboxUnavailable,
} from "./sandbox-user.ts";

export { prepareScratch } from "./sandbox-folders.ts";
export { DEFAULT_SANDBOX_USER, lookupSandboxUser, type SandboxUser } from "./sandbox-user.ts";

const SYSTEM_DIRS = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];
/** /etc entries a shell and common tools need; never shadow, sudoers, ssh keys or ssl/private. */
const ETC_FILES = [
  "passwd",
  "group",
  "nsswitch.conf",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "alternatives",
  "localtime",
  "bash.bashrc",
  "inputrc",
  "profile",
  "ssl/certs",
  "ssl/openssl.cnf",
  "ca-certificates.conf",
];
/** The go byte the host writes on fd 5 once the sandbox is set up; end of file means never. */
const GO = "g";
/**
 * The first program inside: wait for the host's go byte on fd 5 (exit 125 on anything else,
 * including end of file), report on fd 4 that the sandbox is up, close both, and only then become
 * `bash -c command`: bwrap's own setup failures never look like the command's output.
 */
const STARTER = `IFS= read -r -n 1 -u 5 go; [ "$go" = ${GO} ] || exit 125; exec 5<&- && printf started >&4 && exec 4>&- && exec /bin/bash -c "$1"`;
const TOP_LINKS = ["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

export interface SandboxSettings {
  user: string;
  dataDir: string;
  /** The slirp4netns program for projects that allow network (default: found in the system folders). */
  slirp4netns?: string;
  /** Each sandbox's own bounds (PI_SANDBOX_PIDS_MAX, PI_SANDBOX_MEMORY_MAX, PI_SANDBOX_CPU_MAX). */
  limits?: SandboxLimitSettings;
}

/** The sandbox's configuration, read from the host's environment (docs/operations.md). */
export function sandboxSettingsFromEnv(env: NodeJS.ProcessEnv): SandboxSettings {
  return {
    user: env.PI_SANDBOX_USER || DEFAULT_SANDBOX_USER,
    dataDir: path.resolve(env.PI_DATA_DIR || ".pihost-data"),
    ...(env.PI_SANDBOX_SLIRP4NETNS ? { slirp4netns: env.PI_SANDBOX_SLIRP4NETNS } : {}),
    limits: sandboxLimitSettingsFromEnv(env),
  };
}

export function findProgram(name: string): string | null {
  for (const dir of SYSTEM_DIRS) {
    const p = path.join(dir, name);
    if (existsSync(p)) return p;
  }
  return null;
}

export interface SandboxSpec {
  workspace: string;
  sessionId: string;
  command: string;
  settings: SandboxSettings;
  /** The project allows network: user-mode networking through slirp4netns. */
  network?: boolean;
  /** Host files or folders bound read-only at their own path (the file helper's program). */
  roBinds?: readonly string[];
  /** Variables set inside besides PATH, HOME, TMPDIR and LANG. */
  setenv?: Readonly<Record<string, string>>;
  /** Give the command a pipe on stdin (`SandboxProcess.stdin`); otherwise stdin is /dev/null. */
  stdin?: boolean;
}

export interface SandboxProcess {
  child: ChildProcess;
  /** Resolves true once the command runs inside the finished sandbox, false if it never did. */
  started: Promise<boolean>;
  /** The sandbox's first process (host pid, init of its PID namespace) once bwrap reported it. */
  firstPid: () => number | null;
  /** Why the sandbox was torn down before the command ran (the network could not be set up). */
  failure: () => string | null;
  /** The command's stdout and stderr (FIFOs, so /dev/stdout and /dev/stderr open inside). */
  stdout: Readable;
  stderr: Readable;
  /** The command's stdin when the spec asked for a pipe. */
  stdin: NodeJS.WritableStream | null;
  /** Resolves when both streams reached their end (every writer in the sandbox is gone). */
  outputEnded: Promise<void>;
  user: SandboxUser;
}

/**
 * The sandbox's /dev: the harmless character devices bound from the host, the fd links and a
 * private /dev/shm. Not bwrap's `--dev`: its devpts needs uid 0 inside, so bwrap would nest a second
 * user namespace, and slirp4netns could then not join the one that owns the network namespace.
 */
export function deviceBinds(): string[] {
  const args = ["--dir", "/dev"];
  for (const d of ["null", "zero", "full", "random", "urandom", "tty"])
    args.push("--dev-bind-try", `/dev/${d}`, `/dev/${d}`);
  args.push("--symlink", "/proc/self/fd", "/dev/fd");
  args.push("--symlink", "/proc/self/fd/0", "/dev/stdin", "--symlink", "/proc/self/fd/1", "/dev/stdout");
  args.push("--symlink", "/proc/self/fd/2", "/dev/stderr");
  args.push("--tmpfs", "/dev/shm");
  return args;
}

/**
 * No process of a sandbox without network may make a user namespace (`unshare -r` would give it uid
 * 0 and the kernel's namespace code to attack): bwrap sets the limit and enters a nested user
 * namespace that cannot raise it, and checks that the limit holds (it refuses to start otherwise).
 * With network the nested namespace would hide the one slirp4netns joins, so such a sandbox gets
 * the seccomp filter of sandbox-seccomp.ts instead, on fd SECCOMP_FD.
 */
export const NO_USER_NAMESPACES = ["--unshare-user", "--disable-userns"] as const;
const SECCOMP_FD = 6;

/** The read-only system part every sandbox shares: /usr, the top-level links or folders, /etc files. */
export function systemBinds(extraEtc: string[] = []): string[] {
  const args = ["--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"];
  for (const name of TOP_LINKS) {
    const p = `/${name}`;
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push("--symlink", `usr/${name}`, p);
    else if (st.isDirectory()) args.push("--ro-bind", p, p);
  }
  args.push("--dir", "/etc");
  for (const f of [...ETC_FILES, ...extraEtc]) args.push("--ro-bind-try", `/etc/${f}`, `/etc/${f}`);
  return args;
}

function bwrapArgs(
  spec: SandboxSpec,
  scratch: string,
  piDir: string,
  netEtc: string | null,
  sandboxEtc: string,
): string[] {
  const { workspace, command } = spec;
  const args = systemBinds();
  args.push(...(netEtc ? ["--seccomp", String(SECCOMP_FD)] : NO_USER_NAMESPACES));
  // git trusts the workspace it is given (safe.directory), whoever owns its files.
  args.push("--ro-bind", path.join(sandboxEtc, "gitconfig"), "/etc/gitconfig");
  // With network, name resolution goes to slirp4netns's forwarder (host-written resolv.conf, hosts).
  if (netEtc) {
    for (const f of ["resolv.conf", "hosts"]) args.push("--ro-bind", path.join(netEtc, f), `/etc/${f}`);
  }
  // The private /tmp comes before the binds: a tmpfs over a parent would hide binds made before it.
  args.push("--tmpfs", "/tmp", "--proc", "/proc", ...deviceBinds());
  // `.pi` is the host's (plan files, pi's own settings): read-only, so it cannot be renamed,
  // replaced, chmod-ed or linked from inside (docs/security.md).
  args.push("--bind", workspace, workspace, "--ro-bind", piDir, piDir, "--bind", scratch, scratch);
  for (const p of spec.roBinds ?? []) args.push("--ro-bind", p, p);
  args.push("--chdir", workspace, "--clearenv", "--setenv", "PATH", "/usr/bin:/bin");
  args.push("--setenv", "HOME", scratch, "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8");
  for (const [k, v] of Object.entries(spec.setenv ?? {})) args.push("--setenv", k, v);
  args.push("--json-status-fd", "3", "--", "/bin/bash", "-c", STARTER, "bash", command);
  return args;
}

/** The programs a sandbox takes (SANDBOX_UNAVAILABLE naming the one missing), and its seccomp filter. */
function sandboxPrograms(spec: SandboxSpec) {
  const bwrap = findProgram("bwrap");
  const setpriv = findProgram("setpriv");
  if (!bwrap) throw sandboxUnavailable("bwrap (Debian package bubblewrap) is not installed");
  if (!setpriv) throw sandboxUnavailable("setpriv (util-linux) is not installed");
  const slirp = spec.network ? (spec.settings.slirp4netns ?? findProgram("slirp4netns")) : null;
  if (spec.network && !slirp)
    throw sandboxUnavailable(
      "the project allows network, but slirp4netns (Debian package slirp4netns) is not installed",
      {
        network: true,
      },
    );
  const filter = spec.network ? noUserNamespaceFilter() : null;
  if (spec.network && !filter)
    throw sandboxUnavailable(
      `the project allows network, but this host's architecture (${process.arch}) has no user-namespace filter`,
      { network: true },
    );
  return { bwrap, setpriv, slirp, filter };
}

/**
 * Everything the host prepares, at once: the session's scratch folder, the sealed `.pi`, the
 * sandbox's /etc files, the output pipes and the sandbox's own cgroup (sandbox-limits.ts). If any
 * fails, what the others made is released and the refusal says which part failed.
 */
async function prepareSandbox(spec: SandboxSpec, user: SandboxUser) {
  const limits = await sandboxLimits(spec.settings);
  const prepared = await Promise.allSettled([
    prepareScratch(spec.settings, spec.sessionId, user),
    sealedPiDir(spec.workspace, spec.settings.user),
    prepareSandboxEtc(spec.settings.dataDir),
    spec.network ? prepareNetworkEtc(spec.settings.dataDir) : Promise.resolve(null),
    limits.create(spec.sessionId),
    outputFifos(user),
  ] as const);
  const [scratchP, piDirP, etcP, netEtcP, groupP, outP] = prepared;
  if (prepared.some((r) => r.status === "rejected")) {
    if (groupP.status === "fulfilled") void groupP.value.release();
    if (outP.status === "fulfilled") for (const fd of outP.value.write) closeSync(fd);
    if (outP.status === "fulfilled") for (const stream of outP.value.read) stream.destroy();
    const err = (prepared.find((r) => r.status === "rejected") as PromiseRejectedResult).reason;
    if (err instanceof AppError) throw err;
    if (groupP.status === "rejected" && err === groupP.reason)
      throw sandboxUnavailable(`cannot bound the sandbox (cgroups): ${(err as Error).message}`);
    throw sandboxUnavailable(`cannot prepare the sandbox's folders: ${(err as Error).message}`);
  }
  return {
    scratch: (scratchP as PromiseFulfilledResult<string>).value,
    piDir: (piDirP as PromiseFulfilledResult<string>).value,
    sandboxEtc: (etcP as PromiseFulfilledResult<string>).value,
    netEtc: (netEtcP as PromiseFulfilledResult<string | null>).value,
    group: (groupP as PromiseFulfilledResult<Awaited<ReturnType<SandboxLimits["create"]>>>).value,
    out: (outP as PromiseFulfilledResult<Awaited<ReturnType<typeof outputFifos>>>).value,
  };
}

/** Spawns the launcher: into the sandbox's cgroups, then setpriv as the sandbox user, then bwrap. */
function launchSandbox(
  spec: SandboxSpec,
  programs: ReturnType<typeof sandboxPrograms>,
  user: SandboxUser,
  prepared: Awaited<ReturnType<typeof prepareSandbox>>,
): ChildProcess {
  const { setpriv, bwrap, filter } = programs;
  const { scratch, piDir, netEtc, sandboxEtc, group, out } = prepared;
  try {
    // The launcher joins the sandbox's cgroups and takes oom_score_adj 1000 itself, then execs
    // setpriv and bwrap: every process of the sandbox is inside from its first instruction.
    return spawn(
      "/bin/sh",
      joinArgs(group.procsFiles, [
        setpriv,
        ...asUser(user),
        bwrap,
        ...bwrapArgs(spec, scratch, piDir, netEtc, sandboxEtc),
      ]),
      {
        stdio: [
          spec.stdin ? "pipe" : "ignore",
          out.write[0],
          out.write[1],
          "pipe",
          "pipe",
          "pipe",
          ...(filter ? (["pipe"] as const) : []),
        ],
        env: {},
        cwd: "/",
      },
    );
  } catch (err) {
    // exec refused the arguments (E2BIG) or the program: nothing started.
    for (const stream of out.read) stream.destroy();
    void group.release();
    throw sandboxUnavailable(`the sandbox could not be started: ${(err as Error).message}`);
  } finally {
    // The child holds its own copies; the host keeps only the read ends, so the end of every
    // writer in the sandbox is the end of the stream.
    for (const fd of out.write) closeSync(fd);
  }
}

/**
 * Starts `bash -c command` in the sandbox. bwrap is launched by `setpriv` as the sandbox user (never
 * root, nor root mapped into a user namespace) with its own user, PID, IPC, UTS, cgroup and network
 * namespaces and `--die-with-parent`: killing bwrap or the sandbox's first process ends every
 * descendant. The sandbox sees an empty environment plus a fixed PATH and HOME, /usr and a few /etc
 * files read-only, a private /tmp, /proc and /dev, the workspace writable at its own host path, the
 * session's scratch folder writable and `<workspace>/.pi` read-only. The command waits at a
 * gate inside until the host has finished the setup (the network configured) and sends the go byte:
 * a host that dies before that closes the gate, and the command never runs. Throws SANDBOX_UNAVAILABLE when bwrap, setpriv or (for a
 * project with network) slirp4netns is missing, the user does not exist, or the folders cannot be
 * prepared; a sandbox that fails to come up shows as `started` resolving false, with `failure()`
 * saying why when the host tore it down (the caller reports SANDBOX_UNAVAILABLE then).
 */
export async function startSandbox(spec: SandboxSpec): Promise<SandboxProcess> {
  const programs = sandboxPrograms(spec);
  const { setpriv, slirp, filter } = programs;
  const user = await lookupSandboxUser(spec.settings.user);
  const prepared = await prepareSandbox(spec, user);
  const { group, out } = prepared;
  const child = launchSandbox(spec, programs, user, prepared);
  const [stdout, stderr] = out.read;
  const outputEnded = outputEndedOf(out.read);
  const gate = (child.stdio as unknown as Array<NodeJS.WritableStream>)[5]!;
  gate.on("error", () => {});
  if (filter) {
    // bwrap reads the filter to its end inside the sandbox, before the command's first instruction.
    const seccomp = (child.stdio as unknown as Array<NodeJS.WritableStream>)[SECCOMP_FD]!;
    seccomp.on("error", () => {});
    seccomp.end(filter);
  }
  let pid: number | null = null;
  let failure: string | null = null;
  let slirpProc: ChildProcess | null = null;
  const tearDown = (reason: string) => {
    failure ??= reason;
    if (pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    child.kill("SIGKILL");
  };
  // Without network nothing else is set up: the go byte waits in the socket for the gate.
  if (!slirp) gate.write(GO);
  watchFirstPid(child.stdio[3] as NodeJS.ReadableStream, (firstPid) => {
    pid = firstPid;
    if (!slirp) return;
    const s = startSlirp(setpriv, slirp, user, firstPid);
    slirpProc = s.proc;
    s.ready.then(
      () => {
        if (!failure) gate.write(GO);
      },
      (err: Error) => tearDown(`network setup failed: ${err.message}`),
    );
  });
  const started = startedOf(child, child.stdio[4] as NodeJS.ReadableStream);
  child.on("close", () => {
    gate.end();
    void group.release();
    const sp = slirpProc as ChildProcess | null;
    if (sp) {
      (sp.stdio[4] as NodeJS.WritableStream).end();
      sp.kill("SIGKILL");
    }
  });
  const stdin = spec.stdin ? (child.stdin ?? null) : null;
  stdin?.on("error", () => {});
  return {
    child,
    started,
    user,
    firstPid: () => pid,
    failure: () => failure,
    stdout,
    stderr,
    stdin,
    outputEnded,
  };
}
