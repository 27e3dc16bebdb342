// Helpers for the plan lifecycle suites (crash points, races, changed plan file): scripted Plan
// sessions, waiting for a submitted proposal, row reads and the worker's own log lines.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { SessionEvent } from "../../services/protocol/events.ts";
import type { ProposalView, ScriptStep, SessionView } from "../../services/protocol/schemas.ts";
import { isEvent } from "./events.ts";
import { addMembers, type EventCollector, eventually, type Stack } from "./stack.ts";

/**
 * `<ws>/.pi/plan` made by hand as the host makes it (docs/operations.md "The plan folder"): 0755
 * folders with no ACL entry (a granted workspace's default ACL would otherwise be inherited).
 */
export function hostPlanDir(ws: string): string {
  const plan = path.join(ws, ".pi", "plan");
  mkdirSync(plan, { recursive: true });
  for (const dir of [path.dirname(plan), plan]) {
    execFileSync("setfacl", ["-b", "-k", dir]);
    chmodSync(dir, 0o755);
  }
  return plan;
}

export const exitPlanStep = (title: string, markdown = `# ${title}\n\n1. Do it.\n`): ScriptStep => ({
  toolCalls: [{ name: "ExitPlanMode", args: { title, markdown, question: `${title}?` } }],
});

export const writeStep = (file: string, content = "executed\n"): ScriptStep => ({
  toolCalls: [{ name: "Write", args: { path: file, content } }],
});

/** A project on a fresh workspace and a Plan session on it running `script` (scripted model). */
export async function newPlanSession(
  stack: Stack,
  name: string,
  script: ScriptStep[],
  approvers: string[] = [],
): Promise<{ ws: string; session: SessionView }> {
  const ws = stack.newWorkspace(name);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", {
    name: path.basename(ws),
    workspaceRoot: ws,
  });
  await addMembers(stack, project.id, approvers);
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode: "plan",
    approvers,
    model: { provider: "scripted", model: "script", script },
  });
  return { ws, session };
}

export const isPlanChanged = isEvent("plan.changed");

/** `principal` approves the proposal with `mode` for its execution (the identity fields from the view). */
export function approveProposal(stack: Stack, proposal: ProposalView, mode: string, principal = "alice") {
  return stack.client(principal).call("plans.resolve", {
    proposalId: proposal.proposalId,
    sessionId: proposal.sessionId,
    turnId: proposal.turnId,
    toolCallId: proposal.toolCallId,
    action: "approve",
    targetPermissionMode: mode,
  });
}

/** The proposal of the first `plan.changed` awaiting approval. */
export async function submitted(events: EventCollector) {
  const e = await events.waitFor(isEvent("plan.changed", (x) => x.state === "awaiting_approval"));
  return e.proposal!;
}

export function turnEnded(
  events: EventCollector,
  turnId: string,
  timeoutMs = 20_000,
): Promise<SessionEvent<"turn.ended">> {
  return events.waitFor(
    isEvent("turn.ended", (e) => e.turnId === turnId),
    timeoutMs,
  );
}

export async function rows<T = Record<string, unknown>>(
  stack: Stack,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  return (await stack.db.pool.query(sql, params)).rows as T[];
}

export async function approvalRow(stack: Stack, proposalId: string) {
  const [row] = await rows<{
    status: string;
    execution_id: string | null;
    execution_state: string | null;
    execution_turn_id: string | null;
    error_code: string | null;
    version: number;
  }>(
    stack,
    "SELECT status, execution_id, execution_state, execution_turn_id, error_code, version FROM plan_approvals WHERE id = $1",
    [proposalId],
  );
  return row!;
}

/** The fence (and other) audit rows of a session: action, code and the turn they name. */
export function auditRows(stack: Stack, sessionId: string, actionLike: string) {
  return rows<{ action: string; code: string | null; turn_id: string | null }>(
    stack,
    "SELECT action, code, turn_id FROM audit_log WHERE session_id = $1 AND action LIKE $2 ORDER BY id",
    [sessionId, actionLike],
  );
}

/** Scripted-model calls of a session (one JSON line per model call, docs/protocol.md "Test hooks"). */
export function callsOf(stack: Stack, sessionId: string): Array<{ turnId: string; step: number }> {
  return stack.callLog().filter((c) => c.sessionId === sessionId) as Array<{ turnId: string; step: number }>;
}

/** Waits for a JSON log line of the current worker process with this event and turn. */
export function workerLogged(stack: Stack, events: string[], turnId: string, timeoutMs = 20_000) {
  return eventually(
    async () =>
      stack.worker!.lines.some((l) => {
        try {
          const j = JSON.parse(l) as { event?: string; turnId?: string };
          return j.turnId === turnId && events.includes(j.event ?? "");
        } catch {
          return false;
        }
      }),
    timeoutMs,
    `worker log ${events.join("|")} for ${turnId}`,
  );
}
