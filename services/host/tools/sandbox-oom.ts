// Whether the oom_score_adj 1000 every sandbox launcher sets is a floor the sandbox cannot lower
// (docs/security.md "Each sandbox has its own bounds"). Linux keeps a floor (oom_score_adj_min) only
// when the writer holds CAP_SYS_RESOURCE; without it any process may lower its score back down.
// Found out once per host process by a probe, told at start and in host.status.
import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import { findProgram } from "./sandbox.ts";
import { OOM_SCORE_ADJ } from "./sandbox-limits.ts";
import { asUser, lookupSandboxUser } from "./sandbox-user.ts";

/** `sandbox` of host.status (docs/protocol.md); `reason` only when not pinned. */
export interface OomPin {
  oomScorePinned: boolean;
  reason?: string;
}

const CAP_SYS_RESOURCE = 24n;
const PROBE_TIMEOUT_MS = 10_000;

/** Does this process hold CAP_SYS_RESOURCE (CapEff of /proc/self/status)? null if unreadable. */
export async function hasCapSysResource(): Promise<boolean | null> {
  const status = await fs.readFile("/proc/self/status", "utf8").catch(() => "");
  const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  return hex === undefined ? null : ((BigInt(`0x${hex}`) >> CAP_SYS_RESOURCE) & 1n) === 1n;
}

/** A probe's run: an empty environment, in /, its first 2 KiB of stderr, ended after `timeoutMs`. */
export function runProbe(
  argv: readonly string[],
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<{ code: number | null; stderr: string; error?: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ["ignore", "ignore", "pipe"],
      env: {},
      cwd: "/",
      timeout: timeoutMs,
    });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d: string) => {
      if (stderr.length < 2048) stderr += d;
    });
    child.on("error", (err) => resolve({ code: null, stderr: err.message, error: err.message }));
    child.on("close", (code, signal) =>
      resolve({ code, stderr: stderr.trim(), ...(signal ? { error: `ended by ${signal}` } : {}) }),
    );
  });
}

/**
 * The probe, as a sandbox launcher does it: a root shell writes 1000, execs setpriv to the sandbox
 * user, which tries to write 999. Exit 0: refused and still 1000 (pinned); 1: lowered; else failed.
 */
function probe(setpriv: string, userArgs: string[]): Promise<{ code: number | null; stderr: string }> {
  const lower = `echo ${OOM_SCORE_ADJ - 1} > /proc/self/oom_score_adj 2>/dev/null && exit 1; read v < /proc/self/oom_score_adj; [ "$v" = ${OOM_SCORE_ADJ} ] || exit 4`;
  const root = `echo ${OOM_SCORE_ADJ} > /proc/self/oom_score_adj || exit 3; exec "$@"`;
  return runProbe(["/bin/sh", "-c", root, "sh", setpriv, ...userArgs, "/bin/sh", "-c", lower]);
}

async function findOut(user: string): Promise<OomPin> {
  const capable = await hasCapSysResource();
  const setpriv = findProgram("setpriv");
  if (!setpriv) return { oomScorePinned: false, reason: "setpriv (util-linux) is not installed" };
  const sandboxUser = await lookupSandboxUser(user).catch(() => null);
  if (!sandboxUser) return { oomScorePinned: false, reason: `the sandbox user ${user} does not exist` };
  const { code, stderr } = await probe(setpriv, asUser(sandboxUser));
  if (code === 0) return { oomScorePinned: true };
  if (code === 1)
    return {
      oomScorePinned: false,
      reason:
        capable === false
          ? `the host lacks CAP_SYS_RESOURCE: a sandbox process may lower the oom_score_adj ${OOM_SCORE_ADJ} it starts with back to 0 (a probe did)`
          : `a process of the sandbox user lowered the oom_score_adj ${OOM_SCORE_ADJ} the host set (a probe did), although the host ${capable ? "holds" : "may hold"} CAP_SYS_RESOURCE`,
    };
  return {
    oomScorePinned: false,
    reason: `the probe of oom_score_adj did not run (exit ${code ?? "none"}${stderr ? `: ${stderr}` : ""})`,
  };
}

const found = new Map<string, Promise<OomPin>>();

/** Is oom_score_adj pinned for the sandboxes of `settings.user`? Probed once per process; never rejects. */
export function oomScorePin(settings: { user: string }): Promise<OomPin> {
  let p = found.get(settings.user);
  if (!p) {
    p = findOut(settings.user).catch((err: Error) => ({
      oomScorePinned: false,
      reason: `the probe of oom_score_adj failed: ${err.message}`,
    }));
    found.set(settings.user, p);
  }
  return p;
}
