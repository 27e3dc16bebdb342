// One XState actor per live session (steps: session-actors.ts), started from rows and observed: a failed
// actor fails its waiting requests and restarts from the rows, within a bound, past it the session is
// degraded (SESSION_DEGRADED) until the host restarts. Idle actors are passivated. Each new state value
// of an actor is published as `machine.state` ("passivated" once a session is left without one).
import type { Reply, SessionEvent } from "../../../../machines/session.machine.ts";
import { AppError } from "../../../protocol/app-error.ts";
import { errorFields } from "../../../runtime/log.ts";
import { isLeaseLost } from "../../store/db.ts";
import { watchLeaseLoss } from "./lease-loss-watch.ts";
import { PASSIVATED, stateValueString } from "./machine-state.ts";
import { createRestartBound, type DegradedSession } from "./restart-bound.ts";
import { createSessionActors } from "./session-actors.ts";
import { provideSessionMachine } from "./session-machine.ts";
import {
  deliver,
  type Entry,
  entry,
  leaseLost,
  publishStopped,
  type SupervisorDeps,
  type SupervisorState,
} from "./supervisor-state.ts";

export type { SupervisorDeps } from "./supervisor-state.ts";

/** The supervisor's state: bounds, steps and the machine they provide, no actor yet. */
function createSupervisorState(deps: SupervisorDeps): SupervisorState {
  const { clock, dispatcher } = deps;
  const bound = createRestartBound({
    clock,
    maxRestarts: deps.maxRestarts ?? 3,
    restartWindowMs: deps.restartWindowMs ?? 60_000,
  });
  const passivateAfterMs = deps.passivateAfterMs ?? 60_000;
  const steps = createSessionActors(deps);
  const sv: SupervisorState = {
    deps,
    bound,
    passivateAfterMs,
    steps,
    machine: provideSessionMachine({
      steps: watchLeaseLoss(steps, (sessionId) => queueMicrotask(() => leaseLost(sv, sessionId))),
      dispatcher,
      clock,
      faults: deps.faults,
      onTurnRevoked: deps.onTurnRevoked,
    }),
    actors: new Map(),
    stopped: false,
  };
  return sv;
}

/** Fire-and-forget event (lease loss); dropped, and logged, for a degraded session. */
function send(sv: SupervisorState, sessionId: string, event: SessionEvent): void {
  const { log } = sv.deps;
  let e: Entry;
  try {
    e = entry(sv, sessionId);
  } catch (err) {
    log.warn("session.event_dropped", { sessionId, type: event.type, ...errorFields(err) });
    return;
  }
  e.ready.then(
    () => deliver(sv, sessionId, e, event),
    () => {},
  );
}

/** Stops idle actors without a request for passivateAfterMs; rows stay the truth. */
function passivateIdle(sv: SupervisorState): number {
  const { actors, bound, steps, passivateAfterMs } = sv;
  const { clock } = sv.deps;
  const now = clock.now();
  let n = 0;
  for (const [sessionId, e] of actors) {
    if (e.pending.size > 0 || now - e.lastActive < passivateAfterMs) continue;
    const snap = e.actor.getSnapshot();
    // Only `idle`: never with a running, parked or queued turn, nor mid-step.
    if (snap.status !== "active" || snap.value !== "idle") continue;
    actors.delete(sessionId);
    publishStopped(sv, sessionId, e);
    steps.forget(sessionId);
    e.actor.stop();
    n++;
  }
  bound.sweep();
  return n;
}
/** The passivation sweep, every passivateAfterMs / 4 (within 10 ms and 15 s); never keeps the process up. */
function startSweeper(sv: SupervisorState): NodeJS.Timeout {
  const { log } = sv.deps;
  const sweeper = setInterval(
    () => {
      try {
        const n = passivateIdle(sv);
        if (n > 0) log.info("session.passivated", { count: n, active: sv.actors.size });
      } catch (bug) {
        log.error("session.supervisor_bug", errorFields(bug));
      }
    },
    Math.min(Math.max(Math.floor(sv.passivateAfterMs / 4), 10), 15_000),
  );
  sweeper.unref();
  return sweeper;
}

