// Whether this host can start a tool sandbox at all (docs/operations.md "What the sandbox needs from
// the runtime"): one sandbox like every tool's, probed once per host process at start, so a host on
// a runtime that forbids it (no bwrap, no user namespaces, a seccomp or AppArmor profile that refuses
// them, a /proc it may not mount) says so at start, in /readyz and host.status, not at each tool call.
import { deviceBinds, findProgram, NO_USER_NAMESPACES, systemBinds } from "./sandbox.ts";
import { oomScorePin, runProbe } from "./sandbox-oom.ts";
import { asUser, lookupSandboxUser } from "./sandbox-user.ts";

/** The availability part of host.status's `sandbox` (docs/protocol.md); the reason only when not. */
export interface SandboxAvailability {
  available: boolean;
  unavailableReason?: string;
}

/** host.status's `sandbox`: whether one starts here, and whether its oom_score_adj is pinned. */
export type SandboxStatus = SandboxAvailability & Awaited<ReturnType<typeof oomScorePin>>;

/** Inside the probe: the shell Bash runs, then the node the file helper runs (file-helpers.ts). */
const INSIDE = "[ -x /usr/bin/node ] || exit 3; exec /usr/bin/node -e 0";
/** Where a reader finds what bubblewrap needs from the kernel and the container runtime. */
const SEE = 'docs/operations.md "What the sandbox needs from the runtime"';

export interface ProbePrograms {
  bwrap: string | null;
  setpriv: string | null;
}

/**
 * Starts one sandbox as a tool's starts (setpriv to the sandbox user, bwrap with the same namespaces,
 * system part, /proc and /dev, no nested user namespaces) and runs the file helper's node in it.
 * Never rejects: anything that keeps it from running is `available: false` with the exact reason.
 */
export async function probeSandbox(
  settings: { user: string },
  programs: ProbePrograms = { bwrap: findProgram("bwrap"), setpriv: findProgram("setpriv") },
): Promise<SandboxAvailability> {
  const no = (reason: string): SandboxAvailability => ({ available: false, unavailableReason: reason });
  if (!programs.bwrap) return no("bwrap (Debian package bubblewrap) is not installed");
  if (!programs.setpriv) return no("setpriv (util-linux) is not installed");
  const user = await lookupSandboxUser(settings.user).catch((err: Error) => err);
  if (user instanceof Error) return no(user.message.replace(/^sandbox unavailable: /, ""));
  const args = [...systemBinds(), ...NO_USER_NAMESPACES, "--tmpfs", "/tmp", "--proc", "/proc"];
  args.push(...deviceBinds(), "--chdir", "/", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin");
  const r = await runProbe([
    programs.setpriv,
    ...asUser(user),
    programs.bwrap,
    ...args,
    "/bin/sh",
    "-c",
    INSIDE,
  ]);
  if (r.code === 0) return { available: true };
  if (r.code === 3) return no("/usr/bin/node (which runs the file tools inside the sandbox) is missing");
  const said = r.error ?? (r.stderr || `exit ${r.code}`);
  return no(`a sandbox as ${user.name} did not start: ${said} (${SEE})`);
}

const probed = new Map<string, Promise<SandboxAvailability>>();

/** probeSandbox once per host process and sandbox user: what start, /readyz and host.status say. */
export function sandboxAvailability(settings: { user: string }): Promise<SandboxAvailability> {
  let p = probed.get(settings.user);
  if (!p) {
    p = probeSandbox(settings);
    probed.set(settings.user, p);
  }
  return p;
}

/** host.status's `sandbox` for settings admins: both probes, each run once per process. */
export async function sandboxStatus(settings: { user: string }): Promise<SandboxStatus> {
  const [availability, oom] = await Promise.all([sandboxAvailability(settings), oomScorePin(settings)]);
  return { ...availability, ...oom };
}
