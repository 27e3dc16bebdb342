// Turn dispatch to agent workers (docs/architecture.md, "Turns and workers"): one turn actor per offered
// or leased turn, on the host clock: offers, capability tokens, heartbeated leases, park, revocation.
// In memory on purpose: after a restart the fence has ended every turn.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { headers, type NatsConnection } from "@nats-io/nats-core";
import { type Actor, createActor } from "xstate";
import { turnMachine } from "../../../../machines/turn.machine.ts";
import { encodeJson } from "../../../protocol/envelope.ts";
import { currentRequestId, errorFields, type Logger } from "../../../runtime/log.ts";
import { REQUEST_ID_HEADER } from "../../../protocol/rpc-client.ts";
import type { TurnKind } from "../../../protocol/schemas.ts";
import { agentSubject, turnCancelSubject } from "../../../protocol/subjects.ts";
import type { Clock } from "../../clock.ts";
import { createNotices } from "../events/notices.ts";

interface Offer {
  turnId: string;
  sessionId: string;
  kind: TurnKind;
}

export interface Lease extends Offer {
  token: string;
  workerId: string;
}

/** What the dispatcher needs: the connection offers go out on, the host clock and the lease bounds. */
export interface TurnDispatcherDeps {
  nc: NatsConnection;
  prefix: string;
  /** This host: its offers name it, and the worker sends the claim and every call there. */
  hostId: string;
  clock: Clock;
  leaseMs: number;
  offerIntervalMs: number;
  log: Logger;
  /** Also announced as the `leaseLost` notice (the supervisor subscribes with `on`). */
  onLeaseLost?: (lease: Lease) => void;
}

type DispatcherNotices = ReturnType<typeof createNotices<{ leaseLost: Lease }>>;
type SessionModel = { provider: string; model: string };

/** What the dispatcher holds: one turn actor per offered or leased turn, and what its offers name. */
interface DispatcherState {
  deps: TurnDispatcherDeps;
  notices: DispatcherNotices;
  turns: Map<string, Actor<typeof turnMachine>>;
  /** Each loaded session's model, named in its offers so only a worker serving it claims. */
  models: Map<string, SessionModel>;
  /** Each turn's request id (the prompt's, when a request offered it), sent with its offers. */
  requestIds: Map<string, string>;
  machine: ReturnType<typeof provideTurnMachine>;
}

/** The turn machine with its actions: offers and cancels on the bus, a lost lease as a notice. */
function provideTurnMachine(
  deps: TurnDispatcherDeps,
  notices: DispatcherNotices,
  models: Map<string, SessionModel>,
  requestIds: Map<string, string>,
) {
  const { nc, prefix, log } = deps;
  return turnMachine.provide({
    actions: {
      publishOffer: ({ context: c }) => {
        const model = models.get(c.sessionId);
        const requestId = requestIds.get(c.turnId);
        let h: ReturnType<typeof headers> | undefined;
        if (requestId !== undefined) {
          h = headers();
          h.set(REQUEST_ID_HEADER, requestId);
        }
        nc.publish(
          agentSubject(prefix, "offer"),
          encodeJson({
            turnId: c.turnId,
            sessionId: c.sessionId,
            kind: c.kind,
            host: deps.hostId,
            ...(model ? { model } : {}),
          }),
          h ? { headers: h } : undefined,
        );
      },
      // Only a leased turn has a worker to tell; the cancel goes under that worker's subjects.
      publishCancel: ({ context: c }) => {
        if (c.workerId)
          nc.publish(turnCancelSubject(prefix, c.workerId, c.turnId), encodeJson({ reason: "revoked" }));
      },
      leaseLost: ({ context: c }) => {
        log.warn("turn.lease_lost", { turnId: c.turnId, workerId: c.workerId });
        // Reported after this transition completes, so the session sees a finished turn actor.
        queueMicrotask(() =>
          notices.emit("leaseLost", {
            turnId: c.turnId,
            sessionId: c.sessionId,
            kind: c.kind,
            token: c.token ?? "",
            workerId: c.workerId ?? "",
          }),
        );
      },
    },
    delays: { offerInterval: deps.offerIntervalMs, lease: deps.leaseMs },
  });
}

function live(st: DispatcherState, turnId: string) {
  const a = st.turns.get(turnId);
  return a && a.getSnapshot().status === "active" ? a : undefined;
}

function spawn(st: DispatcherState, o: Offer): void {
  const { turns, requestIds } = st;
  turns.get(o.turnId)?.stop();
  const requestId = currentRequestId();
  if (requestId !== undefined) requestIds.set(o.turnId, requestId);
  else requestIds.delete(o.turnId);
  const actor = createActor(st.machine, { input: o, clock: st.deps.clock });
  actor.subscribe({
    complete: () => {
      if (turns.get(o.turnId) !== actor) return;
      turns.delete(o.turnId);
      requestIds.delete(o.turnId);
    },
    error: (err) => st.deps.log.error("turn.actor_failed", { turnId: o.turnId, ...errorFields(err) }),
  });
  turns.set(o.turnId, actor);
  actor.start();
}

