// The bubblewrap sandbox every program a tool runs goes through (docs/operations.md "The Bash sandbox"):
// bwrap as the unprivileged sandbox user, own namespaces, a fixed read-only system part, the workspace
// writable and `.pi` read-only; the network part is sandbox-network.ts, the bounds sandbox-limits.ts.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { closeSync, constants, existsSync, lstatSync, openSync, promises as fs } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { AppError } from "../../protocol/app-error.ts";
import { sealedPiDir } from "./plan-dir.ts";
import { type AttachedLimits, type SandboxLimits, sandboxLimits } from "./sandbox-limits.ts";
import { prepareNetworkEtc, startSlirp } from "./sandbox-network.ts";
import {
  asUser,
  DEFAULT_SANDBOX_USER,
  lookupSandboxUser,
  type SandboxUser,
  sandboxUnavailable,
} from "./sandbox-user.ts";

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
}

/** The sandbox's configuration, read from the host's environment (docs/operations.md). */
export function sandboxSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxSettings {
  return {
    user: env.PI_SANDBOX_USER || DEFAULT_SANDBOX_USER,
    dataDir: path.resolve(env.PI_DATA_DIR || ".pihost-data"),
    ...(env.PI_SANDBOX_SLIRP4NETNS ? { slirp4netns: env.PI_SANDBOX_SLIRP4NETNS } : {}),
  };
}

/**
 * The sandbox's own /etc files the host writes (`<PI_DATA_DIR>/sandbox-etc`, 0755, files 0444):
 * a git configuration that trusts whatever workspace the sandbox is given (`safe.directory`), since
 * inside a sandbox there is only the one workspace.
 */
async function prepareSandboxEtc(dataDir: string): Promise<string> {
  const dir = path.join(dataDir, "sandbox-etc");
  if (preparedEtc.has(dir)) return dir;
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  await fs.chmod(dir, 0o755);
  const file = path.join(dir, "gitconfig");
  const body = "[safe]\n\tdirectory = *\n";
  const current = await fs.readFile(file, "utf8").catch(() => null);
  if (current !== body) {
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, body, { mode: 0o444 });
    await fs.rename(tmp, file);
  }
  await fs.chmod(file, 0o444);
  preparedEtc.add(dir);
  return dir;
}
const preparedEtc = new Set<string>();

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
 * The sandbox's stdout and stderr as FIFOs rather than Node's socketpairs: a program inside may
 * open /dev/stdout or /dev/stderr (/proc/self/fd/N), which fails on a socket. Each FIFO is made in a
 * private host folder, owned by the sandbox user (opening the magic link checks the inode), opened
 * at both ends (read end non-blocking) and unlinked at once. Returns the write ends for the child
 * and the read ends as streams.
 */
