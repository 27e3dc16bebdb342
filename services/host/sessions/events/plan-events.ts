// The plan event bodies written in more than one place, once: the proposal as the wire shows it (no
// workspace root, owner or approvers) and the "interrupted" plan.changed body (abort, fence, refused claim).
import type { EventBodies } from "../../../protocol/events.ts";
import type { OperatingMode, ProposalView } from "../../../protocol/schemas.ts";
import { planningStateOf } from "../../store/session-facts.ts";
import type { Audience } from "./event-publisher.ts";

/** A proposal row as the store reads it, with the session's people and workspace. */
export type ProposalRecord = ProposalView & { workspaceRoot: string; owner: string; approvers: string[] };

/** The proposal's wire view and the audience of its session. */
export function splitProposal(p: ProposalRecord): { view: ProposalView; audience: Audience } {
  const { workspaceRoot: _w, owner, approvers, ...view } = p;
  return { view, audience: { sessionId: p.sessionId, owner, approvers } };
}

/** plan.changed for work that was interrupted; `mode` is the session's mode now (no approval is pending). */
export function interruptedPlanChanged(p: ProposalView, mode: OperatingMode): EventBodies["plan.changed"] {
  return {
    state: planningStateOf(mode, false),
    action: "interrupted",
    proposal: p,
    status: p.status,
    ...(p.executionId && p.executionState
      ? { execution: { executionId: p.executionId, state: p.executionState } }
      : {}),
  };
}