/** Sends a request event to the session's actor and waits for its reply; SESSION_DEGRADED if degraded. */
function request<T>(
  sv: SupervisorState,
  sessionId: string,
  build: (reply: Reply) => SessionEvent,
): Promise<T> {
  const { clock } = sv.deps;
  return new Promise<T>((resolve, reject) => {
    const e = entry(sv, sessionId);
    let done = false;
    const settle = () => {
      done = true;
      e.pending.delete(reply);
      e.lastActive = clock.now();
    };
    const reply: Reply = {
      ok(result) {
        if (done) return;
        settle();
        if (result instanceof AppError) reject(result);
        else resolve(result as T);
      },
      fail(code, message) {
        reply.error(new AppError(code, message));
      },
      error(err) {
        if (done) return;
        settle();
        reject(err);
        if (isLeaseLost(err)) queueMicrotask(() => leaseLost(sv, sessionId, e));
      },
    };
    e.pending.add(reply);
    e.ready.then(
      () => deliver(sv, sessionId, e, build(reply)),
      (err) => reply.error(err),
    );
  });
}

/** Test hooks only: makes the session's actor fail (the provided injectFault throws). */
async function fault(
  sv: SupervisorState,
  sessionId: string,
): Promise<{ sessionId: string; failures: number; degraded: boolean }> {
  const e = entry(sv, sessionId);
  await e.ready;
  deliver(sv, sessionId, e, { type: "FAULT" });
  return { sessionId, ...sv.bound.count(sessionId) };
}

export function createSessionSupervisor(deps: SupervisorDeps) {
  const sv = createSupervisorState(deps);
  const { actors, bound } = sv;

  // A leased worker stopped heartbeating: its turn ends as aborted (TURN_LEASE_EXPIRED).
  const unsubscribeLeaseLost = deps.dispatcher.on("leaseLost", (lease) =>
    send(sv, lease.sessionId, {
      type: "TURN_ENDED",
      turnId: lease.turnId,
      status: "aborted",
      code: "TURN_LEASE_EXPIRED",
    }),
  );
  const sweeper = startSweeper(sv);

  return {
    /** Sends a request event to the session's actor and waits for its reply; SESSION_DEGRADED if degraded. */
    request<T = unknown>(sessionId: string, build: (reply: Reply) => SessionEvent): Promise<T> {
      return request<T>(sv, sessionId, build);
    },
    /** Fire-and-forget event (lease loss); dropped, and logged, for a degraded session. */
    send: (sessionId: string, event: SessionEvent): void => send(sv, sessionId, event),
    /** Raises a session event from outside its actor (the approvers named at session.create). */
    announce: deps.events.publish,
    /** Loads the session's actor from the rows if it is not live (activation); resolves when ready. */
    async activate(sessionId: string): Promise<void> {
      await entry(sv, sessionId).ready;
    },
    /** Test hooks only: makes the session's actor fail (the provided injectFault throws). */
    fault: (sessionId: string): Promise<{ sessionId: string; failures: number; degraded: boolean }> =>
      fault(sv, sessionId),
    /** The live actor's state value (dotted path), or "passivated" when the session has none (or is degraded). */
    machineState(sessionId: string): string {
      const snap = actors.get(sessionId)?.actor.getSnapshot();
      return snap?.status === "active" ? stateValueString(snap.value) : PASSIVATED;
    },
    /** Live actors and degraded sessions (for `host.status`). */
    status(): { active: number; degraded: DegradedSession[] } {
      return { active: actors.size, degraded: bound.degraded() };
    },
    /** Runs one passivation sweep now (the sweeper runs it every passivateAfterMs / 4); returns the count. */
    passivateIdle: (): number => passivateIdle(sv),
    stopAll(): void {
      sv.stopped = true;
      clearInterval(sweeper);
      unsubscribeLeaseLost();
      for (const { actor } of actors.values()) actor.stop();
      actors.clear();
    },
    size: () => actors.size,
  };
}

export type SessionSupervisor = ReturnType<typeof createSessionSupervisor>;
