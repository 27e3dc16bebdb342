// The unprivileged user every sandboxed program runs as (PI_SANDBOX_USER, docs/operations.md "The Bash
// sandbox"), the setpriv arguments that switch to it, and the SANDBOX_UNAVAILABLE refusal.
import { execFile } from "node:child_process";
import { AppError } from "../../protocol/app-error.ts";

export const DEFAULT_SANDBOX_USER = "pihost-sandbox";

export interface SandboxUser {
  name: string;
  uid: number;
  gid: number;
}

/** The refusal of anything that keeps the sandbox from starting: the program is never run unconfined. */
export function sandboxUnavailable(reason: string, details: Record<string, unknown> = {}): AppError {
  return new AppError("SANDBOX_UNAVAILABLE", `sandbox unavailable: ${reason}`, {
    details: { reason, ...details },
  });
}

/** How long one lookup is reused: every sandbox start needs the ids, a getent costs ~4 ms. */
const LOOKUP_TTL_MS = 10_000;
const lookups = new Map<string, { at: number; user: Promise<SandboxUser> }>();

/**
 * Looks the sandbox user up (getent), reusing a successful lookup for LOOKUP_TTL_MS; a missing
 * user or a root uid makes the sandbox unavailable (and is never reused).
 */
export function lookupSandboxUser(name: string): Promise<SandboxUser> {
  const hit = lookups.get(name);
  if (hit && performance.now() - hit.at < LOOKUP_TTL_MS) return hit.user;
  const user = lookupOnce(name);
  lookups.set(name, { at: performance.now(), user });
  user.catch(() => lookups.delete(name));
  return user;
}

async function lookupOnce(name: string): Promise<SandboxUser> {
  const line = await new Promise<string>((resolve) =>
    execFile("getent", ["passwd", name], (err, stdout) => resolve(err ? "" : String(stdout))),
  );
  const fields = line.trim().split(":");
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (fields.length < 4 || !Number.isInteger(uid) || !Number.isInteger(gid))
    throw sandboxUnavailable(`sandbox user ${name} does not exist`, { user: name });
  if (uid === 0 || gid === 0) throw sandboxUnavailable(`sandbox user ${name} is root`, { user: name });
  return { name, uid, gid };
}

/** setpriv's arguments that run the next program as the sandbox user, without capabilities. */
export function asUser(user: SandboxUser): string[] {
  return [`--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups", "--inh-caps=-all", "--"];
}
