// What the host prepares on its side before a sandbox starts (docs/operations.md "The Bash sandbox"):
// the session's scratch folder, the sandbox's own /etc files and the output FIFOs.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, constants, openSync, promises as fs } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { oncePerKey } from "./once-per-key.ts";
import { type SandboxUser, sandboxUnavailable } from "./sandbox-user.ts";

/**
 * The sandbox's stdout and stderr as FIFOs rather than Node's socketpairs: a program inside may
 * open /dev/stdout or /dev/stderr (/proc/self/fd/N), which fails on a socket. Each FIFO is made in a
 * private host folder, owned by the sandbox user (opening the magic link checks the inode), opened
 * at both ends (read end non-blocking) and unlinked at once. Returns the write ends for the child
 * and the read ends as streams.
 */
export async function outputFifos(
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
export async function prepareScratch(settings: { dataDir: string }, sessionId: string, user: SandboxUser) {
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
 * The sandbox's own /etc files the host writes (`<PI_DATA_DIR>/sandbox-etc`, 0755, files 0444):
 * a git configuration that trusts whatever workspace the sandbox is given (`safe.directory`), since
 * inside a sandbox there is only the one workspace.
 */
export function prepareSandboxEtc(dataDir: string): Promise<string> {
  return sandboxEtc(path.join(dataDir, "sandbox-etc"));
}
const sandboxEtc = oncePerKey(writeSandboxEtc);

async function writeSandboxEtc(dir: string): Promise<string> {
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  await fs.chmod(dir, 0o755);
  const file = path.join(dir, "gitconfig");
  const body = "[safe]\n\tdirectory = *\n";
  const current = await fs.readFile(file, "utf8").catch(() => null);
  if (current !== body) {
    const tmp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
    await fs.writeFile(tmp, body, { mode: 0o444 });
    await fs.rename(tmp, file);
  }
  await fs.chmod(file, 0o444);
  return dir;
}
