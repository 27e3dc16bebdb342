// The console's state: @xstate/store stores fed by session events (hints) and by re-reads of the
// host's lists (the truth at that moment). Every transition is a pure reducer exported for tests;
// nothing here does I/O or reads the clock.
import { createStore } from "@xstate/store";
import type { SessionEvent } from "../../protocol/events.ts";
import type { PermissionRequestView } from "../../protocol/permission-schemas.ts";
import type { ProposalView, SessionView } from "../../protocol/schemas.ts";
import type { LiveDelta } from "../../protocol/session-feed.ts";

/** A session as the list shows it: the host's view, its machine's state value and the last activity seen. */
export type SessionRow = SessionView & { machineState?: string; lastActivity: string };

export interface SessionsContext {
  byId: Record<string, SessionRow>;
  /** The highest event `seq` applied per session: an older event never undoes a newer one. */
  seqs: Record<string, number>;
  /** host.status's degraded sessions by id; null when the caller may not read host.status. */
  degraded: Record<string, { failures: number; since: string }> | null;
  loaded: boolean;
  /** The last read stopped at the console's bound (list-reads.ts): only the newest sessions are listed. */
  cut: boolean;
}

export const initialSessions: SessionsContext = {
  byId: {},
  seqs: {},
  degraded: null,
  loaded: false,
  cut: false,
};

/**
 * A session.list re-read (every page): the list replaces what was known (sessions no longer
 * readable go); `cut`: the read stopped at the console's bound.
 */
export function sessionsListed(
  ctx: SessionsContext,
  sessions: readonly SessionView[],
  cut = false,
): SessionsContext {
  const byId: Record<string, SessionRow> = {};
  for (const s of sessions) byId[s.id] = mergeView(ctx.byId[s.id], s);
  return { ...ctx, byId, loaded: true, cut };
}

/** A session.get (or session.create / session.configure) result. */
export function sessionGot(ctx: SessionsContext, session: SessionView): SessionsContext {
  return { ...ctx, byId: { ...ctx.byId, [session.id]: mergeView(ctx.byId[session.id], session) } };
}

function mergeView(before: SessionRow | undefined, view: SessionView): SessionRow {
  const machineState = (view as { machineState?: unknown }).machineState;
  const lastActivity = later(before?.lastActivity, view.updatedAt);
  return {
    ...view,
    lastActivity,
    ...(typeof machineState === "string"
      ? { machineState }
      : before?.machineState !== undefined
        ? { machineState: before.machineState }
        : {}),
  };
}

function later(a: string | undefined, b: string): string {
  return a !== undefined && a > b ? a : b;
}

/** A session event: the fields it names change; anything else waits for the next re-read. */
export function sessionEvent(ctx: SessionsContext, e: SessionEvent): SessionsContext {
  const row = ctx.byId[e.sessionId];
  if (!row) return ctx; // not listed yet: the re-read the event triggers brings it
  if (typeof e.seq === "number" && e.seq <= (ctx.seqs[e.sessionId] ?? 0)) return ctx;
  const next: SessionRow = { ...row, lastActivity: later(row.lastActivity, e.at) };
  if (e.type === "session.changed") {
    Object.assign(next, {
      mode: e.mode,
      permissionMode: e.permissionMode,
      planningState: e.planningState,
      version: e.version,
    });
  } else if (e.type === "turn.started" || e.type === "turn.claimed") {
    next.activeTurnId = e.turnId;
  } else if (e.type === "turn.ended") {
    if (next.activeTurnId === e.turnId) next.activeTurnId = null;
  } else if (e.type === "plan.changed") {
    next.planningState = e.state;
  } else if (e.type === "machine.state" && typeof e.state === "string") {
    next.machineState = e.state;
  }
  const seqs = typeof e.seq === "number" ? { ...ctx.seqs, [e.sessionId]: e.seq } : ctx.seqs;
  return { ...ctx, byId: { ...ctx.byId, [e.sessionId]: next }, seqs };
}

export function degradedRead(
  ctx: SessionsContext,
  list: ReadonlyArray<{ sessionId: string; failures: number; since: string }> | null,
): SessionsContext {
  if (list === null) return { ...ctx, degraded: null };
  const degraded: NonNullable<SessionsContext["degraded"]> = {};
  for (const d of list) degraded[d.sessionId] = { failures: d.failures, since: d.since };
  return { ...ctx, degraded };
}

// ---- events, transcripts and live text ---------------------------------------------------------

/** Events kept per session (the oldest are dropped beyond this). */
export const MAX_EVENTS_PER_SESSION = 5_000;

export interface LiveText {
  text: string;
  thinking: string;
  /** Chunks the host said it dropped (a slow consumer); the `message` event carries the whole text. */
  dropped: number;
}

export interface EventsContext {
  /** Per session, sorted by seq, each seq once. */
  bySession: Record<string, SessionEvent[]>;
  /** Streamed text per session and turn, until the turn's `message` event (or its end) replaces it. */
  live: Record<string, Record<string, LiveText>>;
}

export const initialEvents: EventsContext = { bySession: {}, live: {} };

