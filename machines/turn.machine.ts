// The turn machine (docs/architecture.md, "Turns and workers"): offered to the worker queue group until
// one worker claims it, then leased with heartbeats until it parks, ends, is revoked or loses its lease.
// No I/O: the host provides the offer and cancel actions; the delays run on the actor system's clock.
import { assign, setup } from "xstate";

export interface TurnContext {
  turnId: string;
  sessionId: string;
  kind: "prompt" | "execution";
  workerId: string | null;
  token: string | null;
}

export type TurnEvent =
  /** A worker's claim was taken for processing: no second claim until it is granted or restored. */
  | { type: "TAKE" }
  /** The session accepted the claim: the worker holds the lease with this token. */
  | { type: "GRANT"; workerId: string; token: string }
  /** The claim failed transiently: the turn is claimable again. */
  | { type: "RESTORE" }
  /** A worker announced itself: publish the offer now. */
  | { type: "REOFFER" }
  /** The lease holder is alive (heartbeat or tool call). */
  | { type: "BEAT" }
  /** The run parked behind a pending approval: the token dies quietly. */
  | { type: "PARK" }
  /** The host ended or aborted the turn: the token dies and the worker is told to stop. */
  | { type: "REVOKE" };

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    events: {} as TurnEvent,
    input: {} as { turnId: string; sessionId: string; kind: "prompt" | "execution" },
  },
  actions: {
    publishOffer: () => {},
    publishCancel: () => {},
    leaseLost: () => {},
  },
  delays: {
    offerInterval: 500,
    lease: 15_000,
  },
}).createMachine({
  id: "turn",
  context: ({ input }) => ({ ...input, workerId: null, token: null }),
  initial: "offered",
  states: {
    offered: {
      entry: "publishOffer",
      after: { offerInterval: { target: "offered", reenter: true } },
      on: {
        TAKE: "claiming",
        REOFFER: { actions: "publishOffer" },
        REVOKE: "revoked",
      },
    },
    claiming: {
      on: {
        GRANT: {
          target: "leased",
          actions: assign(({ event }) => ({ workerId: event.workerId, token: event.token })),
        },
        RESTORE: "offered",
        REVOKE: "revoked",
      },
    },
    leased: {
      after: { lease: { target: "lost", actions: "leaseLost" } },
      on: {
        BEAT: { target: "leased", reenter: true },
        PARK: "parked",
        REVOKE: { target: "revoked", actions: "publishCancel" },
      },
    },
    parked: { type: "final" },
    lost: { type: "final", entry: "publishCancel" },
    revoked: { type: "final" },
  },
});

export type TurnMachine = typeof turnMachine;
