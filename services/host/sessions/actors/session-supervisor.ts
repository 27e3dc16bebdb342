// One XState actor per live session (steps: session-actors.ts), started from rows and observed: a failed
// actor fails its waiting requests and restarts from the rows, within a bound, past it the session is
// degraded (SESSION_DEGRADED) until the host restarts. Idle actors are passivated. Each new state value
// of an actor is published as `machine.state` ("passivated" once a session is left without one).
import { type Actor, createActor, type SnapshotFrom, waitFor } from "xstate";
import type { Reply, SessionEvent } from "../../../../machines/session.machine.ts";
import { AppError } from "../../../protocol/app-error.ts";
import { errorFields, type Logger } from "../../../runtime/log.ts";
import { appendAudit } from "../../store/audit-log.ts";
import { isLeaseLost } from "../../store/db.ts";
import { leaseOf } from "../../store/session-leases.ts";
import type { FaultInjector } from "./fault-injector.ts";
import { watchLeaseLoss } from "./lease-loss-watch.ts";
import { isStepState, PASSIVATED, stateValueString } from "./machine-state.ts";
import { createRestartBound, type DegradedSession } from "./restart-bound.ts";
import { createSessionActors, type SessionActorDeps } from "./session-actors.ts";
import { type HostSessionMachine, provideSessionMachine } from "./session-machine.ts";

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

