// The bubblewrap sandbox every program a tool runs goes through (DESIGN §7). bwrap is launched by
// `setpriv` as the unprivileged sandbox user (PI_SANDBOX_USER), never as root and never as root
// mapped into a user namespace, with its own user, PID, IPC, UTS, cgroup and network namespaces and
// `--die-with-parent`: killing bwrap or the sandbox's first process ends every descendant. The
// sandbox sees an empty environment plus a fixed PATH and HOME, /usr (and the /bin, /sbin, /lib*
// links or folders) and a few /etc files read-only, a private /tmp, /proc and /dev, the workspace
// writable at its own host path, the session's scratch folder writable, and `<workspace>/.pi/plan`
// read-only on top. No network at all (slirp4netns is not offered yet). Anything that keeps the
// sandbox from starting is SANDBOX_UNAVAILABLE: the program is never run unconfined.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, lstatSync, promises as fs } from "node:fs";
import path from "node:path";
import { AppError } from "../protocol/app-error.ts";

export const DEFAULT_SANDBOX_USER = "pihost-sandbox";
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
const STARTER = 'printf started >&4 && exec 4>&- && exec /bin/bash -c "$1"';
const TOP_LINKS = ["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

export interface SandboxUser {
  name: string;
  uid: number;
  gid: number;
}

export interface SandboxSettings {
  user: string;
  dataDir: string;
}

/** The sandbox's configuration, read from the host's environment (docs/operations.md). */
export function sandboxSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxSettings {
  return {
    user: env.PI_SANDBOX_USER || DEFAULT_SANDBOX_USER,
    dataDir: path.resolve(env.PI_DATA_DIR || ".pihost-data"),
  };
}

export function findProgram(name: string): string | null {
  for (const dir of SYSTEM_DIRS) {
    const p = path.join(dir, name);
    if (existsSync(p)) return p;
  }
  return null;
}

function unavailable(reason: string, details: Record<string, unknown> = {}): AppError {
  return new AppError("SANDBOX_UNAVAILABLE", `sandbox unavailable: ${reason}`, {
    details: { reason, ...details },
  });
}

/** Looks the sandbox user up (getent); a missing user or a root uid makes the sandbox unavailable. */
export async function lookupSandboxUser(name: string): Promise<SandboxUser> {
  const line = await new Promise<string>((resolve) =>
    execFile("getent", ["passwd", name], (err, stdout) => resolve(err ? "" : String(stdout))),
  );
  const fields = line.trim().split(":");
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (fields.length < 4 || !Number.isInteger(uid) || !Number.isInteger(gid))
    throw unavailable(`sandbox user ${name} does not exist`, { user: name });
  if (uid === 0 || gid === 0) throw unavailable(`sandbox user ${name} is root`, { user: name });
  return { name, uid, gid };
}

export interface SandboxSpec {
  workspace: string;
  sessionId: string;
  command: string;
  settings: SandboxSettings;
}

export interface SandboxProcess {
  child: ChildProcess;
  /** Resolves true once the command runs inside the finished sandbox, false if it never did. */
  started: Promise<boolean>;
  /** The sandbox's first process (host pid, init of its PID namespace) once bwrap reported it. */
  firstPid: () => number | null;
  user: SandboxUser;
}

/** Creates (or reuses) the session's scratch folder, owned by the sandbox user, mode 0700. */
export async function prepareScratch(settings: SandboxSettings, sessionId: string, user: SandboxUser) {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(sessionId)) throw unavailable("unusable session id for scratch");
  const base = path.join(settings.dataDir, "scratch");
  await fs.mkdir(base, { recursive: true, mode: 0o711 });
  await fs.chmod(base, 0o711);
  const dir = path.join(base, sessionId);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await fs.lstat(dir);
  if (!st.isDirectory()) throw unavailable("scratch folder is not a directory", { scratch: dir });
  if (st.uid !== user.uid || st.gid !== user.gid) await fs.chown(dir, user.uid, user.gid);
  return dir;
}

/** `<workspace>/.pi/plan` exists before every run so it is always bound read-only. */
async function preparePlanDir(workspace: string): Promise<string> {
  const plan = path.join(workspace, ".pi", "plan");
  await fs.mkdir(plan, { recursive: true });
  const st = await fs.lstat(plan);
  const real = await fs.realpath(plan);
  if (!st.isDirectory() || real !== plan)
    throw unavailable(".pi/plan in the workspace is not a plain folder", { path: plan });
  return plan;
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

function bwrapArgs(workspace: string, scratch: string, plan: string, command: string): string[] {
  const args = systemBinds();
  // The private /tmp comes before the binds: a tmpfs over a parent would hide binds made before it.
  args.push("--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev");
  args.push("--bind", workspace, workspace, "--ro-bind", plan, plan, "--bind", scratch, scratch);
  args.push("--chdir", workspace, "--clearenv", "--setenv", "PATH", "/usr/bin:/bin");
  args.push("--setenv", "HOME", scratch, "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8");
  // The first thing run inside reports on fd 4 that the sandbox is up, closes it, and only then
  // becomes `bash -c command`: bwrap's own setup failures never look like the command's output.
  args.push("--json-status-fd", "3", "--", "/bin/bash", "-c", STARTER, "bash", command);
  return args;
}

/**
 * Starts `bash -c command` in the sandbox. Throws SANDBOX_UNAVAILABLE when bwrap or setpriv is
 * missing, the user does not exist, or the folders cannot be prepared; a bwrap that fails to start
 * shows as `started` resolving null (the caller reports SANDBOX_UNAVAILABLE then).
 */
export async function startSandbox(spec: SandboxSpec): Promise<SandboxProcess> {
  const bwrap = findProgram("bwrap");
  const setpriv = findProgram("setpriv");
  if (!bwrap) throw unavailable("bwrap (Debian package bubblewrap) is not installed");
  if (!setpriv) throw unavailable("setpriv (util-linux) is not installed");
  const user = await lookupSandboxUser(spec.settings.user);
  let scratch: string;
  let plan: string;
  try {
    scratch = await prepareScratch(spec.settings, spec.sessionId, user);
    plan = await preparePlanDir(spec.workspace);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw unavailable(`cannot prepare the sandbox's folders: ${(err as Error).message}`);
  }
  const child = spawn(
    setpriv,
    [
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      "--init-groups",
      "--inh-caps=-all",
      "--",
      bwrap,
      ...bwrapArgs(spec.workspace, scratch, plan, spec.command),
    ],
    { stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"], env: {}, cwd: "/" },
  );
  let pid: number | null = null;
  let statusText = "";
  const status = child.stdio[3] as NodeJS.ReadableStream;
  status.setEncoding("utf8");
  status.on("data", (d: string) => {
    statusText += d;
    const m = /"child-pid"\s*:\s*(\d+)/.exec(statusText);
    if (m) pid = Number(m[1]);
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
  return { child, started, user, firstPid: () => pid };
}