/** Events of one or many sessions (live, caught up or a history read), merged by seq. */
export function eventsAdded(ctx: EventsContext, events: readonly SessionEvent[]): EventsContext {
  if (events.length === 0) return ctx;
  const bySession = { ...ctx.bySession };
  let live = ctx.live;
  const touched = new Set<string>();
  for (const e of events) {
    const list = touched.has(e.sessionId) ? bySession[e.sessionId]! : [...(bySession[e.sessionId] ?? [])];
    touched.add(e.sessionId);
    bySession[e.sessionId] = list;
    insertBySeq(list, e);
    if (e.type === "message" || e.type === "turn.ended") {
      const turnId = e.turnId;
      const turns = live[e.sessionId];
      if (turns?.[turnId]) {
        const { [turnId]: _gone, ...rest } = turns;
        live = { ...live, [e.sessionId]: rest };
      }
    }
  }
  for (const id of touched) {
    const list = bySession[id]!;
    if (list.length > MAX_EVENTS_PER_SESSION) list.splice(0, list.length - MAX_EVENTS_PER_SESSION);
  }
  return { bySession, live };
}

function insertBySeq(list: SessionEvent[], e: SessionEvent): void {
  const last = list[list.length - 1];
  if (last === undefined || last.seq < e.seq) {
    list.push(e);
    return;
  }
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.seq < e.seq) lo = mid + 1;
    else hi = mid;
  }
  if (list[lo]?.seq === e.seq) return; // a duplicate
  list.splice(lo, 0, e);
}

/** A live delta: its text chunks appended to the turn's live text. */
export function deltaAdded(ctx: EventsContext, d: LiveDelta): EventsContext {
  const turns = ctx.live[d.sessionId] ?? {};
  const before = turns[d.turnId] ?? { text: "", thinking: "", dropped: 0 };
  let { text, thinking } = before;
  for (const c of d.chunks) {
    if (c.kind === "text") text += c.text;
    else if (c.kind === "thinking") thinking += c.text;
  }
  const next: LiveText = { text, thinking, dropped: before.dropped + (d.dropped ?? 0) };
  return { ...ctx, live: { ...ctx.live, [d.sessionId]: { ...turns, [d.turnId]: next } } };
}

// ---- plans -------------------------------------------------------------------------------------

export interface PlansContext {
  byId: Record<string, ProposalView>;
}

export const initialPlans: PlansContext = { byId: {} };

/**
 * A plans.pending re-read: these are pending. One known as pending but not listed was resolved
 * meanwhile: vanishedPending names those, to be re-read with plans.get (their status is not guessed).
 */
export function pendingListed(ctx: PlansContext, proposals: readonly ProposalView[]): PlansContext {
  const byId = { ...ctx.byId };
  for (const p of proposals) byId[p.proposalId] = newer(byId[p.proposalId], p);
  return { byId };
}

/** Proposals this store thinks pending in the scope that a fresh plans.pending did not list. */
export function vanishedPending(
  ctx: PlansContext,
  proposals: readonly ProposalView[],
  sessionId: string | null,
): string[] {
  const listed = new Set(proposals.map((p) => p.proposalId));
  return Object.values(ctx.byId)
    .filter(
      (p) =>
        p.status === "pending" &&
        !listed.has(p.proposalId) &&
        (sessionId === null || p.sessionId === sessionId),
    )
    .map((p) => p.proposalId);
}

/** One proposal as read (plans.get, plans.resolve) or carried by a plan.changed event. */
export function proposalSeen(ctx: PlansContext, p: ProposalView): PlansContext {
  return { byId: { ...ctx.byId, [p.proposalId]: newer(ctx.byId[p.proposalId], p) } };
}

/** The higher version wins; at equal versions the later read (a terminal status never turns pending again). */
function newer(before: ProposalView | undefined, p: ProposalView): ProposalView {
  if (!before) return p;
  if (p.version < before.version) return before;
  if (p.version === before.version && before.status !== "pending" && p.status === "pending") return before;
  return p;
}

export function planEvent(ctx: PlansContext, e: SessionEvent): PlansContext {
  if (e.type !== "plan.changed") return ctx;
  const p = e.proposal;
  return p ? proposalSeen(ctx, p) : ctx;
}

// ---- permission prompts ------------------------------------------------------------------------

export type PermissionPrompt = Pick<
  PermissionRequestView,
  "requestId" | "sessionId" | "turnId" | "toolCallId" | "tool" | "risk" | "preview" | "deadline"
> & { status: "pending" | "allowed" | "denied"; decision: string | null; code: string | null };

export interface PermissionsContext {
  byId: Record<string, PermissionPrompt>;
}

export const initialPermissions: PermissionsContext = { byId: {} };

