// The sandbox's network for projects that allow it (docs/operations.md "The Bash sandbox"): user-mode
// networking through slirp4netns, run as the sandbox user, host loopback disabled, seccomp on; never
// the host's network namespace. Name resolution goes to slirp4netns's forwarder.
import { type ChildProcess, spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import path from "node:path";
import { oncePerKey } from "./once-per-key.ts";
import { asUser, type SandboxUser } from "./sandbox-user.ts";

/** slirp4netns's default addresses: the sandbox is 10.0.2.100, the DNS forwarder 10.0.2.3. */
const SLIRP_DNS = "10.0.2.3";
/** How long slirp4netns may take to configure the sandbox's tap0 before the call is refused. */
const SLIRP_READY_TIMEOUT_MS = 10_000;

/**
 * The /etc files of a sandbox with network, written by the host (readable by the sandbox user),
 * once per data folder and host process, not on every call.
 */
export const prepareNetworkEtc: (dataDir: string) => Promise<string> = oncePerKey(writeNetworkEtc);

async function writeNetworkEtc(dataDir: string): Promise<string> {
  const dir = path.join(dataDir, "sandbox-etc");
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  await fs.chmod(dir, 0o755);
  const files: Record<string, string> = {
    "resolv.conf": `nameserver ${SLIRP_DNS}\n`,
    hosts: "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
  };
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(dir, name);
    const current = await fs.readFile(file, "utf8").catch(() => null);
    if (current === text) continue;
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, text, { mode: 0o644 });
    await fs.rename(tmp, file);
  }
  return dir;
}

/**
 * Starts slirp4netns for the sandbox whose first process is `pid`, as the sandbox user (it owns the
 * sandbox's user namespace, so it may join it): tap0 configured, host loopback disabled, seccomp on.
 * Resolves once tap0 is up; rejects with the reason otherwise. Closing the returned exit pipe (or the
 * host dying) ends it.
 */
export function startSlirp(
  setpriv: string,
  slirp: string,
  user: SandboxUser,
  pid: number,
): { proc: ChildProcess; ready: Promise<void> } {
  const proc = spawn(
    setpriv,
    [
      ...asUser(user),
      slirp,
      "--configure",
      "--mtu=65520",
      "--disable-host-loopback",
      "--enable-seccomp",
      "--ready-fd=3",
      "--exit-fd=4",
      `--userns-path=/proc/${pid}/ns/user`,
      String(pid),
      "tap0",
    ],
    { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], env: {}, cwd: "/" },
  );
  let stderr = "";
  proc.stderr!.setEncoding("utf8");
  proc.stderr!.on("data", (d: string) => {
    if (stderr.length < 4096) stderr += d;
  });
  (proc.stdio[4] as NodeJS.WritableStream).on("error", () => {});
  const ready = new Promise<void>((resolve, reject) => {
    const why = (what: string) => {
      const detail = stderr.trim().split("\n").slice(-3).join("; ");
      return `${what}${detail ? `: ${detail}` : ""}`;
    };
    const timer = setTimeout(
      () => reject(new Error(why("slirp4netns did not configure the network in time"))),
      SLIRP_READY_TIMEOUT_MS,
    );
    const fd3 = proc.stdio[3] as NodeJS.ReadableStream;
    fd3.on("data", () => {
      clearTimeout(timer);
      resolve();
    });
    fd3.on("error", () => {});
    proc.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`slirp4netns did not start: ${err.message}`));
    });
    proc.on("close", (code, signal) => {
      clearTimeout(timer);
      // Only before it was ready: a later exit is the sandbox ending.
      setImmediate(() =>
        reject(new Error(why(`slirp4netns exited (${code ?? signal}) before the network was up`))),
      );
    });
  });
  return { proc, ready };
}
