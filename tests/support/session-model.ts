// The session machine as a test model (issue: model-based tests). The machine runs with step actors
// that never settle on their own; the model feeds their done/error events, so every transition of
// the machine is an explicit event here. The alphabet below is every event the real host can
// produce for one session, with the step outputs the real host returns.
import { getAdjacencyMap } from "@xstate/graph";
import { createActor, fromPromise, type SnapshotFrom } from "xstate";
import {
  type Reply,
  type SessionEvent,
  type SessionFacts,
  sessionMachine,
  type StepInput,
  type StepOutput,
} from "../../machines/session.machine.ts";

export const T_PROMPT = "T1";
export const T_EXEC = "T2";
export const PROPOSAL = "P1";

const never = fromPromise<StepOutput, StepInput>(() => new Promise(() => {}));
export const modelMachine = sessionMachine.provide({
  actors: {
    loadSession: fromPromise<SessionFacts, { sessionId: string }>(() => new Promise(() => {})),
    startTurn: never,
    configure: never,
    claimTurn: never,
    enterPlan: never,
    submitPlan: never,
    resolvePlan: never,
    endTurn: never,
    abortWork: never,
    expirePlan: never,
  },
  delays: { approvalDeadline: 0 },
});

export type ModelSnapshot = SnapshotFrom<typeof modelMachine>;

/** What the model records of a reply: ok, or the refusal code. */
export interface Recorded {
  kind: "ok" | "fail" | "error" | "none";
  code?: string;
}

export function recordingReply(out: Recorded): Reply {
  return {
    // The host answers a step that failed closed with ok(error): the caller sees the code.
    ok: (result) => {
      const code =
        result && typeof result === "object" && "code" in result
          ? (result as { code?: unknown }).code
          : undefined;
      out.kind = code ? "fail" : "ok";
      if (code) out.code = String(code);
    },
    fail: (code) => {
      out.kind = "fail";
      out.code = code;
    },
    error: () => {
      out.kind = "error";
    },
  };
}

/** A labelled event of the model's alphabet. `label` names the variant (e.g. resolve:approve). */
export type ModelEvent = (SessionEvent | { type: string; output?: unknown; error?: unknown }) & {
  label: string;
};

const done = (src: string, output: StepOutput, variant = "") => ({
  type: `xstate.done.actor.${src}`,
  output,
  label: `done:${src}${variant}`,
});
const fail = (src: string) => ({
  type: `xstate.error.actor.${src}`,
  error: new Error("injected"),
  label: `error:${src}`,
});
const noReply = recordingReply({ kind: "none" });

