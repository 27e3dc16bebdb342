// Decides, event by event, what a following command shows and when it stops: `pihost prompt` follows
// one turn until it ends or parks on a plan awaiting approval; `plans approve --wait` follows the
// execution turn the approval queued. Pure: events in, decisions out; the caller owns the subscription.
import type { SessionEvent } from "../protocol/events.ts";
import type { ProposalView } from "../protocol/schemas.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

export type FollowTarget =
  /** A prompt turn whose id session.prompt returned. */
  | { kind: "turn"; turnId: string }
  /** The execution of an approved proposal; its turn id is learned from turn.started (kind execution). */
  | { kind: "execution"; proposalId: string; turnId: string | null };

export interface FollowState {
  target: FollowTarget;
  turnEnded: boolean;
}

export type FollowReason =
  | "turn-ended"
  | "awaiting-approval"
  | "execution-completed"
  | "execution-interrupted";

export interface FollowDone {
  exitCode: ExitCode;
  reason: FollowReason;
  /** The proposal awaiting approval (reason awaiting-approval). */
  proposal?: ProposalView;
}

export interface FollowStep {
  state: FollowState;
  /** Whether the event belongs to what is followed (and so is printed). */
  show: boolean;
  done: FollowDone | null;
}

export function startFollow(target: FollowTarget): FollowState {
  return { target, turnEnded: false };
}

function eventTurnId(e: SessionEvent): string | undefined {
  const v = (e as { turnId?: unknown }).turnId;
  return typeof v === "string" ? v : undefined;
}

function followTurnEvent(state: FollowState, e: SessionEvent): FollowStep {
  const turnId = eventTurnId(e);
  let target = state.target;
  if (target.kind === "execution" && target.turnId === null) {
    if (e.type !== "turn.started" || e.kind !== "execution") return { state, show: false, done: null };
    target = { ...target, turnId: turnId ?? null };
  }
  if (turnId === undefined || turnId !== target.turnId) return { state, show: false, done: null };
  const next: FollowState = { target, turnEnded: state.turnEnded };
  if (e.type !== "turn.ended") return { state: next, show: true, done: null };
  const status = e.status;
  next.turnEnded = true;
  return {
    state: next,
    show: true,
    done: {
      // Aborted (by a person, or fenced by a restart) is an interruption; an error is a failure.
      exitCode: status === "completed" ? EXIT.OK : status === "aborted" ? EXIT.INTERRUPTED : EXIT.REFUSED,
      reason: "turn-ended",
    },
  };
}

function followPlanChanged(state: FollowState, e: SessionEvent<"plan.changed">): FollowStep {
  const target = state.target;
  const proposal = e.proposal;
  if (target.kind === "turn") {
    if (proposal !== undefined && proposal.turnId !== target.turnId) {
      return { state, show: false, done: null };
    }
    if (e.state === "awaiting_approval" && proposal !== undefined) {
      return { state, show: true, done: { exitCode: EXIT.OK, reason: "awaiting-approval", proposal } };
    }
    return { state, show: true, done: null };
  }
  if (proposal !== undefined && proposal.proposalId !== target.proposalId) {
    return { state, show: false, done: null };
  }
  // The approval itself is what the resolve reply already reported.
  if (e.action === "approved") return { state, show: false, done: null };
  const exec = e.execution?.state ?? proposal?.executionState ?? null;
  if (exec === "interrupted") {
    return { state, show: true, done: { exitCode: EXIT.INTERRUPTED, reason: "execution-interrupted" } };
  }
  // Completed: stop now unless the execution turn is known and its turn.ended is still to come.
  if (exec === "completed" && (target.turnId === null || state.turnEnded)) {
    return { state, show: true, done: { exitCode: EXIT.OK, reason: "execution-completed" } };
  }
  return { state, show: true, done: null };
}

export function followEvent(state: FollowState, e: SessionEvent): FollowStep {
  switch (e.type) {
    case "plan.changed":
      return followPlanChanged(state, e);
    case "session.changed":
      return { state, show: true, done: null };
    default:
      return followTurnEvent(state, e);
  }
}

/**
 * What an approval's recorded result already says, before any event: a replayed approve of an
 * execution that finished (or was interrupted) has nothing left to follow.
 */
export function doneFromProposal(p: Pick<ProposalView, "executionState">): FollowDone | null {
  if (p.executionState === "completed") return { exitCode: EXIT.OK, reason: "execution-completed" };
  if (p.executionState === "interrupted")
    return { exitCode: EXIT.INTERRUPTED, reason: "execution-interrupted" };
  return null;
}
