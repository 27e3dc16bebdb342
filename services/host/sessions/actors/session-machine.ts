// The session machine as the host runs it: machines/session.machine.ts provided with the typed steps of
// session-actors.ts, the dispatcher's offers and revocations, and the approval deadline on the host clock.
import { fromPromise } from "xstate";
import {
  requestOf,
  type SessionFacts,
  type StepInput,
  type StepOutput,
  sessionMachine,
} from "../../../../machines/session.machine.ts";
import { type Result, refusalError } from "../../../protocol/result.ts";
import type { Clock } from "../../clock.ts";
import type { FaultInjector } from "./fault-injector.ts";
import type { SessionActors } from "./session-actors.ts";
import type { TurnDispatcher } from "../turns/turn-dispatcher.ts";

export interface SessionMachineDeps {
  steps: SessionActors;
  dispatcher: TurnDispatcher;
  clock: Clock;
  /** Test hooks only: injected failures of named steps, and the FAULT event's throwing action. */
  faults?: FaultInjector | undefined;
  /** A turn's token was revoked or parked: its permission prompts stop waiting. */
  onTurnRevoked?: ((turnId: string) => void) | undefined;
}

export function provideSessionMachine(deps: SessionMachineDeps) {
  const { steps, dispatcher, clock, faults } = deps;
  /** One I/O step of the machine, as a promise actor; test hooks may make it fail first. */
  const step = (name: string, fn: (input: StepInput) => Promise<StepOutput>) =>
    fromPromise<StepOutput, StepInput>(async ({ input }) => {
      await faults?.enter(name);
      return fn(input);
    });
  /**
   * A step that answers its refusal as a value (prompt, configure and the plan steps): the refusal
   * becomes the promise actor's failure, the one way xstate takes a step's onError (the state stays,
   * replyError answers the request with it); nothing was committed.
   */
  const refusableStep = (name: string, fn: (input: StepInput) => Promise<Result<StepOutput>>) =>
    step(name, async (input) => {
      const r = await fn(input);
      if (!r.ok) throw refusalError(r.refusal);
      return r.value;
    });
  const sessionOf = (input: StepInput) => input.context.sessionId;

  return sessionMachine.provide({
    actors: {
      loadSession: fromPromise<SessionFacts, { sessionId: string }>(({ input }) =>
        steps.loadSession(input.sessionId),
      ),
      startTurn: refusableStep("startTurn", (i) =>
        steps.startTurn(sessionOf(i), requestOf(i, "PROMPT").params),
      ),
      configure: refusableStep("configure", (i) =>
        steps.configure(sessionOf(i), requestOf(i, "CONFIGURE").params),
      ),
      claimTurn: step("claimTurn", (i) => {
        const { turnId, workerId } = requestOf(i, "CLAIM");
        return steps.claimTurn(i.context, turnId, workerId);
      }),
      enterPlan: refusableStep("enterPlan", (i) => {
        const { turnId, toolCallId } = requestOf(i, "ENTER_PLAN");
        return steps.enterPlan(sessionOf(i), turnId, toolCallId);
      }),
      submitPlan: refusableStep("submitPlan", (i) => {
        const { turnId, toolCallId, args } = requestOf(i, "SUBMIT_PLAN");
        return steps.submitPlan(sessionOf(i), turnId, toolCallId, args);
      }),
      resolvePlan: refusableStep("resolvePlan", (i) => {
        const { params, principal } = requestOf(i, "RESOLVE");
        return steps.resolvePlan(sessionOf(i), principal, params);
      }),
      endTurn: step("endTurn", (i) => {
        const { turnId, status, code, reason } = requestOf(i, "TURN_ENDED");
        return steps.endTurn(i.context, turnId, status, code, reason);
      }),
      abortWork: step("abortWork", (i) => steps.abortWork(i.context, i.request?.type === "ABORT")),
      expirePlan: step("expirePlan", (i) => steps.expirePlan(sessionOf(i))),
    },
    actions: {
      answerResolveFromRows: (_, { event }) => {
        if (event.type !== "RESOLVE") return;
        steps.resolveFromRows(event.principal, event.params).then(
          (r) => (r.ok ? event.reply.ok(r.value) : event.reply.error(refusalError(r.refusal))),
          (err) => event.reply.error(err),
        );
      },
      offerTurn: ({ context }, { turnId }) => {
        if (turnId)
          dispatcher.offer({
            turnId,
            sessionId: context.sessionId,
            kind: context.turnKind === "execution" ? "execution" : "prompt",
          });
      },
      revokeToken: (_, { turnId, park }) => {
        if (park) dispatcher.park(turnId);
        else dispatcher.revoke(turnId);
        if (turnId) deps.onTurnRevoked?.(turnId);
      },
      // Test hooks only: a FAULT event makes the actor fail, as a bug in an action would.
      ...(faults
        ? {
            injectFault: () => {
              throw new Error("injected actor fault");
            },
          }
        : {}),
    },
    delays: {
      approvalDeadline: ({ context }) => Math.max(0, (context.deadlineMs ?? 0) - clock.now()),
    },
  });
}

export type HostSessionMachine = ReturnType<typeof provideSessionMachine>;
