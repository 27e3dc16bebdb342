// Human-readable lines for session events, as `pihost prompt` and `plans approve --wait` print them.
// Pure: an event in, lines out. The exact approve/reject commands are spelled here.
import type { SessionEvent } from "../protocol/events.ts";
import type { ProposalView } from "../protocol/schemas.ts";
import { APPROVE_MODES } from "./cli-params.ts";
import type { Style } from "./terminal-text.ts";

const MAX_ARGS = 200;
const MAX_RESULT = 300;

function clip(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 3)}...` : oneLine;
}

function formatArgs(args: Record<string, unknown> | undefined): string {
  if (args === undefined) return "";
  let json: string;
  try {
    json = JSON.stringify(args);
  } catch {
    json = "{...}";
  }
  return clip(json, MAX_ARGS);
}

/** The commands a person types next for a pending plan; the mode is listed, never preselected. */
export function approvalHintLines(
  proposal: Pick<ProposalView, "proposalId" | "artifactPath">,
  bin = "pihost",
) {
  return [
    `plan awaiting approval: ${proposal.proposalId}`,
    `  file:    ${proposal.artifactPath} (in the project's workspace)`,
    `  read:    ${bin} plans show ${proposal.proposalId}`,
    `  approve: ${bin} plans approve ${proposal.proposalId} --mode MODE   (MODE: ${APPROVE_MODES.join(", ")})`,
    `  reject:  ${bin} plans reject ${proposal.proposalId}`,
  ];
}

function formatPlanChanged(e: SessionEvent<"plan.changed">): string[] {
  const p = e.proposal;
  const id = p?.proposalId ?? "?";
  switch (e.action) {
    case "submitted":
      return [
        `plan submitted: ${id} "${p?.title ?? ""}"`,
        `  file: ${p?.artifactPath ?? "?"} (${p?.byteSize ?? "?"} bytes, sha256 ${p?.sha256?.slice(0, 12) ?? "?"})`,
        ...(p?.question ? [`  question: ${p.question}`] : []),
      ];
    case "approved": {
      const mode = e.targetPermissionMode ?? p?.targetPermissionMode ?? "?";
      const exec =
        e.execution ?? (p?.executionId ? { executionId: p.executionId, state: p.executionState } : undefined);
      return [
        `plan approved: ${id} (permission mode ${mode})${exec ? `; execution ${exec.executionId} ${exec.state}` : ""}`,
      ];
    }
    case "rejected":
      return [`plan rejected: ${id}; the session stays in Plan`];
    case "expired":
      return [`plan expired: ${id} (approval deadline passed)`];
    case "interrupted":
      return [`plan interrupted: ${id}${p?.errorCode ? ` (${p.errorCode})` : ""}`];
    default:
      if (e.execution) {
        const code = e.execution.state === "interrupted" && p?.errorCode ? ` (${p.errorCode})` : "";
        return [`execution ${e.execution.executionId} ${e.execution.state}${code}`];
      }
      return [`planning state: ${e.state}`];
  }
}

/** Lines for one event; an empty array means the event is not worth a line of its own. */
export function formatEvent(e: SessionEvent): string[] {
  switch (e.type) {
    case "turn.started": {
      const t = e;
      return [`turn started: ${t.turnId} (${t.kind})`];
    }
    case "turn.claimed": {
      const t = e;
      return [`turn claimed: ${t.turnId} by worker ${t.workerId}`];
    }
    case "turn.ended": {
      const t = e;
      return [
        `turn ended: ${t.turnId} ${t.status}${t.code ? ` (${t.code})` : ""}${t.reason ? `: ${t.reason}` : ""}`,
      ];
    }
    case "message": {
      const m = e;
      return [`assistant: ${m.text}`];
    }
    case "tool.called": {
      const t = e;
      return [`tool call: ${t.tool} ${formatArgs(t.args)}`.trimEnd()];
    }
    case "tool.result": {
      const t = e;
      const verdict = t.decision === "allow" && t.isError ? "allow, failed" : t.decision;
      const code = t.code ? ` ${t.code}` : "";
      const text = t.text ? `: ${clip(t.text, MAX_RESULT)}` : "";
      return [`tool result: ${t.tool} ${verdict}${code}${text}`];
    }
    case "plan.changed":
      return formatPlanChanged(e);
    case "permission.requested": {
      // A person is needed now: what, how risky, until when, and the exact commands to answer.
      const p = e;
      return [
        `permission needed: ${p.tool} (${p.risk}) ${clip(JSON.stringify(p.preview), MAX_RESULT)} until ${p.deadline}`,
        `  answer: pihost permissions allow ${p.requestId}   (or allow-session, deny)`,
      ];
    }
    case "permission.resolved": {
      const p = e;
      return [`permission ${p.decision}: ${p.tool}${p.code ? ` (${p.code})` : ""}`];
    }
    case "session.changed": {
      const s = e;
      return [`session: mode ${s.mode}, permissions ${s.permissionMode}, planning ${s.planningState}`];
    }
    case "approvers.added": {
      // Printed as data: names come from the host, and an approver learns who named them.
      const a = e;
      return [`approvers added by ${a.addedBy}: ${a.approvers.join(", ")}`];
    }
    case "machine.state":
      // For machine viewers (the web console); people follow the other events. --json keeps it.
      return [];
    default:
      return [];
  }
}

/** The colour of an event's first line on a terminal: what needs a person stands out. */
export function eventStyle(e: SessionEvent): Style | null {
  switch (e.type) {
    case "permission.requested":
      return "alert";
    case "turn.ended": {
      const status = e.status;
      return status === "completed" ? "green" : status === "error" ? "red" : "yellow";
    }
    case "tool.result":
      return e.decision === "deny" ? "red" : null;
    case "plan.changed": {
      const action = e.action;
      return action === "submitted"
        ? "cyan"
        : action === "interrupted" || action === "expired"
          ? "yellow"
          : null;
    }
    default:
      return null;
  }
}
