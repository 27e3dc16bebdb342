// Helpers for the Bash sandbox tests: the sandbox user, workspaces it can write, and a /proc scan
// for processes that outlived their sandbox.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import type { TurnAssignment } from "../../services/protocol/schemas.ts";
import type { Stack } from "./stack.ts";
import { executeTool, promptAndClaim } from "./worker-double.ts";
import type { PermissionMode } from "../../services/protocol/modes.ts";

export const SANDBOX_USER = process.env.PI_SANDBOX_USER || "pihost-sandbox";

export function sandboxIds(): { uid: number; gid: number } {
  const [, , uid, gid] = execFileSync("getent", ["passwd", SANDBOX_USER], { encoding: "utf8" })
    .trim()
    .split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * The host's first non-loopback IPv4 address: what a sandbox with network may reach, and where a test
 * serves an origin "elsewhere" (a listed BrowserPreview origin; the host's loopback is out of reach).
 */
export function hostAddress(): string {
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  throw new Error("this machine has no non-loopback IPv4 address; the network and preview tests need one");
}

/** The stack's folder must be traversable by the sandbox user (bwrap binds from its paths). */
export function openStackDir(stack: Stack): void {
  chmodSync(stack.dir, 0o711);
}

/** A fresh workspace owned by the sandbox user (docs/operations.md: workspaces must be writable by it). */
export function sandboxWorkspace(stack: Stack, name: string): string {
  const ws = stack.newWorkspace(name);
  const { uid, gid } = sandboxIds();
  chownSync(ws, uid, gid);
  return ws;
}

/** Writes a workspace file as the agent would have: owned by the sandbox user (so Edit may change it). */
export function writeSandboxFile(file: string, content: string): void {
  writeFileSync(file, content);
  const { uid, gid } = sandboxIds();
  chownSync(file, uid, gid);
}

/** Pids of live (not zombie) processes whose command line contains marker. */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (cmd.includes(marker) && !/\)\s+[ZX]\s/.test(stat)) found.push(Number(entry));
    } catch {}
  }
  return found.filter((p) => p !== process.pid);
}

/** Starts a turn in a fresh session over a sandbox-writable workspace and claims it as the worker. */
export async function sandboxTurn(
  stack: Stack,
  mode: "agent" | "plan",
  permissionMode: PermissionMode = "auto",
): Promise<{ ws: string; projectId: string; assignment: TurnAssignment }> {
  const ws = sandboxWorkspace(stack, `ws-${mode}-${Math.random().toString(36).slice(2, 8)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "p", workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode,
    permissionMode,
  });
  return { ws, projectId: project.id, assignment: await promptAndClaim(stack, session.id) };
}

/** A live Agent turn under `auto` in a new session of alice's project (claimed as the worker). */
export async function agentTurnIn(stack: Stack, projectId: string): Promise<TurnAssignment> {
  const session = await stack
    .client("alice")
    .call("session.create", { projectId, mode: "agent", permissionMode: "auto" });
  return promptAndClaim(stack, session.id);
}

/** tools.execute as the worker, each call with a fresh toolCallId. */
export function toolCaller(stack: Stack) {
  let n = 0;
  return (a: TurnAssignment, tool: string, args: Record<string, unknown>) =>
    executeTool(stack, a, `c${++n}`, tool, args);
}