/** A permissions.pending re-read of one session (or all, null): pending ones it does not list were answered. */
export function permissionsListed(
  ctx: PermissionsContext,
  requests: readonly PermissionRequestView[],
  sessionId: string | null,
): PermissionsContext {
  const listed = new Set(requests.map((r) => r.requestId));
  const byId: Record<string, PermissionPrompt> = {};
  for (const [id, p] of Object.entries(ctx.byId)) {
    const inScope = sessionId === null || p.sessionId === sessionId;
    if (p.status === "pending" && inScope && !listed.has(id)) continue; // answered meanwhile
    byId[id] = p;
  }
  for (const r of requests) {
    if (byId[r.requestId]?.status === "pending" || !byId[r.requestId])
      byId[r.requestId] = { ...promptOf(r), status: r.status, decision: r.decision, code: r.code };
  }
  return { byId };
}

/** What a prompt is, from a `permissions.pending` row or a `permission.requested` event alike. */
function promptOf(
  r: Pick<
    PermissionPrompt,
    "requestId" | "sessionId" | "turnId" | "toolCallId" | "tool" | "risk" | "preview" | "deadline"
  >,
): Pick<
  PermissionPrompt,
  "requestId" | "sessionId" | "turnId" | "toolCallId" | "tool" | "risk" | "preview" | "deadline"
> {
  const { requestId, sessionId, turnId, toolCallId, tool, risk, preview, deadline } = r;
  return { requestId, sessionId, turnId, toolCallId, tool, risk, preview, deadline };
}

export function permissionEvent(ctx: PermissionsContext, e: SessionEvent): PermissionsContext {
  if (e.type === "permission.requested") {
    const r = e;
    if (ctx.byId[r.requestId]) return ctx;
    const prompt: PermissionPrompt = { ...promptOf(r), status: "pending", decision: null, code: null };
    return { byId: { ...ctx.byId, [r.requestId]: prompt } };
  }
  if (e.type === "permission.resolved") {
    const r = e;
    const before = ctx.byId[r.requestId];
    if (!before) return ctx;
    const resolved: PermissionPrompt = {
      ...before,
      status: r.decision === "deny" ? "denied" : "allowed",
      decision: r.decision,
      code: r.code ?? null,
    };
    return { byId: { ...ctx.byId, [r.requestId]: resolved } };
  }
  return ctx;
}

// ---- connection --------------------------------------------------------------------------------

export type ConnectionState =
  | "signed-out"
  | "connecting"
  | "connected"
  | "reconnecting"
  | "catching-up"
  | "disconnected";

export interface ConnectionContext {
  state: ConnectionState;
  /** Why it is disconnected (or the last error while connecting). */
  reason: string | null;
}

export const initialConnection: ConnectionContext = { state: "signed-out", reason: null };

// ---- the stores --------------------------------------------------------------------------------

export function createAppStores() {
  const sessions = createStore({
    context: initialSessions,
    on: {
      listed: (ctx, e: { sessions: SessionView[]; cut?: boolean }) => sessionsListed(ctx, e.sessions, e.cut),
      got: (ctx, e: { session: SessionView }) => sessionGot(ctx, e.session),
      event: (ctx, e: { event: SessionEvent }) => sessionEvent(ctx, e.event),
      degraded: (ctx, e: { list: Array<{ sessionId: string; failures: number; since: string }> | null }) =>
        degradedRead(ctx, e.list),
      reset: () => initialSessions,
    },
  });
  const events = createStore({
    context: initialEvents,
    on: {
      added: (ctx, e: { events: SessionEvent[] }) => eventsAdded(ctx, e.events),
      delta: (ctx, e: { delta: LiveDelta }) => deltaAdded(ctx, e.delta),
      reset: () => initialEvents,
    },
  });
  const plans = createStore({
    context: initialPlans,
    on: {
      pendingListed: (ctx, e: { proposals: ProposalView[] }) => pendingListed(ctx, e.proposals),
      seen: (ctx, e: { proposal: ProposalView }) => proposalSeen(ctx, e.proposal),
      event: (ctx, e: { event: SessionEvent }) => planEvent(ctx, e.event),
      reset: () => initialPlans,
    },
  });
  const permissions = createStore({
    context: initialPermissions,
    on: {
      listed: (ctx, e: { requests: PermissionRequestView[]; sessionId: string | null }) =>
        permissionsListed(ctx, e.requests, e.sessionId),
      event: (ctx, e: { event: SessionEvent }) => permissionEvent(ctx, e.event),
      reset: () => initialPermissions,
    },
  });
  const connection = createStore({
    context: initialConnection,
    on: {
      set: (_ctx, e: { state: ConnectionState; reason?: string | null }) => ({
        state: e.state,
        reason: e.reason ?? null,
      }),
    },
  });
  return { sessions, events, plans, permissions, connection };
}

export type AppStores = ReturnType<typeof createAppStores>;

/** A feed item into every store it concerns. */
export function applyFeedItem(stores: AppStores, item: SessionEvent | LiveDelta): void {
  if (item.type === "delta") {
    stores.events.trigger.delta({ delta: item as LiveDelta });
    return;
  }
  const e = item as SessionEvent;
  stores.events.trigger.added({ events: [e] });
  stores.sessions.trigger.event({ event: e });
  stores.plans.trigger.event({ event: e });
  stores.permissions.trigger.event({ event: e });
}