function offer(st: DispatcherState, o: Offer): void {
  const a = live(st, o.turnId);
  if (!a) {
    spawn(st, o);
    return;
  }
  a.send(a.getSnapshot().matches("claiming") ? { type: "RESTORE" } : { type: "REOFFER" });
}

/** Takes a waiting offer for a claim; a second claim of the same turn gets null. */
function take(st: DispatcherState, turnId: string): Offer | null {
  const a = live(st, turnId);
  if (!a?.getSnapshot().matches("offered")) return null;
  a.send({ type: "TAKE" });
  const { sessionId, kind } = a.getSnapshot().context;
  return { turnId, sessionId, kind };
}

function grant(st: DispatcherState, o: Offer, workerId: string): Lease {
  const token = `tok_${randomBytes(24).toString("base64url")}`;
  const a = live(st, o.turnId);
  if (a) a.send({ type: "GRANT", workerId, token });
  else {
    // The turn was offered by an earlier actor of this session: lease it directly.
    spawn(st, o);
    st.turns.get(o.turnId)!.send({ type: "TAKE" });
    st.turns.get(o.turnId)!.send({ type: "GRANT", workerId, token });
  }
  return { ...o, workerId, token };
}

/** The live lease whose token matches, or null (missing, revoked or foreign token). */
function check(st: DispatcherState, turnId: unknown, token: unknown): Lease | null {
  if (typeof turnId !== "string" || typeof token !== "string") return null;
  const snap = live(st, turnId)?.getSnapshot();
  if (!snap?.matches("leased") || !snap.context.token) return null;
  const a = Buffer.from(snap.context.token);
  const b = Buffer.from(token);
  if (a.length !== b.length || !timingSafeEqual(a, b)) return null;
  const c = snap.context;
  return { turnId, sessionId: c.sessionId, kind: c.kind, token, workerId: c.workerId ?? "" };
}

function createDispatcherState(deps: TurnDispatcherDeps): DispatcherState {
  const notices = createNotices<{ leaseLost: Lease }>((name, err) =>
    deps.log.error("turn.notice_failed", { notice: String(name), ...errorFields(err) }),
  );
  if (deps.onLeaseLost) notices.on("leaseLost", deps.onLeaseLost);
  const models = new Map<string, SessionModel>();
  const requestIds = new Map<string, string>();
  return {
    deps,
    notices,
    turns: new Map(),
    models,
    requestIds,
    machine: provideTurnMachine(deps, notices, models, requestIds),
  };
}

export function createTurnDispatcher(deps: TurnDispatcherDeps) {
  const st = createDispatcherState(deps);
  const { turns, models, requestIds } = st;
  return {
    /** The host whose subjects a claim and every call of its turns go to (the offer names it). */
    hostId: deps.hostId,
    /** Subscribes to the dispatcher's notices: `leaseLost` when a leased worker stopped heartbeating. */
    on: st.notices.on,
    offer: (o: Offer): void => offer(st, o),
    /** Re-publishes every waiting offer (a worker said hello). */
    reoffer(): void {
      for (const a of turns.values()) if (a.getSnapshot().matches("offered")) a.send({ type: "REOFFER" });
    },
    /** Takes a waiting offer for a claim; a second claim of the same turn gets null. */
    take: (turnId: string): Offer | null => take(st, turnId),
    restore(o: Offer): void {
      live(st, o.turnId)?.send({ type: "RESTORE" });
    },
    grant: (o: Offer, workerId: string): Lease => grant(st, o, workerId),
    /** The live lease whose token matches, or null (missing, revoked or foreign token). */
    check: (turnId: unknown, token: unknown): Lease | null => check(st, turnId, token),
    beat(lease: Lease): void {
      live(st, lease.turnId)?.send({ type: "BEAT" });
    },
    /** Ends a turn's token and any waiting offer; tells a leased worker to stop. */
    revoke(turnId: string | null): void {
      if (turnId) live(st, turnId)?.send({ type: "REVOKE" });
    },
    /** Revokes the token without a cancel notice: the run parked normally (ExitPlanMode). */
    park(turnId: string | null): void {
      if (turnId) live(st, turnId)?.send({ type: "PARK" });
    },
    /** The session's model as its rows say now (loaded, configured); its offers name it. */
    noteModel(sessionId: string, model: SessionModel | null): void {
      if (model) models.set(sessionId, model);
      else models.delete(sessionId);
    },
    /** Revokes every leased turn with its cancel notice (the host is stopping). */
    revokeAll(): void {
      for (const a of turns.values()) if (a.getSnapshot().matches("leased")) a.send({ type: "REVOKE" });
    },
    stop(): void {
      for (const a of turns.values()) a.stop();
      turns.clear();
      requestIds.clear();
    },
    /** Whether a worker holds the turn's lease now. */
    isLeased(turnId: string): boolean {
      return live(st, turnId)?.getSnapshot().matches("leased") === true;
    },
    /** Whether the turn is still offered, being claimed or leased here. */
    has(turnId: string): boolean {
      return live(st, turnId) !== undefined;
    },
    size: () => turns.size,
  };
}

export type TurnDispatcher = ReturnType<typeof createTurnDispatcher>;
