// Whether the sandbox user can use a workspace (asked of the kernel, as that user), and the operator's
// opt-in grant through POSIX ACLs (PI_SANDBOX_GRANT_ACL, docs/operations.md "The Bash sandbox"). The
// grant never follows a symbolic link: every entry is opened by file descriptor, component by component.
import { execFile } from "node:child_process";
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import { AppError } from "../../protocol/app-error.ts";
import { asUser, lookupSandboxUser, type SandboxUser } from "./sandbox-user.ts";

/** Entries (files and folders) one grant walks at most; a bigger tree is granted by hand. */
export const GRANT_MAX_ENTRIES = 50_000;
/** Descriptors handed to one setfacl run. */
const BATCH = 200;

export type SandboxAccess =
  | { ok: true }
  | { ok: false; path: string; missing: "enter" | "read" | "write"; reason: string };

export interface AccessSettings {
  user: string;
}

export interface GrantResult {
  /** Folders and regular files that got the access entries (folders also the default entries). */
  granted: number;
  /** Folders above the workspace, from the configured root down, that got search (`--x`) only. */
  searchOnly: string[];
  /** Entries left alone: symbolic links, special files, files with more than one hard link. */
  skipped: number;
}

function run(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(file, args, { encoding: "utf8", maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** Every folder from `/` down to `root`, root last. */
function foldersDownTo(root: string): string[] {
  const out: string[] = [];
  let p = root;
  for (;;) {
    out.unshift(p);
    const up = path.dirname(p);
    if (up === p) return out;
    p = up;
  }
}

/** As the user: the first of the folders it cannot enter, then whether it may read and write the last. */
const CHECK_SCRIPT = `for d in "$@"; do [ -x "$d" ] || { printf 'enter\\n%s' "$d"; exit 3; }; done
last=$d; [ -r "$last" ] || { printf 'read\\n%s' "$last"; exit 3; }
[ -w "$last" ] || { printf 'write\\n%s' "$last"; exit 3; }`;

/**
 * Can the sandbox user enter every folder down to `root`, and read and write `root`? Asked of the
 * kernel by running `test` as that user (setpriv), so ACLs, groups and mounts all count. Throws
 * SANDBOX_UNAVAILABLE when the check cannot run as that user (no such user, the host not root).
 */
export async function checkSandboxAccess(
  root: string,
  settings: AccessSettings,
  user?: SandboxUser,
): Promise<SandboxAccess> {
  const u = user ?? (await lookupSandboxUser(settings.user));
  const r = await run("setpriv", [...asUser(u), "/bin/sh", "-c", CHECK_SCRIPT, "sh", ...foldersDownTo(root)]);
  if (r.code === 0) return { ok: true };
  const [missing, at] = r.stdout.split("\n");
  if (r.code !== 3 || (missing !== "enter" && missing !== "read" && missing !== "write") || !at) {
    throw new AppError(
      "SANDBOX_UNAVAILABLE",
      `sandbox unavailable: cannot run a check as ${u.name}: ${r.stderr.trim() || `exit ${r.code}`}`,
      { details: { reason: "access check failed", user: u.name } },
    );
  }
  const verb = missing === "enter" ? "enter (search)" : missing;
  return { ok: false, path: at, missing, reason: `the sandbox user ${u.name} cannot ${verb} ${at}` };
}

/** The commands an operator runs to grant by hand what `grantSandboxAccess` grants. */
export function manualGrantCommand(root: string, userName: string): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const u = `u:${userName}:rwX`;
  return (
    `find ${q(root)} -path ${q(path.join(root, ".pi"))} -prune -o -type d -exec setfacl -m ${u},d:${u} {} + ` +
    `-o -type f -exec setfacl -m ${u} {} +` +
    ` (and setfacl -m u:${userName}:--x on each folder above it that ${userName} cannot enter)`
  );
}

const notUsable = (message: string, details: Record<string, unknown> = {}) =>
  new AppError("WORKSPACE_NOT_USABLE", message, { details });

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** `name` opened inside the folder behind `dir` (an openat through /proc), never following a link. */
const openIn = (dir: fs.FileHandle, name: string, flags: number) =>
  fs.open(`/proc/self/fd/${dir.fd}/${name}`, flags);
/** The path of an open descriptor as another root process (setfacl) reaches it. */
const fdPath = (h: fs.FileHandle) => `/proc/${process.pid}/fd/${h.fd}`;

/**
 * One grant's walk: the descriptors it holds open (every one closed when the grant ends, whatever
 * happens), the count of entries seen, what it granted, and the descriptors waiting for setfacl.
 */
interface GrantWalk {
  root: string;
  user: SandboxUser;
  maxEntries: number;
  opened: fs.FileHandle[];
  count: number;
  result: GrantResult;
  acl: string;
  batches: { dirs: fs.FileHandle[]; files: fs.FileHandle[] };
}

async function openTracked(w: GrantWalk, p: Promise<fs.FileHandle>): Promise<fs.FileHandle> {
  const h = await p;
  w.opened.push(h);
  return h;
}

async function closeTracked(w: GrantWalk, h: fs.FileHandle): Promise<void> {
  w.opened.splice(w.opened.indexOf(h), 1);
  await h.close().catch(() => {});
}

/** The chain of folders from the configured root down, each opened inside its parent. */
async function openChain(w: GrantWalk, configuredRoot: string, names: string[]): Promise<fs.FileHandle[]> {
  const chain = [await openTracked(w, fs.open(configuredRoot, DIR_FLAGS))];
  for (const name of names) {
    const h = await openTracked(w, openIn(chain[chain.length - 1]!, name, DIR_FLAGS)).catch(
      (err: NodeJS.ErrnoException) => {
        throw notUsable(
          `${w.root} is not a real folder under ${configuredRoot} (${err.code}); nothing was granted`,
        );
      },
    );
    chain.push(h);
  }
  return chain;
}

/** Counts the entries under `dir` first, so that a tree over the bound changes nothing. */
async function countIn(w: GrantWalk, dir: fs.FileHandle, isTop: boolean): Promise<void> {
  for (const e of await fs.readdir(`/proc/self/fd/${dir.fd}`, { withFileTypes: true })) {
    if (isTop && e.name === ".pi") continue;
    if (++w.count > w.maxEntries)
      throw notUsable(
        `${w.root} has more than ${w.maxEntries} entries: too many to grant at projects.create; grant by hand: ${manualGrantCommand(w.root, w.user.name)}`,
        { maxEntries: w.maxEntries },
      );
    if (!e.isDirectory()) continue;
    const child = await openTracked(w, openIn(dir, e.name, DIR_FLAGS)).catch(() => null);
    if (!child) continue;
    try {
      await countIn(w, child, false);
    } finally {
      await closeTracked(w, child);
    }
  }
}

async function flush(w: GrantWalk, kind: "dirs" | "files"): Promise<void> {
  const list = w.batches[kind].splice(0);
  if (list.length === 0) return;
  const spec = kind === "dirs" ? `${w.acl},d:${w.acl}` : w.acl;
  const r = await run("setfacl", ["-m", spec, "--", ...list.map(fdPath)]);
  for (const h of list) await closeTracked(w, h);
  if (r.code !== 0) throw notUsable(`setfacl failed inside ${w.root}: ${r.stderr.trim()}`, { root: w.root });
  w.result.granted += list.length;
}

async function add(w: GrantWalk, kind: "dirs" | "files", h: fs.FileHandle): Promise<void> {
  w.batches[kind].push(h);
  if (w.batches[kind].length >= BATCH) await flush(w, kind);
}

async function grantIn(w: GrantWalk, dir: fs.FileHandle, isTop: boolean): Promise<void> {
  for (const e of await fs.readdir(`/proc/self/fd/${dir.fd}`, { withFileTypes: true })) {
    if (isTop && e.name === ".pi") continue;
    if (e.isDirectory()) {
      const child = await openTracked(w, openIn(dir, e.name, DIR_FLAGS)).catch(() => null);
      if (!child) {
        w.result.skipped++;
        continue;
      }
      await grantIn(w, child, false);
      await add(w, "dirs", child);
    } else if (e.isFile()) {
      const h = await openTracked(w, openIn(dir, e.name, FILE_FLAGS)).catch(() => null);
      const st = h ? await h.stat() : null;
      // A hard link may be another file's name (protected_hardlinks aside): leave it alone.
      if (!h || !st?.isFile() || st.nlink > 1) {
        if (h) await closeTracked(w, h);
        w.result.skipped++;
        continue;
      }
      await add(w, "files", h);
    } else w.result.skipped++;
  }
}

/** Search only on the folders above the workspace the user cannot enter yet. */
async function grantSearchAbove(
  w: GrantWalk,
  chain: fs.FileHandle[],
  configuredRoot: string,
  names: string[],
): Promise<void> {
  const { user } = w;
  const above = chain.slice(0, -1);
  const abovePaths = [
    configuredRoot,
    ...names.slice(0, -1).map((_, i) => path.join(configuredRoot, ...names.slice(0, i + 1))),
  ];
  for (let i = 0; i < above.length; i++) {
    // Asked by path (the user cannot reach the host's descriptors); granted through the descriptor.
    const check = await run("setpriv", [...asUser(user), "/usr/bin/test", "-x", abovePaths[i]!]);
    if (check.code === 0) continue;
    const current = await run("getfacl", ["-n", "--omit-header", "--", fdPath(above[i]!)]);
    const entry = new RegExp(`^user:${user.uid}:([r-])([w-])[x-]`, "m").exec(current.stdout);
    const perms = `${entry?.[1] ?? "-"}${entry?.[2] ?? "-"}x`;
    const r = await run("setfacl", ["-m", `u:${user.uid}:${perms}`, "--", fdPath(above[i]!)]);
    if (r.code !== 0) throw notUsable(`setfacl failed on ${abovePaths[i]}: ${r.stderr.trim()}`);
    w.result.searchOnly.push(abovePaths[i]!);
  }
}

/**
 * The opt-in grant: the sandbox user gets `rwX` access entries on every folder and regular file of
 * `root` (folders also `d:u:<user>:rwX` default entries, so new files inherit them), skipping
 * `<root>/.pi` entirely, and search only (`--x`) on the folders from `configuredRoot` down to `root`
 * it cannot enter yet. Only for a root under the configured root; symbolic links are never followed
 * (each entry is opened by descriptor with O_NOFOLLOW and granted through that descriptor), special
 * files and files with several hard links are skipped. Over `maxEntries` entries nothing is changed
 * (WORKSPACE_NOT_USABLE naming the manual command). Checked as the user afterwards.
 */
export async function grantSandboxAccess(
  root: string,
  configuredRoot: string,
  settings: AccessSettings,
  opts: { maxEntries?: number } = {},
): Promise<GrantResult> {
  const maxEntries = opts.maxEntries ?? GRANT_MAX_ENTRIES;
  const user = await lookupSandboxUser(settings.user);
  const rel = path.relative(configuredRoot, root);
  if (!path.isAbsolute(configuredRoot) || rel.startsWith("..") || path.isAbsolute(rel))
    throw new AppError("WORKSPACE_NOT_ALLOWED", `${root} is not under the configured root ${configuredRoot}`);
  const w: GrantWalk = {
    root,
    user,
    maxEntries,
    opened: [],
    count: 0,
    result: { granted: 0, searchOnly: [], skipped: 0 },
    acl: `u:${user.uid}:rwX`,
    batches: { dirs: [], files: [] },
  };
  try {
    const names = rel === "" ? [] : rel.split(path.sep);
    const chain = await openChain(w, configuredRoot, names);
    const top = chain[chain.length - 1]!;
    await countIn(w, top, true);

    await grantIn(w, top, true);
    await flush(w, "files");
    await flush(w, "dirs");
    await add(w, "dirs", top);
    await flush(w, "dirs");

    await grantSearchAbove(w, chain, configuredRoot, names);

    const after = await checkSandboxAccess(root, settings, user);
    if (!after.ok)
      throw notUsable(`${after.reason} even after the ACL grant (a folder above ${configuredRoot}?)`, {
        path: after.path,
        missing: after.missing,
      });
    return w.result;
  } finally {
    for (const h of w.opened.splice(0)) await h.close().catch(() => {});
  }
}
