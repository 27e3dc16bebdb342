// Human text for `pihost plans history` and `pihost plans get`: one block per proposal whose first
// line spells its status plainly (interrupted, expired, approved and how its execution went, ...).
// Pure: a ProposalView in, lines out; every string from the host is printed as data.
import type { ProposalHistoryPage, ProposalView } from "../protocol/schemas.ts";
import { approvalHintLines } from "./event-format.ts";

/**
 * A string from the bus on one line: control characters and bidi overrides are shown escaped (a
 * newline in an agent's title could otherwise print a line that looks like another plan's status).
 */
function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu, (c) =>
    c === "\n"
      ? "\\n"
      : c === "\r"
        ? "\\r"
        : c === "\t"
          ? "\\t"
          : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * What each error code a plan row can carry means, in one sentence: an interrupted approval, an
 * expired one, and the ways an approved execution ends without completing.
 */
const APPROVAL_CODES: Record<string, string> = {
  PLAN_APPROVAL_INTERRUPTED:
    "the host restarted (or the session was aborted) while the plan waited for approval; nothing was approved",
  PLAN_APPROVAL_TIMEOUT: "nobody approved or rejected the plan before its deadline; nothing was approved",
};

const EXECUTION_CODES: Record<string, string> = {
  PLAN_EXECUTION_INTERRUPTED:
    "the approved execution was stopped (an abort, a host restart or stop, or its worker stopping) and is never run again",
  PLAN_ARTIFACT_HASH_MISMATCH: "the plan file changed after approval, so the execution was not run",
  PLAN_APPROVAL_TIMEOUT: "the execution proposed a new plan whose approval deadline passed",
  PLAN_APPROVAL_INTERRUPTED: "the execution proposed a new plan whose approval wait was interrupted",
};

/** One sentence for an error code on a plan row; a code this CLI does not know is named as such. */
export function planCodeMeaning(code: string, where: "approval" | "execution"): string {
  const known = where === "approval" ? APPROVAL_CODES[code] : EXECUTION_CODES[code];
  return (
    known ??
    `the ${where === "approval" ? "approval" : "execution turn"} ended with ${code} (see docs/errors.md)`
  );
}

function executionText(p: ProposalView): string {
  if (p.executionId === null) return "no execution";
  const exec = `execution ${p.executionId}`;
  switch (p.executionState) {
    case "queued":
      return `${exec} queued (waiting for a worker to claim it)`;
    case "running":
      return `${exec} running`;
    case "completed":
      return `${exec} completed`;
    case "interrupted":
      return p.errorCode
        ? `${exec} interrupted (${p.errorCode}): ${planCodeMeaning(p.errorCode, "execution")}`
        : `${exec} interrupted`;
    default:
      return `${exec} ${p.executionState ?? "?"}`;
  }
}

/** The status line's text: the status first, then what it means for the person reading. */
export function planStatusText(p: ProposalView): string {
  switch (p.status) {
    case "pending":
      return `pending: awaiting approval until ${p.deadline}`;
    case "approved":
      return `approved (permission mode ${p.targetPermissionMode ?? "?"}); ${executionText(p)}`;
    case "rejected":
      return "rejected: nothing ran; the session stayed in Plan";
    case "expired":
      return `expired${p.errorCode ? ` (${p.errorCode})` : ""}: the approval deadline ${p.deadline} passed; nothing was approved; submit the plan again`;
    case "interrupted":
      return p.errorCode
        ? `interrupted (${p.errorCode}): ${planCodeMeaning(p.errorCode, "approval")}; submit the plan again`
        : "interrupted: the wait for approval ended without an answer; submit the plan again";
    default:
      return `${String(p.status)}${p.errorCode ? ` (${p.errorCode})` : ""}`;
  }
}

/** One proposal's block: `plan ID: STATUS ...`, its details, and for a pending one the commands. */
export function formatPlanBlock(p: ProposalView): string[] {
  const lines = [
    `plan ${p.proposalId}: ${planStatusText(p)}`,
    `  title:    ${oneLine(p.title)}`,
    ...(p.question ? [`  question: ${oneLine(p.question)}`] : []),
    `  session:  ${p.sessionId} (turn ${p.turnId})`,
    `  created:  ${p.createdAt}${p.resolvedAt ? `, resolved ${p.resolvedAt}` : ""}`,
  ];
  if (p.status === "pending") return [...lines, ...approvalHintLines(p).map((l) => `  ${l}`)];
  return [...lines, `  file:     ${p.artifactPath} (${p.byteSize} bytes, sha256 ${p.sha256.slice(0, 12)})`];
}

/** A history page: the blocks newest first, then the command for the older page if there is one. */
export function formatPlanHistory(
  page: ProposalHistoryPage,
  opts: { sessionId: string; limit?: string | undefined },
  bin = "pihost",
): string[] {
  if (page.proposals.length === 0) return [`no plans in session ${opts.sessionId}`];
  const lines = page.proposals.flatMap((p, i) => [...(i > 0 ? [""] : []), ...formatPlanBlock(p)]);
  if (page.next !== null) {
    const limit = opts.limit !== undefined ? ` --limit ${opts.limit}` : "";
    lines.push(
      "",
      `older plans: ${bin} plans history --session ${opts.sessionId}${limit} --before ${page.next}`,
    );
  }
  return lines;
}
