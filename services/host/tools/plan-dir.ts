// The host's sealed plan folder `<workspace>/.pi/plan` (docs/operations.md "The plan folder"): the one
// place that decides whether `.pi` and `.pi/plan` are safe, and the only way host code touches them.
// Every component below the workspace root is opened through its parent's handle, never by following a link.
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import { AppError } from "../../protocol/app-error.ts";
import { type AclEntry, folderAcls, run, stripAcl, unsafe } from "./folder-acls.ts";
import { DEFAULT_SANDBOX_USER, sandboxUnavailable } from "./sandbox-user.ts";

export const PI_DIR_NAME = ".pi";
export const PLAN_DIR_NAME = "plan";
/** `.pi/plan` as a workspace-relative POSIX path (the form rows record). */
export const PLAN_DIR_REL = `${PI_DIR_NAME}/${PLAN_DIR_NAME}`;

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const IDENTITY_TTL_MS = 60_000;

/** The sandbox user as the seal checks see it: its uid and every group it is in. */
interface SandboxIdentity {
  name: string;
  uid: number;
  gids: number[];
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code;
const viaFd = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;
const identities = new Map<string, { at: number; identity: SandboxIdentity | null }>();

/** The sandbox user's uid and groups (NSS, via id); null when the user does not exist. Cached a minute. */
async function sandboxIdentity(name: string): Promise<SandboxIdentity | null> {
  const cached = identities.get(name);
  if (cached && Date.now() - cached.at < IDENTITY_TTL_MS) return cached.identity;
  const [u, g] = await Promise.all([run("id", ["-u", "--", name]), run("id", ["-G", "--", name])]);
  const uid = Number(u.out.trim());
  const gids = g.out.trim().split(/\s+/).map(Number);
  const identity =
    u.ok && g.ok && Number.isInteger(uid) && gids.every(Number.isInteger) ? { name, uid, gids } : null;
  identities.set(name, { at: Date.now(), identity });
  return identity;
}

/** `.pi/plan`: the host's own folder, writable by its owner only, no default ACL. */
function checkPlanDir(st: { uid: number; mode: number }, acl: AclEntry[]): void {
  const rel = PLAN_DIR_REL;
  const host = hostUid();
  if (st.uid !== host)
    throw unsafe(`${rel} is owned by uid ${st.uid}, not the host's user (uid ${host})`, rel);
  if (st.mode & 0o022)
    throw unsafe(`${rel} is writable by its group or others (mode ${octal(st.mode)})`, rel);
  const def = acl.find((e) => e.isDefault);
  if (def) throw unsafe(`${rel} has a default ACL (${def.text})`, rel);
  const w = acl.find((e) => e.perms.includes("w") && !(e.tag === "user" && e.qualifier === ""));
  if (w) throw unsafe(`${rel} has an ACL entry granting write to someone but its owner (${w.text})`, rel);
}

/** `.pi`: may belong to a person (pi keeps its settings there), never writable by the sandbox user. */
function checkPiDir(
  st: { uid: number; gid: number; mode: number },
  acl: AclEntry[],
  who: SandboxIdentity | null,
  user: string,
): void {
  const rel = PI_DIR_NAME;
  if (who && st.uid === who.uid)
    throw unsafe(`${rel} is owned by the sandbox user ${user} (uid ${who.uid})`, rel);
  if (st.mode & 0o022)
    throw unsafe(`${rel} is writable by its group or others (mode ${octal(st.mode)})`, rel);
  const grants = (e: AclEntry) => {
    if (e.isDefault || !e.perms.includes("w")) return false;
    // Without the sandbox user's identity, any named or group entry with write might be it.
    if (e.tag === "user") return e.qualifier !== "" && (!who || Number(e.qualifier) === who.uid);
    if (e.tag === "group") {
      const gid = e.qualifier === "" ? st.gid : Number(e.qualifier);
      return !who || who.gids.includes(gid);
    }
    return false;
  };
  const w = acl.find(grants);
  if (w) throw unsafe(`${rel} has an ACL entry granting the sandbox user ${user} write (${w.text})`, rel);
}

const hostUid = () => process.geteuid?.() ?? 0;
const octal = (mode: number) => `0${(mode & 0o7777).toString(8)}`;

/**
 * Opens `name` below the parent's handle without following it. Missing and `create`: runs
 * `beforeCreate`, makes it (the host's user, 0755), strips every ACL entry it inherited.
 */
async function openDirAt(
  parentFd: number,
  name: string,
  rel: string,
  create: boolean,
  beforeCreate?: () => Promise<void>,
): Promise<fs.FileHandle> {
  const open = () => fs.open(viaFd(parentFd, name), DIR_FLAGS);
  try {
    return await open();
  } catch (err) {
    const code = errno(err);
    if (code === "ELOOP" || code === "ENOTDIR") throw unsafe(`${rel} is a symlink or not a folder`, rel);
    if (code === "EACCES")
      throw new AppError("FILE_NOT_READABLE", `the host may not open ${rel}`, { details: { path: rel } });
    if (code !== "ENOENT") throw err;
    if (!create) throw new AppError("FILE_NOT_FOUND", `${rel} does not exist`, { details: { path: rel } });
  }
  await beforeCreate?.();
  await fs.mkdir(viaFd(parentFd, name), { mode: 0o755 }).catch((err) => {
    throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", `cannot create ${rel}`, { cause: err });
  });
  const handle = await open().catch(() => {
    throw unsafe(`${rel} was replaced while the host created it`, rel);
  });
  try {
    if ((await handle.stat()).uid !== hostUid())
      throw unsafe(`${rel} was replaced while the host created it`, rel);
    await stripAcl(handle.fd, rel);
    await handle.chmod(0o755);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** The seal checks on open handles: `.pi`, and `.pi/plan` when it is open already. */
async function checkFolders(pi: fs.FileHandle, plan: fs.FileHandle | null, user: string): Promise<void> {
  const handles = plan ? [pi, plan] : [pi];
  const [who, acls, stats] = await Promise.all([
    sandboxIdentity(user),
    folderAcls(handles, [PI_DIR_NAME, PLAN_DIR_REL]),
    Promise.all(handles.map((h) => h.stat())),
  ]);
  checkPiDir(stats[0]!, acls[0]!, who, user);
  if (plan) checkPlanDir(stats[1]!, acls[1]!);
}

/** How long after a plan write its folder's ACL is read again: past the request that wrote it. */
const RESEAL_DELAY_MS = 50;
const reseals = new Map<string, ReturnType<typeof setTimeout>>();

/**
 * After the host wrote in `.pi/plan` (which moves its change time): checks both folders again a
 * little later, so the next check finds their ACLs remembered (`folderAcls`). Later: starting
 * getfacl holds the event loop about a millisecond (the fork), which would land on the request
 * that wrote the plan; writes in the same workspace meanwhile share one check. Never fails; a
 * folder made unsafe meanwhile is refused by that next check as before.
 */
export function resealAfterWrite(workspaceRoot: string, sandboxUser?: string): void {
  if (reseals.has(workspaceRoot)) return;
  const timer = setTimeout(() => {
    reseals.delete(workspaceRoot);
    void openPlanDir(workspaceRoot, {
      create: false,
      check: true,
      ...(sandboxUser ? { sandboxUser } : {}),
    })
      .then((dir) => dir.close())
      .catch(() => {});
  }, RESEAL_DELAY_MS);
  timer.unref();
  reseals.set(workspaceRoot, timer);
}

/** A plan file name: one component, no separator, never `.` or `..`. */
function checkName(name: string): void {
  if (!name || name === "." || name === ".." || name.includes("/") || name.includes("\0"))
    throw unsafe(`${JSON.stringify(name)} is not a file name in ${PLAN_DIR_REL}`, PLAN_DIR_REL);
}

/** An open `.pi/plan`: its files are reached by name through this handle only. */
export interface PlanDir {
  /** Creates `name` exclusively with these bytes, 0444, flushed; false when the name exists. */
  createFile(name: string, bytes: Uint8Array, beforeWrite?: () => Promise<void>): Promise<boolean>;
  /** A regular file's bytes (at most maxBytes); a symlink or anything else is PLAN_ARTIFACT_PATH_UNSAFE. */
  readFile(name: string, maxBytes: number): Promise<Buffer>;
  /** Names of the regular `*.md` files. */
  listMarkdown(): Promise<string[]>;
  /** Unlinks `name` (never following it); a missing name is not an error. */
  removeFile(name: string): Promise<void>;
  /** fsync of the folder, so a created name survives a crash. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenPlanDirOptions {
  /** Create a missing `.pi` / `.pi/plan` (as the host's user, 0755, every ACL entry removed). */
  create: boolean;
  /** Check owner, mode bits and ACLs of both folders on the open handles (before writes and sandbox starts). */
  check: boolean;
  /** The sandbox user the `.pi` check is about (the host's config; default pihost-sandbox). */
  sandboxUser?: string;
}

/**
 * Opens `<workspaceRoot>/.pi/plan` by handles: the root (the project's recorded real path) and each
 * folder below it with O_NOFOLLOW|O_DIRECTORY. Refuses PLAN_ARTIFACT_PATH_UNSAFE with the reason when a
 * folder is a link, not a folder, or (with `check`) not sealed; FILE_NOT_FOUND when one is missing and
 * `create` is off. It repairs nothing: only folders it created itself are changed (ACLs stripped).
 */
export async function openPlanDir(workspaceRoot: string, opts: OpenPlanDirOptions): Promise<PlanDir> {
  let root: fs.FileHandle;
  try {
    root = await fs.open(workspaceRoot, DIR_FLAGS);
  } catch (err) {
    const code = errno(err);
    if (code === "ELOOP" || code === "ENOTDIR")
      throw unsafe("the workspace root is a symlink or not a folder", ".");
    if (code === "ENOENT" && !opts.create)
      throw new AppError("FILE_NOT_FOUND", "the workspace root does not exist", { details: { path: "." } });
    throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", "the workspace root is not accessible", { cause: err });
  }
  let pi: fs.FileHandle | undefined;
  let plan: fs.FileHandle | undefined;
  const user = opts.sandboxUser ?? DEFAULT_SANDBOX_USER;
  try {
    const piDir = await openDirAt(root.fd, PI_DIR_NAME, PI_DIR_NAME, opts.create);
    pi = piDir;
    // `.pi` is judged before anything is made inside it; only what this call made is ever changed.
    const beforePlan = opts.check ? () => checkFolders(piDir, null, user) : undefined;
    plan = await openDirAt(pi.fd, PLAN_DIR_NAME, PLAN_DIR_REL, opts.create, beforePlan);
    if (opts.check) await checkFolders(pi, plan, user);
  } catch (err) {
    await Promise.all([plan?.close(), pi?.close(), root.close()].map((c) => c?.catch(() => {})));
    throw err;
  }
  await Promise.all([pi.close(), root.close()]);
  return planDirApi(plan);
}

function planDirApi(dir: fs.FileHandle): PlanDir {
  const at = (name: string) => {
    checkName(name);
    return viaFd(dir.fd, name);
  };
  return {
    async createFile(name, bytes, beforeWrite) {
      const target = at(name);
      let file: fs.FileHandle;
      try {
        file = await fs.open(
          target,
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o600,
        );
      } catch (err) {
        if (errno(err) === "EEXIST") return false;
        throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", "cannot create the plan file", { cause: err });
      }
      try {
        await beforeWrite?.();
        await file.writeFile(bytes);
        await file.chmod(0o444);
        await file.sync();
        await file.close();
      } catch (err) {
        await file.close().catch(() => {});
        await fs.unlink(target).catch(() => {});
        throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", "cannot write the plan file", { cause: err });
      }
      return true;
    },
    async readFile(name, maxBytes) {
      const rel = `${PLAN_DIR_REL}/${name}`;
      const refuse = (err: unknown, what: string): never => {
        if (err instanceof AppError) throw err;
        const code = errno(err);
        if (code === "ELOOP" || code === "ENOTDIR") throw unsafe(`${rel} is a symlink`, rel);
        if (code === "ENOENT")
          throw new AppError("FILE_NOT_FOUND", `${rel} does not exist`, { details: { path: rel } });
        throw new AppError("FILE_NOT_READABLE", `${what} ${rel}`, { cause: err, details: { path: rel } });
      };
      // lstat first: a device or FIFO is refused without being opened.
      const st = await fs.lstat(at(name)).catch((err) => refuse(err, "the host cannot stat"));
      if (st.isSymbolicLink()) throw unsafe(`${rel} is a symlink`, rel);
      if (!st.isFile()) throw unsafe(`${rel} is not a regular file`, rel);
      const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
      const file = await fs.open(at(name), flags).catch((err) => refuse(err, "the host may not read"));
      try {
        const now = await file.stat();
        if (!now.isFile() || now.ino !== st.ino || now.dev !== st.dev)
          throw unsafe(`${rel} was replaced while being read`, rel);
        if (now.size > maxBytes)
          throw new AppError("FILE_NOT_READABLE", `${rel} is ${now.size} bytes, more than any plan`, {
            details: { path: rel, byteSize: now.size },
          });
        return await file.readFile();
      } catch (err) {
        return refuse(err, "the host cannot read");
      } finally {
        await file.close();
      }
    },
    async listMarkdown() {
      const entries = await fs.readdir(`/proc/self/fd/${dir.fd}`, { withFileTypes: true });
      return entries
        .filter((e) => e.isFile() && e.name.endsWith(".md"))
        .map((e) => e.name)
        .sort();
    },
    async removeFile(name) {
      await fs.unlink(at(name)).catch((err) => {
        if (errno(err) !== "ENOENT") throw err;
      });
    },
    sync: () => dir.sync(),
    close: () => dir.close(),
  };
}

/**
 * Before every sandbox start: `.pi/plan` exists and is sealed (created if missing), so binding
 * `<workspace>/.pi` read-only leaves the agent no way to rename, replace or link it. Returns the
 * `.pi` path to bind; anything unsafe is SANDBOX_UNAVAILABLE with the reason, nothing repaired.
 */
export async function sealedPiDir(workspace: string, sandboxUser?: string): Promise<string> {
  let dir: PlanDir;
  try {
    dir = await openPlanDir(workspace, {
      create: true,
      check: true,
      ...(sandboxUser ? { sandboxUser } : {}),
    });
  } catch (err) {
    const reason =
      err instanceof AppError ? String(err.details?.reason ?? err.message) : (err as Error).message;
    throw sandboxUnavailable(`the workspace's .pi folder is not safe to bind: ${reason}`, {
      code: err instanceof AppError ? err.code : "INTERNAL",
      path: PLAN_DIR_REL,
    });
  }
  await dir.close();
  return path.join(workspace, PI_DIR_NAME);
}