/** Every event the host can deliver to a session's actor in this snapshot's state. */
export function alphabet(snap: ModelSnapshot): ModelEvent[] {
  const turnId = snap.context.turnId ?? T_PROMPT;
  const mode = snap.context.mode;
  return [
    { type: "PROMPT", params: {}, reply: noReply, label: "PROMPT" },
    { type: "CONFIGURE", params: {}, reply: noReply, label: "CONFIGURE" },
    { type: "ABORT", reply: noReply, label: "ABORT" },
    { type: "RESOLVE", params: {}, principal: "alice", reply: noReply, label: "RESOLVE" },
    { type: "CLAIM", turnId, workerId: "w", reply: noReply, label: "CLAIM" },
    { type: "ENTER_PLAN", turnId, toolCallId: "c", reply: noReply, label: "ENTER_PLAN" },
    { type: "SUBMIT_PLAN", turnId, toolCallId: "c", args: {}, reply: noReply, label: "SUBMIT_PLAN" },
    { type: "TURN_ENDED", turnId, status: "completed", reply: noReply, label: "TURN_ENDED" },
    { type: "xstate.after.approvalDeadline.session.parked", label: "after:approvalDeadline" },
    done(
      "loadSession",
      {
        mode: "agent",
        activeTurnId: null,
        activeTurnKind: null,
        pendingProposalId: null,
        pendingDeadlineMs: null,
        queuedExecutionTurnId: null,
      },
      ":agent",
    ),
    done(
      "loadSession",
      {
        mode: "plan",
        activeTurnId: null,
        activeTurnKind: null,
        pendingProposalId: null,
        pendingDeadlineMs: null,
        queuedExecutionTurnId: null,
      },
      ":plan",
    ),
    done("startTurn", { activeTurnId: T_PROMPT }),
    done("configure", { mode: mode === "agent" ? "plan" : "agent" }),
    done("claimTurn", { activeTurnId: turnId }),
    ...(snap.context.turnKind === "execution"
      ? [
          done(
            "claimTurn",
            { activeTurnId: null, result: { code: "PLAN_ARTIFACT_HASH_MISMATCH" } },
            ":hash-mismatch",
          ),
        ]
      : []),
    done("enterPlan", { mode: "plan" }),
    done("submitPlan", { pendingProposalId: PROPOSAL, pendingDeadlineMs: 1 }),
    done("resolvePlan", { activeTurnId: T_EXEC, activeTurnKind: "execution" }, ":approve"),
    done("resolvePlan", { pendingProposalId: null }, ":reject"),
    done("endTurn", {}),
    done("abortWork", {}),
    done("expirePlan", {}),
    ...["startTurn", "configure", "claimTurn", "enterPlan", "submitPlan", "resolvePlan", "endTurn"].map(fail),
  ] as ModelEvent[];
}

export function serialize(snap: ModelSnapshot): string {
  const c = snap.context;
  return `${JSON.stringify(snap.value)}|${c.mode}|${c.turnKind ?? "-"}|${c.leased ? "leased" : "free"}`;
}

export interface ModelEdge {
  from: string;
  to: string;
  event: ModelEvent;
  /** Whether the edge changes the state (a transition) or only answers (a refusal or read). */
  selfLoop: boolean;
}

/** All edges of the machine over the alphabet: a transition for each (state, event variant). */
export function enumerateEdges(): { edges: ModelEdge[]; states: Map<string, ModelSnapshot> } {
  const adjacency = getAdjacencyMap(modelMachine, {
    input: { sessionId: "S" },
    // done/error/after events are internal to XState's types; the model sends them explicitly.
    events: (snap) => alphabet(snap as ModelSnapshot) as unknown as SessionEvent[],
    serializeState: (snap) => serialize(snap as ModelSnapshot),
    serializeEvent: (e) => (e as ModelEvent).label,
  });
  const edges: ModelEdge[] = [];
  const states = new Map<string, ModelSnapshot>();
  for (const [from, v] of Object.entries(adjacency)) {
    states.set(from, v.state as ModelSnapshot);
    for (const [label, t] of Object.entries(v.transitions) as Array<
      [string, { state: unknown; event: unknown }]
    >) {
      const to = serialize(t.state as ModelSnapshot);
      const event = t.event as ModelEvent;
      // An event the state does not handle at all (a step's done event elsewhere) is no transition.
      if (!(v.state as ModelSnapshot).can(event as unknown as SessionEvent)) continue;
      edges.push({ from, to, event: { ...event, label }, selfLoop: from === to });
    }
  }
  return { edges, states };
}

/** Replays events on a fresh model actor; returns each step's recorded reply and resulting state. */
export function runModel(events: ModelEvent[]): Array<{ label: string; reply: Recorded; state: string }> {
  const actor = createActor(modelMachine, { input: { sessionId: "S" } });
  actor.start();
  const out: Array<{ label: string; reply: Recorded; state: string }> = [];
  for (const e of events) {
    const reply: Recorded = { kind: "none" };
    const withReply = "reply" in e ? { ...e, reply: recordingReply(reply) } : e;
    actor.send(withReply as SessionEvent);
    out.push({ label: e.label, reply, state: serialize(actor.getSnapshot()) });
  }
  actor.stop();
  return out;
}