interface Entry {
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

export function createSessionSupervisor(deps: SupervisorDeps) {
  const { clock, dispatcher, events, log } = deps;
  const bound = createRestartBound({
    clock,
    maxRestarts: deps.maxRestarts ?? 3,
    restartWindowMs: deps.restartWindowMs ?? 60_000,
  });
  const passivateAfterMs = deps.passivateAfterMs ?? 60_000;
  const steps = createSessionActors(deps);
  const machine = provideSessionMachine({
    steps: watchLeaseLoss(steps, (sessionId) => queueMicrotask(() => leaseLost(sessionId))),
    dispatcher,
    clock,
    faults: deps.faults,
    onTurnRevoked: deps.onTurnRevoked,
  });
  const actors = new Map<string, Entry>();
  let stopped = false;

  // A leased worker stopped heartbeating: its turn ends as aborted (TURN_LEASE_EXPIRED).
  const unsubscribeLeaseLost = dispatcher.on("leaseLost", (lease) =>
    send(lease.sessionId, {
      type: "TURN_ENDED",
      turnId: lease.turnId,
      status: "aborted",
      code: "TURN_LEASE_EXPIRED",
    }),
  );

  /** The session's live actor, created from the rows when there is none; refuses a degraded session. */
  function entry(sessionId: string): Entry {
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
          observeState(sessionId, e, snap);
        } catch (bug) {
          log.error("session.supervisor_bug", { sessionId, ...errorFields(bug) });
        }
      },
      error: (err) => {
        try {
          failed(sessionId, e, err);
        } catch (bug) {
          log.error("session.supervisor_bug", { sessionId, ...errorFields(bug) });
        }
      },
    });
    try {
      actor.start();
    } catch (err) {
      failed(sessionId, e, err);
    }
    ready.then(() => reofferOrphan(sessionId, e)).catch(() => {});
    return e;
  }

  /**
   * Publishes the actor's state value when it differs from the last one it published (start calls
   * this with the first). Values seen before loadSession cached the session's owner and approvers
   * are held and published, in order, with the first value after it.
   */
  function observeState(sessionId: string, e: Entry, snap: SnapshotFrom<HostSessionMachine>): void {
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
  function publishStopped(sessionId: string, e: Entry): void {
    if (e.published === null || e.published === PASSIVATED) return;
    e.published = PASSIVATED;
    events.publish(steps.audience(sessionId), "machine.state", { state: PASSIVATED });
  }

  /**
   * A loaded actor in `running` whose turn no worker holds or is offered (its actor failed between
   * committing the turn and offering it) offers the turn again, so the turn is not stranded.
   */
  function reofferOrphan(sessionId: string, e: Entry): void {
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
  function failed(sessionId: string, e: Entry, err: unknown): void {
    if (isLeaseLost(err)) {
      leaseLost(sessionId, e);
      return;
    }
    const snap = e.actor.getSnapshot();
    const state = typeof snap.value === "string" ? snap.value : JSON.stringify(snap.value);
    log.error("session.actor_failed", { sessionId, state, ...errorFields(err) });
    const current = actors.get(sessionId) === e;
    if (current) actors.delete(sessionId);
    for (const r of [...e.pending]) r.fail("INTERNAL", "the session actor failed; retry");
    if (!current || stopped) return;
    // Not restarted (the rows could not be read): no actor until the next request.
    if (state === "loading") {
      publishStopped(sessionId, e);
      return;
    }

    const counted = bound.failed(sessionId);
    if ("degraded" in counted) {
      publishStopped(sessionId, e);
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
      if (stopped || actors.has(sessionId) || bound.isDegraded(sessionId)) return;
      try {
        const r = entry(sessionId);
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
  function leaseLost(sessionId: string, e = actors.get(sessionId)): void {
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
  function deliver(sessionId: string, e: Entry, event: SessionEvent): void {
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
      failed(sessionId, e, err);
    }
  }

  /** Fire-and-forget event (lease loss); dropped, and logged, for a degraded session. */
  function send(sessionId: string, event: SessionEvent): void {
    let e: Entry;
    try {
      e = entry(sessionId);
    } catch (err) {
      log.warn("session.event_dropped", { sessionId, type: event.type, ...errorFields(err) });
      return;
    }
    e.ready.then(
      () => deliver(sessionId, e, event),
      () => {},
    );
  }

  /** Stops idle actors without a request for passivateAfterMs; rows stay the truth. */
  function passivateIdle(): number {
    const now = clock.now();
    let n = 0;
    for (const [sessionId, e] of actors) {
      if (e.pending.size > 0 || now - e.lastActive < passivateAfterMs) continue;
      const snap = e.actor.getSnapshot();
      // Only `idle`: never with a running, parked or queued turn, nor mid-step.
      if (snap.status !== "active" || snap.value !== "idle") continue;
      actors.delete(sessionId);
      publishStopped(sessionId, e);
      steps.forget(sessionId);
      e.actor.stop();
      n++;
    }
    bound.sweep();
    return n;
  }
  const sweeper = setInterval(
    () => {
      try {
        const n = passivateIdle();
        if (n > 0) log.info("session.passivated", { count: n, active: actors.size });
      } catch (bug) {
        log.error("session.supervisor_bug", errorFields(bug));
      }
    },
    Math.min(Math.max(Math.floor(passivateAfterMs / 4), 10), 15_000),
  );
  sweeper.unref();

  return {
    /** Sends a request event to the session's actor and waits for its reply; SESSION_DEGRADED if degraded. */
    request<T = unknown>(sessionId: string, build: (reply: Reply) => SessionEvent): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const e = entry(sessionId);
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
            if (isLeaseLost(err)) queueMicrotask(() => leaseLost(sessionId, e));
          },
        };
        e.pending.add(reply);
        e.ready.then(
          () => deliver(sessionId, e, build(reply)),
          (err) => reply.error(err),
        );
      });
    },
    /** Fire-and-forget event (lease loss); dropped, and logged, for a degraded session. */
    send,
    /** Raises a session event from outside its actor (the approvers named at session.create). */
    announce: events.publish,
    /** Loads the session's actor from the rows if it is not live (activation); resolves when ready. */
    async activate(sessionId: string): Promise<void> {
      await entry(sessionId).ready;
    },
    /** Test hooks only: makes the session's actor fail (the provided injectFault throws). */
    async fault(sessionId: string): Promise<{ sessionId: string; failures: number; degraded: boolean }> {
      const e = entry(sessionId);
      await e.ready;
      deliver(sessionId, e, { type: "FAULT" });
      return { sessionId, ...bound.count(sessionId) };
    },
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
    passivateIdle,
    stopAll(): void {
      stopped = true;
      clearInterval(sweeper);
      unsubscribeLeaseLost();
      for (const { actor } of actors.values()) actor.stop();
      actors.clear();
    },
    size: () => actors.size,
  };
}

export type SessionSupervisor = ReturnType<typeof createSessionSupervisor>;
