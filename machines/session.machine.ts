// The session machine (docs/architecture.md, "Session actors"): which request a session accepts in which
// state, and the order of the I/O steps the host performs for it. No I/O and no clock here: the host
// provides every actor, and the approval deadline delay, with machine.provide(); rows stay the truth.
import { and, assign, setup } from "xstate";
import { sessionGuards, stepActors, stepInput } from "./session.guards.ts";
import {
  BUSY,
  CONFIG_BLOCKED,
  type SessionContext,
  type SessionEvent,
  type StepOutput,
} from "./session.types.ts";

export * from "./session.types.ts";

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as { sessionId: string },
  },
  actors: stepActors,
  actions: {
    /** Answers the current request with the finished step's result. */
    replyOk: ({ context, event }) => context.reply?.ok((event as { output?: StepOutput }).output?.result),
    /** Answers the current request with the failed step's error. */
    replyError: ({ context, event }) => context.reply?.error((event as { error?: unknown }).error),
    /** The request this state's step works on, and where its answer goes. */
    takeRequest: assign(({ event }) => ({
      reply: "reply" in event ? (event.reply ?? null) : null,
      request: event,
    })),
    /** Answers a RESOLVE that arrives while no pending approval is being held: read-only from the rows. */
    answerResolveFromRows: (_, _params: { event: SessionEvent }) => {},
    /** Offers the current turn to the worker queue group (prompt turns and queued executions). */
    offerTurn: (_, _params: { turnId: string | null }) => {},
    /** Fault injection: the host's test hooks provide an action that throws; otherwise nothing. */
    injectFault: () => {},
    /** Revokes the capability token of a turn (park, abort, end). */
    revokeToken: (_, _params: { turnId: string | null; park?: boolean }) => {},
  },
  delays: {
    // The time left until the absolute deadline, on the host's clock: like every actor, the host
    // provides it; a machine without it fails (the machine has no clock of its own).
    approvalDeadline: (): number => {
      throw new Error("session machine delay approvalDeadline not provided");
    },
  },
  guards: sessionGuards,
}).createMachine({
  id: "session",
  context: ({ input }) => ({
    sessionId: input.sessionId,
    mode: "agent",
    turnId: null,
    turnKind: null,
    proposalId: null,
    deadlineMs: null,
    queued: false,
    leased: false,
    reply: null,
    request: null,
  }),
  initial: "loading",
  // Requests no state below handles are refused with a stable code, never dropped.
  on: {
    PROMPT: { actions: ({ event }) => event.reply.fail(BUSY) },
    CONFIGURE: { actions: ({ event }) => event.reply.fail(CONFIG_BLOCKED) },
    ABORT: { actions: ({ event }) => event.reply.fail(BUSY, "the session is changing state; retry") },
    RESOLVE: { actions: { type: "answerResolveFromRows", params: ({ event }) => ({ event }) } },
    // An approved execution that is no longer queued (claimed, ended, fenced) cannot be claimed again.
    CLAIM: {
      actions: ({ context, event }) =>
        event.reply.fail(
          event.turnId === context.turnId && context.turnKind === "execution" && !context.queued
            ? "PLAN_EXECUTION_STALE"
            : "TURN_NOT_CLAIMABLE",
        ),
    },
    // The host's tool policy answers a leased worker by mode before any state is asked; a call
    // without the live lease is refused by its token.
    ENTER_PLAN: {
      actions: ({ context, event }) =>
        event.reply.fail(
          context.leased && context.mode === "plan" ? "PLAN_ALREADY_ACTIVE" : "TURN_TOKEN_INVALID",
        ),
    },
    SUBMIT_PLAN: {
      actions: ({ context, event }) =>
        event.reply.fail(
          context.leased && context.mode === "agent" ? "PLAN_NOT_ACTIVE" : "TURN_TOKEN_INVALID",
        ),
    },
    TURN_ENDED: { actions: ({ event }) => event.reply?.fail("TURN_TOKEN_INVALID") },
    FAULT: { actions: "injectFault" },
  },
  states: {
    loading: {
      invoke: {
        id: "loadSession",
        src: "loadSession",
        input: ({ context }) => ({ sessionId: context.sessionId }),
        onDone: {
          target: "route",
          actions: assign(({ event }) => ({
            mode: event.output.mode,
            turnId: event.output.activeTurnId,
            turnKind: event.output.activeTurnKind,
            proposalId: event.output.pendingProposalId,
            deadlineMs: event.output.pendingDeadlineMs,
            queued: event.output.queuedExecutionTurnId !== null,
            leased: event.output.leased === true,
          })),
        },
      },
    },
    route: {
      always: [
        { guard: "isParked", target: "parked" },
        { guard: "isQueuedExecution", target: "queued" },
        { guard: "hasTurn", target: "running" },
        { target: "idle" },
      ],
    },
    idle: {
      on: {
        PROMPT: {
          target: "prompting",
          actions: "takeRequest",
        },
        CONFIGURE: {
          target: "configuring",
          actions: "takeRequest",
        },
        ABORT: {
          actions: ({ context, event }) => event.reply.ok({ sessionId: context.sessionId, aborted: null }),
        },
      },
    },
    prompting: {
      invoke: {
        id: "startTurn",
        src: "startTurn",
        input: stepInput,
        onDone: {
          target: "running",
          actions: [
            assign(({ event }) => ({
              turnId: event.output.activeTurnId ?? null,
              turnKind: "prompt" as const,
            })),
            "replyOk",
            { type: "offerTurn", params: ({ context }) => ({ turnId: context.turnId }) },
          ],
        },
        onError: { target: "idle", actions: "replyError" },
      },
    },
    configuring: {
      invoke: {
        id: "configure",
        src: "configure",
        input: stepInput,
        onDone: {
          target: "idle",
          actions: [assign(({ context, event }) => ({ mode: event.output.mode ?? context.mode })), "replyOk"],
        },
        onError: { target: "idle", actions: "replyError" },
      },
    },
    running: {
      on: {
        CLAIM: {
          guard: "isUnclaimedTurn",
          target: "claiming",
          actions: "takeRequest",
        },
        // EnterPlanMode only in Agent, ExitPlanMode only in the active Plan turn (docs/architecture.md, "Tools").
        ENTER_PLAN: [
          {
            guard: and(["isLeasedTurn", "inAgent"]),
            target: "enteringPlan",
            actions: "takeRequest",
          },
          { guard: "isLeasedTurn", actions: ({ event }) => event.reply.fail("PLAN_ALREADY_ACTIVE") },
        ],
        SUBMIT_PLAN: [
          {
            guard: and(["isLeasedTurn", "inPlan"]),
            target: "submitting",
            actions: "takeRequest",
          },
          { guard: "isLeasedTurn", actions: ({ event }) => event.reply.fail("PLAN_NOT_ACTIVE") },
        ],
        TURN_ENDED: {
          // a worker's own end needs the lease; the host's lease-loss notice carries no reply
          guard: ({ context, event }) => event.turnId === context.turnId && (context.leased || !event.reply),
          target: "ending",
          actions: "takeRequest",
        },
        ABORT: {
          target: "aborting",
          actions: "takeRequest",
        },
      },
    },
    claiming: {
      invoke: {
        id: "claimTurn",
        src: "claimTurn",
        input: stepInput,
        onDone: [
          {
            // the claim failed closed (e.g. the approved plan file changed): the work ended
            guard: ({ event }) => event.output.activeTurnId === null,
            target: "idle",
            actions: [
              { type: "revokeToken", params: ({ context }) => ({ turnId: context.turnId }) },
              assign({ turnId: null, turnKind: null, queued: false, leased: false }),
              "replyOk",
            ],
          },
          {
            target: "running",
            actions: [assign({ queued: false, leased: true }), "replyOk"],
          },
        ],
        onError: [
          {
            guard: "isQueuedExecution",
            target: "queued",
            actions: "replyError",
          },
          { target: "running", actions: "replyError" },
        ],
      },
    },
    enteringPlan: {
      invoke: {
        id: "enterPlan",
        src: "enterPlan",
        input: stepInput,
        onDone: {
          target: "running",
          actions: [assign({ mode: "plan" as const }), "replyOk"],
        },
        onError: { target: "running", actions: "replyError" },
      },
    },
    submitting: {
      invoke: {
        id: "submitPlan",
        src: "submitPlan",
        input: stepInput,
        onDone: {
          target: "parked",
          actions: [
            assign(({ event }) => ({
              proposalId: event.output.pendingProposalId ?? null,
              deadlineMs: event.output.pendingDeadlineMs ?? null,
              leased: false,
            })),
            { type: "revokeToken", params: ({ context }) => ({ turnId: context.turnId, park: true }) },
            "replyOk",
          ],
        },
        onError: { target: "running", actions: "replyError" },
      },
    },
    parked: {
      after: { approvalDeadline: "expiring" },
      on: {
        RESOLVE: {
          target: "resolving",
          actions: "takeRequest",
        },
        ABORT: {
          target: "aborting",
          actions: "takeRequest",
        },
      },
    },
    resolving: {
      invoke: {
        id: "resolvePlan",
        src: "resolvePlan",
        input: stepInput,
        onDone: [
          {
            guard: { type: "approved", params: ({ event }) => event.output },
            target: "queued",
            actions: [
              assign(({ event }) => ({
                mode: "agent" as const,
                proposalId: null,
                deadlineMs: null,
                turnId: event.output.activeTurnId ?? null,
                turnKind: "execution" as const,
                queued: true,
              })),
              "replyOk",
            ],
          },
          {
            // rejected, or expired on the way (the row is no longer pending either way)
            target: "idle",
            actions: [
              assign({ proposalId: null, deadlineMs: null, turnId: null, turnKind: null, leased: false }),
              "replyOk",
            ],
          },
        ],
        onError: { target: "parked", actions: "replyError" },
      },
    },
    expiring: {
      invoke: {
        id: "expirePlan",
        src: "expirePlan",
        input: stepInput,
        onDone: {
          target: "idle",
          actions: assign({
            proposalId: null,
            deadlineMs: null,
            turnId: null,
            turnKind: null,
            leased: false,
          }),
        },
        // The row could not be expired now (database down): stay parked; the next read expires it.
        onError: { target: "parked" },
      },
    },
    queued: {
      entry: { type: "offerTurn", params: ({ context }) => ({ turnId: context.turnId }) },
      on: {
        CLAIM: {
          guard: "isCurrentTurn",
          target: "claiming",
          actions: "takeRequest",
        },
        ABORT: {
          target: "aborting",
          actions: "takeRequest",
        },
      },
    },
    ending: {
      invoke: {
        id: "endTurn",
        src: "endTurn",
        input: stepInput,
        onDone: {
          target: "idle",
          actions: [
            { type: "revokeToken", params: ({ context }) => ({ turnId: context.turnId }) },
            assign({ turnId: null, turnKind: null, leased: false }),
            "replyOk",
          ],
        },
        onError: {
          target: "running",
          actions: "replyError",
        },
      },
    },
    aborting: {
      entry: [
        { type: "revokeToken", params: ({ context }) => ({ turnId: context.turnId }) },
        assign({ leased: false }),
      ],
      invoke: {
        id: "abortWork",
        src: "abortWork",
        input: stepInput,
        onDone: {
          target: "idle",
          actions: [
            assign({
              turnId: null,
              turnKind: null,
              proposalId: null,
              deadlineMs: null,
              queued: false,
              leased: false,
            }),
            "replyOk",
          ],
        },
        onError: { target: "loading", actions: "replyError" },
      },
    },
  },
});

export type SessionMachine = typeof sessionMachine;