async function outputFifos(
  user: SandboxUser,
): Promise<{ write: [number, number]; read: [net.Socket, net.Socket] }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "pihost-out-"));
  const opened: number[] = [];
  try {
    const names = [path.join(dir, "stdout"), path.join(dir, "stderr")];
    await new Promise<void>((resolve, reject) =>
      execFile("mkfifo", ["-m", "0600", ...names], (err) => (err ? reject(err) : resolve())),
    );
    for (const name of names) await fs.chown(name, user.uid, user.gid);
    const read = names.map((name) => {
      const fd = openSync(name, constants.O_RDONLY | constants.O_NONBLOCK);
      opened.push(fd);
      return fd;
    });
    const write = names.map((name) => {
      const fd = openSync(name, constants.O_WRONLY);
      opened.push(fd);
      return fd;
    });
    const streams = read.map((fd) => new net.Socket({ fd, readable: true, writable: false }));
    return { write: [write[0]!, write[1]!], read: [streams[0]!, streams[1]!] };
  } catch (err) {
    for (const fd of opened) {
      try {
        closeSync(fd);
      } catch {}
    }
    throw sandboxUnavailable(`cannot create the sandbox's output pipes: ${(err as Error).message}`);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** Creates (or reuses) the session's scratch folder, owned by the sandbox user, mode 0700. */
export async function prepareScratch(settings: SandboxSettings, sessionId: string, user: SandboxUser) {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(sessionId)) throw sandboxUnavailable("unusable session id for scratch");
  const base = path.join(settings.dataDir, "scratch");
  await fs.mkdir(base, { recursive: true, mode: 0o711 });
  await fs.chmod(base, 0o711);
  const dir = path.join(base, sessionId);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await fs.lstat(dir);
  if (!st.isDirectory()) throw sandboxUnavailable("scratch folder is not a directory", { scratch: dir });
  if (st.uid !== user.uid || st.gid !== user.gid) await fs.chown(dir, user.uid, user.gid);
  return dir;
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
  const user = await lookupSandboxUser(spec.settings.user);
  let scratch: string;
  let piDir: string;
  let sandboxEtc: string;
  let netEtc: string | null = null;
  let limits: SandboxLimits;
  try {
    scratch = await prepareScratch(spec.settings, spec.sessionId, user);
    piDir = await sealedPiDir(spec.workspace);
    sandboxEtc = await prepareSandboxEtc(spec.settings.dataDir);
    limits = await sandboxLimits(spec.settings);
    if (spec.network) netEtc = await prepareNetworkEtc(spec.settings.dataDir);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw sandboxUnavailable(`cannot prepare the sandbox's folders: ${(err as Error).message}`);
  }
  const out = await outputFifos(user);
  let child: ChildProcess;
  try {
    child = spawn(setpriv, [...asUser(user), bwrap, ...bwrapArgs(spec, scratch, piDir, netEtc, sandboxEtc)], {
      stdio: [spec.stdin ? "pipe" : "ignore", out.write[0], out.write[1], "pipe", "pipe", "pipe"],
      env: {},
      cwd: "/",
    });
  } catch (err) {
    // exec refused the arguments (E2BIG) or the program: nothing started.
    for (const stream of out.read) stream.destroy();
    throw sandboxUnavailable(`the sandbox could not be started: ${(err as Error).message}`);
  } finally {
    // The child holds its own copies; the host keeps only the read ends, so the end of every
    // writer in the sandbox is the end of the stream.
    for (const fd of out.write) closeSync(fd);
  }
  const [stdout, stderr] = out.read;
  const outputEnded = Promise.all(
    out.read.map(
      (stream) =>
        new Promise<void>((resolve) => {
          stream.on("error", () => resolve());
          stream.on("end", () => resolve());
          stream.on("close", () => resolve());
        }),
    ),
  ).then(() => {});
  const gate = (child.stdio as unknown as Array<NodeJS.WritableStream>)[5]!;
  gate.on("error", () => {});
  let pid: number | null = null;
  let failure: string | null = null;
  let slirpProc: ChildProcess | null = null;
  let attached: AttachedLimits | null = null;
  const tearDown = (reason: string) => {
    failure ??= reason;
    if (pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    child.kill("SIGKILL");
  };
  // Once bwrap reports the sandbox's first process: both go into the sandbox's own bounds (cgroup,
  // oom_score_adj; sandbox-limits.ts), the network is set up, and only then the gate opens. Every
  // process the command starts is a descendant of that first one, so it inherits the bounds.
  const onFirstPid = (firstPid: number) => {
    const bounded = limits.attach([child.pid ?? firstPid, firstPid], spec.sessionId).then((a) => {
      attached = a;
      if (child.exitCode !== null || child.signalCode !== null) void a.release();
    });
    const network = slirp
      ? bounded.then(() => {
          const s = startSlirp(setpriv, slirp, user, firstPid);
          slirpProc = s.proc;
          return s.ready.catch((err: Error) => {
            throw new Error(`network setup failed: ${err.message}`);
          });
        })
      : bounded;
    network.then(
      () => {
        if (!failure) gate.write(GO);
      },
      (err: Error) =>
        tearDown(err.message.startsWith("network") ? err.message : `sandbox limits: ${err.message}`),
    );
  };
  // bwrap writes one JSON object per line; only complete lines are read (a pid cut in half is not a pid).
  let statusText = "";
  const status = child.stdio[3] as NodeJS.ReadableStream;
  status.setEncoding("utf8");
  status.on("data", (d: string) => {
    statusText += d;
    let nl = statusText.indexOf("\n");
    while (nl >= 0) {
      const line = statusText.slice(0, nl);
      statusText = statusText.slice(nl + 1);
      nl = statusText.indexOf("\n");
      let msg: { "child-pid"?: unknown };
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      if (pid === null && Number.isInteger(msg["child-pid"]) && (msg["child-pid"] as number) > 0) {
        pid = msg["child-pid"] as number;
        onFirstPid(pid);
      }
    }
  });
  status.on("error", () => {});
  const ready = child.stdio[4] as NodeJS.ReadableStream;
  const started = new Promise<boolean>((resolve) => {
    let buf = "";
    ready.setEncoding("utf8");
    ready.on("data", (d: string) => {
      buf += d;
      if (buf.startsWith("started")) resolve(true);
    });
    ready.on("error", () => resolve(false));
    ready.on("end", () => resolve(buf.startsWith("started")));
    child.on("error", () => resolve(false));
    child.on("close", () => resolve(buf.startsWith("started")));
  });
  child.on("close", () => {
    gate.end();
    void (attached as AttachedLimits | null)?.release();
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
