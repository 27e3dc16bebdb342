// The ACLs of the plan folder's open folders (docs/operations.md "The plan folder"): read by getfacl
// through the open inode, remembered while a folder's change time stays the same, and stripped from
// a folder the host made. plan-dir.ts decides what they allow.
import { execFile } from "node:child_process";
import type { promises as fs } from "node:fs";
import { AppError } from "../../protocol/app-error.ts";

const errno = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code;

export interface AclEntry {
  isDefault: boolean;
  tag: string;
  qualifier: string;
  perms: string;
  text: string;
}

/** A refusal of the plan folder: the exact reason, nothing repaired. */
export function unsafe(reason: string, rel: string): AppError {
  return new AppError("PLAN_ARTIFACT_PATH_UNSAFE", `${reason}; nothing was changed`, {
    details: { reason, path: rel },
  });
}

/** The host's fd as another process (getfacl, setfacl) can name it; the magic link is the open inode. */
const fdPath = (fd: number) => `/proc/${process.pid}/fd/${fd}`;

/** What a program the checks run (id, getfacl, setfacl, ls) printed, and how it ended. */
type RunResult = { ok: boolean; missing: boolean; out: string; err: string };
export function run(file: string, args: string[]): Promise<RunResult> {
  return new Promise((resolve) =>
    execFile(file, args, { encoding: "utf8", timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({
        ok: !err,
        missing: errno(err) === "ENOENT",
        out: String(stdout),
        err: String(stderr).trim() || String(err?.message ?? ""),
      }),
    ),
  );
}

function parseAcl(block: string): AclEntry[] {
  const entries: AclEntry[] = [];
  for (const raw of block.split("\n")) {
    const text = raw.replace(/\s*#.*$/, "").trim();
    if (!text) continue;
    const parts = text.split(":");
    const isDefault = parts[0] === "default";
    const [tag = "", qualifier = "", perms = ""] = isDefault ? parts.slice(1) : parts;
    entries.push({ isDefault, tag, qualifier, perms, text });
  }
  return entries;
}

/**
 * The ACL of each open folder, read by `getfacl --numeric --absolute-names` on /proc/<host pid>/fd/<n>:
 * getfacl follows the argument's link, and the kernel resolves that magic link to the open inode, not
 * to whatever the path names now. Without getfacl, `ls -ldL` tells only whether there is any ACL.
 */
async function aclsOf(fds: number[], rels: string[]): Promise<AclEntry[][]> {
  const paths = fds.map(fdPath);
  const r = await run("getfacl", ["--numeric", "--absolute-names", "--", ...paths]);
  if (r.ok) {
    const blocks = new Map<string, string>();
    for (const block of r.out.split(/^# file: /m).slice(1)) {
      const nl = block.indexOf("\n");
      blocks.set(block.slice(0, nl), block.slice(nl + 1));
    }
    return paths.map((p, i) => {
      const block = blocks.get(p);
      if (block === undefined) throw unsafe(`cannot read the ACL of ${rels[i]}`, rels[i]!);
      return parseAcl(block);
    });
  }
  if (!r.missing) throw unsafe(`cannot read the ACLs of ${rels.join(" and ")}: ${r.err}`, rels[0]!);
  const ls = await run("ls", ["-ldL", "--", ...paths]);
  const lines = ls.out.trim().split("\n");
  const i = ls.ok ? lines.findIndex((line) => line[10] === "+") : 0;
  if (i >= 0) throw unsafe(`${rels[i]} may carry ACL entries and getfacl (package acl) is missing`, rels[i]!);
  return paths.map(() => []);
}

/** Removes every ACL entry (access extended entries and the default ACL) of a folder the host just made. */
export async function stripAcl(fd: number, rel: string): Promise<void> {
  const r = await run("setfacl", ["--remove-all", "--remove-default", "--", fdPath(fd)]);
  if (r.ok) return;
  const [acl] = await aclsOf([fd], [rel]); // without setfacl: fine only if nothing was inherited
  if (r.missing && acl?.length === 0) return;
  throw unsafe(`cannot remove the ACL ${rel} inherited: ${r.err}`, rel);
}

/** Folders' ACLs as getfacl read them, by `aclKey`: at most this many kept. */
const ACLS_KEPT = 1024;
const aclsSeen = new Map<string, AclEntry[]>();

/**
 * What an unchanged ACL of an open folder is known by: device, inode, owner and change time in
 * nanoseconds. Every change of a folder's ACL (an extended attribute), mode or owner moves its
 * change time, which no unprivileged process can set back.
 */
const aclKey = (st: { dev: bigint; ino: bigint; uid: bigint; ctimeNs: bigint }) =>
  `${st.dev}:${st.ino}:${st.uid}:${st.ctimeNs}`;

/**
 * The ACLs of the open folders: remembered from an earlier getfacl while each folder's `aclKey` is
 * the same, else read (getfacl is a process start, the bulk of a plan submission's own work and of
 * a sandbox start's seal check). What is read is remembered only when no folder's key moved while
 * getfacl ran. A plan file the host writes moves `.pi/plan`'s change time: `resealAfterWrite`
 * reads its ACL again then, off the request's path.
 */
export async function folderAcls(handles: fs.FileHandle[], rels: string[]): Promise<AclEntry[][]> {
  const keysOf = async () => (await Promise.all(handles.map((h) => h.stat({ bigint: true })))).map(aclKey);
  const before = await keysOf();
  const known = before.map((k) => aclsSeen.get(k));
  if (known.every((a) => a !== undefined)) return known as AclEntry[][];
  const acls = await aclsOf(
    handles.map((h) => h.fd),
    rels,
  );
  const after = await keysOf();
  if (after.every((k, i) => k === before[i])) {
    after.forEach((k, i) => {
      aclsSeen.delete(k);
      aclsSeen.set(k, acls[i]!);
    });
    while (aclsSeen.size > ACLS_KEPT) aclsSeen.delete(aclsSeen.keys().next().value as string);
  }
  return acls;
}
