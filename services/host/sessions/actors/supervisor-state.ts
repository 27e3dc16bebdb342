// A session supervisor's actors (session-supervisor.ts): each one's entry, created from the rows, and
// what happens when it publishes a state value, fails or loses its session's lease. The supervisor's
// mutable state is one explicit object (SupervisorState) these functions take.
import { type Actor, createActor, type SnapshotFrom, waitFor } from "xstate";
import type { Reply, SessionEvent } from "../../../../machines/session.machine.ts";
import { errorFields, type Logger } from "../../../runtime/log.ts";
import { appendAudit } from "../../store/audit-log.ts";
import { isLeaseLost } from "../../store/db.ts";
import { leaseOf } from "../../store/session-leases.ts";
import type { FaultInjector } from "./fault-injector.ts";
import { isStepState, PASSIVATED, stateValueString } from "./machine-state.ts";
import type { RestartBound } from "./restart-bound.ts";
import type { SessionActorDeps, SessionActors } from "./session-actors.ts";
import type { HostSessionMachine } from "./session-machine.ts";

/** The steps' dependencies (session-actors.ts) and the supervision bounds. */
export interface SupervisorDeps extends SessionActorDeps {
  /** Test hooks only: injected failures of named steps. */
  faults?: FaultInjector;
  log: Logger;
  /** More than this many actor failures of one session within restartWindowMs degrade it (default 3). */
  maxRestarts?: number;
  /** Default 60 s. */
  restartWindowMs?: number;
  /** An idle actor without a request for this long is stopped and dropped (default 60 s). */
  passivateAfterMs?: number;
  /** A turn's token was revoked or parked (abort, lease loss, end): its permission prompts stop waiting. */
  onTurnRevoked?: (turnId: string) => void;
  /** An actor failed and is restarted (counted by the host's metrics). */
  onActorRestart?: () => void;
}

export interface Entry {
  actor: Actor<HostSessionMachine>;
  /** Replies of requests sent to (or waiting for) this actor and not yet answered. */
  pending: Set<Reply>;
  /** Resolves once the actor has read its rows (left `loading`). */
  ready: Promise<unknown>;
  /** Host-clock time of the last request or reply: passivation measures idleness from here. */
  lastActive: number;
  /** The last `machine.state` this actor published, null before its first. */
  published: string | null;
  /** State values seen before the actor read its audience (only `loading`): published after it. */
  held: string[];
}

/** What the supervisor holds: its deps, bounds, steps and machine, and the live actors. */
export interface SupervisorState {
  deps: SupervisorDeps;
  bound: RestartBound;
  passivateAfterMs: number;
  steps: SessionActors;
  machine: HostSessionMachine;
  actors: Map<string, Entry>;
  /** Set by stopAll: a failed actor is no longer restarted. */
  stopped: boolean;
}

/** The session's live actor, created from the rows when there is none; refuses a degraded session. */
export function entry(sv: SupervisorState, sessionId: string): Entry {
  const { bound, actors, machine } = sv;
  const { clock, log } = sv.deps;
  const refusal = bound.refusal(sessionId);
  if (refusal) throw refusal;
  const existing = actors.get(sessionId);
  if (existing) {
    existing.lastActive = clock.now();
    return existing;
  }
  const actor = createActor(machine, { input: { sessionId }, clock });
  // Requests wait until the actor has read its rows (the loading state answers nothing).
  const ready = waitFor(actor, (snap) => !snap.matches("loading"), { timeout: 30_000 });
  ready.catch(() => {});
  const e: Entry = {
    actor,
    pending: new Set(),
    ready,
    lastActive: clock.now(),
    published: null,
    held: [],
  };
  actors.set(sessionId, e);
  // Every root actor has an error observer: an unobserved error would be rethrown on a timer and
  // end the process. The observers themselves must never throw, for the same reason.
  actor.subscribe({
    next: (snap) => {
      try {
        observeState(sv, sessionId, e, snap);
      } catch (bug) {
        log.error("session.supervisor_bug", { sessionId, ...errorFields(bug) });
      }
    },
    error: (err) => {
      try {
        failed(sv, sessionId, e, err);
      } catch (bug) {
        log.error("session.supervisor_bug", { sessionId, ...errorFields(bug) });
      }
    },
  });
  try {
    actor.start();
  } catch (err) {
    failed(sv, sessionId, e, err);
  }
  ready.then(() => reofferOrphan(sv, sessionId, e)).catch(() => {});
  return e;
}

/**
 * Publishes the actor's state value when it differs from the last one it published (start calls
 * this with the first). Values seen before loadSession cached the session's owner and approvers
 * are held and published, in order, with the first value after it.
 */
function observeState(
  sv: SupervisorState,
  sessionId: string,
  e: Entry,
  snap: SnapshotFrom<HostSessionMachine>,
): void {
  const { actors, steps } = sv;
  const { events } = sv.deps;
  if (snap.status !== "active" || actors.get(sessionId) !== e) return;
  const state = stateValueString(snap.value);
  if (state === (e.held.at(-1) ?? e.published)) return;
  e.held.push(state);
  const to = steps.audience(sessionId);
  if (!to.owner) return;
  for (const value of e.held.splice(0)) {
    if (isStepState(value)) events.publishLive(to, "machine.state", { state: value });
    else events.publish(to, "machine.state", { state: value });
    e.published = value;
  }
}

/** The session is left without an actor (passivated, degraded, not loadable): says so once. */
export function publishStopped(sv: SupervisorState, sessionId: string, e: Entry): void {
  const { steps } = sv;
  const { events } = sv.deps;
  if (e.published === null || e.published === PASSIVATED) return;
  e.published = PASSIVATED;
  events.publish(steps.audience(sessionId), "machine.state", { state: PASSIVATED });
}

