// Guards of the session machine and the stand-ins for its I/O steps (each fails until the host
// provides the real one with machine.provide()). Pure; used by machines/session.machine.ts only.
import { fromPromise } from "xstate";
import type { SessionContext, SessionEvent, SessionFacts, StepInput, StepOutput } from "./session.types.ts";

type Args = { context: SessionContext; event: SessionEvent };

const notProvided = fromPromise<StepOutput, StepInput>(async () => {
  throw new Error("session machine actor not provided");
});

export const stepActors = {
  loadSession: fromPromise<SessionFacts, { sessionId: string }>(async () => {
    throw new Error("loadSession not provided");
  }),
  startTurn: notProvided,
  configure: notProvided,
  claimTurn: notProvided,
  enterPlan: notProvided,
  submitPlan: notProvided,
  resolvePlan: notProvided,
  endTurn: notProvided,
  abortWork: notProvided,
  expirePlan: notProvided,
};

/** The input of every step: the context and the request that started it. */
export const stepInput = ({ context }: { context: SessionContext }): StepInput => ({
  context,
  request: context.request,
});

const namesTurn = (event: SessionEvent, context: SessionContext) =>
  "turnId" in event && event.turnId === context.turnId;

export const sessionGuards = {
  isParked: ({ context }: Args) => context.proposalId !== null,
  isQueuedExecution: ({ context }: Args) => context.queued && context.turnId !== null,
  hasTurn: ({ context }: Args) => context.turnId !== null,
  isCurrentTurn: ({ context, event }: Args) => namesTurn(event, context),
  /** The event names the current turn and comes from the worker holding its lease. */
  isLeasedTurn: ({ context, event }: Args) => context.leased && namesTurn(event, context),
  isUnclaimedTurn: ({ context, event }: Args) => !context.leased && namesTurn(event, context),
  approved: (_: unknown, out: StepOutput) => out.activeTurnKind === "execution" && out.activeTurnId !== null,
  inAgent: ({ context }: Args) => context.mode === "agent",
  inPlan: ({ context }: Args) => context.mode === "plan",
};