/**
 * A loaded actor in `running` whose turn no worker holds or is offered (its actor failed between
 * committing the turn and offering it) offers the turn again, so the turn is not stranded.
 */
function reofferOrphan(sv: SupervisorState, sessionId: string, e: Entry): void {
  const { actors } = sv;
  const { dispatcher, log } = sv.deps;
  if (actors.get(sessionId) !== e) return;
  const snap = e.actor.getSnapshot();
  const { turnId, turnKind } = snap.context;
  if (snap.value !== "running" || !turnId || dispatcher.has(turnId)) return;
  log.warn("session.turn_reoffered", { sessionId, turnId });
  dispatcher.offer({ turnId, sessionId, kind: turnKind === "execution" ? "execution" : "prompt" });
}

/**
 * An actor failed: its waiting requests get INTERNAL, and it is restarted from the rows at once,
 * unless it failed more than maxRestarts times within restartWindowMs: then the session is
 * degraded. A failure while loading is not restarted here (the rows could not be read, say the
 * database is down) and does not count: the next request tries again and the caller may retry.
 */
function failed(sv: SupervisorState, sessionId: string, e: Entry, err: unknown): void {
  const { actors, bound, steps, deps } = sv;
  const { dispatcher, log } = deps;
  if (isLeaseLost(err)) {
    leaseLost(sv, sessionId, e);
    return;
  }
  const snap = e.actor.getSnapshot();
  const state = typeof snap.value === "string" ? snap.value : JSON.stringify(snap.value);
  log.error("session.actor_failed", { sessionId, state, ...errorFields(err) });
  const current = actors.get(sessionId) === e;
  if (current) actors.delete(sessionId);
  for (const r of [...e.pending]) r.fail("INTERNAL", "the session actor failed; retry");
  if (!current || sv.stopped) return;
  // Not restarted (the rows could not be read): no actor until the next request.
  if (state === "loading") {
    publishStopped(sv, sessionId, e);
    return;
  }

  const counted = bound.failed(sessionId);
  if ("degraded" in counted) {
    publishStopped(sv, sessionId, e);
    steps.forget(sessionId);
    // The worker of its turn (if any) stops, its waiting permission prompts end as denials
    // (PERMISSION_INTERRUPTED) and a running tool is aborted; the turn's rows stay until the next
    // start's fence.
    dispatcher.revoke(snap.context.turnId);
    if (snap.context.turnId) deps.onTurnRevoked?.(snap.context.turnId);
    log.error("session.degraded", { ...counted.degraded, ...bound.limits });
    return;
  }
  const { maxRestarts } = bound.limits;
  log.warn("session.actor_restarting", { sessionId, failures: counted.recent, maxRestarts });
  deps.onActorRestart?.();
  // After the failed actor's stack unwinds; a request arriving first simply creates it.
  queueMicrotask(() => {
    if (sv.stopped || actors.has(sessionId) || bound.isDegraded(sessionId)) return;
    try {
      const r = entry(sv, sessionId);
      r.ready.then(
        () => log.info("session.actor_restarted", { sessionId }),
        () => {},
      );
    } catch (bug) {
      log.error("session.supervisor_bug", { sessionId, ...errorFields(bug) });
    }
  });
}

/**
 * Another host owns the session now (a write got SESSION_LEASE_LOST): the actor is dropped, not
 * restarted and not counted as a failure (the session is not degraded); its waiting requests get
 * the retriable SESSION_LEASE_LOST, and the next request creates an actor from the rows again
 * (which the owner serves, or which writes again and is dropped again).
 */
export function leaseLost(sv: SupervisorState, sessionId: string, e = sv.actors.get(sessionId)): void {
  const { actors, steps, deps } = sv;
  const { clock, dispatcher, log } = deps;
  if (!e || actors.get(sessionId) !== e) return;
  actors.delete(sessionId);
  const turnId = e.actor.getSnapshot().context.turnId;
  try {
    e.actor.stop();
  } catch {}
  steps.forget(sessionId);
  if (turnId) {
    dispatcher.revoke(turnId);
    deps.onTurnRevoked?.(turnId);
  }
  for (const r of [...e.pending]) r.fail("SESSION_LEASE_LOST", "another host owns this session now; retry");
  log.warn("session.lease_lost", { sessionId, turnId: turnId ?? null });
  // Recorded by this host: its incarnation is current (a host that was taken over is fenced whole,
  // HOST_FENCED), only this session's lease is not its own; the audit log is not lease-checked.
  void leaseOf(deps.db, sessionId)
    .then((owner) =>
      appendAudit(deps.db, {
        at: clock.date(),
        sessionId,
        turnId: turnId ?? null,
        action: "session.lease_lost",
        code: "SESSION_LEASE_LOST",
        details: owner
          ? { owner: owner.hostId, ownerIncarnation: owner.incarnation, epoch: owner.epoch }
          : {},
      }),
    )
    .catch((err) => log.warn("session.lease_lost_audit_failed", { sessionId, ...errorFields(err) }));
}

/** Sends to the actor; a synchronous throw is treated as the actor failing, never passed on. */
export function deliver(sv: SupervisorState, sessionId: string, e: Entry, event: SessionEvent): void {
  const { actors } = sv;
  if (actors.get(sessionId) !== e) {
    // The actor failed (or was replaced) after this request attached to it.
    for (const r of [...e.pending]) r.fail("INTERNAL", "the session actor failed; retry");
    return;
  }
  try {
    e.actor.send(event);
  } catch (err) {
    try {
      e.actor.stop();
    } catch {}
    failed(sv, sessionId, e, err);
  }
}
