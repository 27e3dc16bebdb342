// The signed-in console: the sessions list beside the open session, what is read from the host and
// when (on open, on each resync, and a little after the events that touch it), and the rendering,
// batched once per frame. main.ts signs in and out; this is what runs in between.
import type { SessionEvent } from "../../protocol/events.ts";
import type { WalkedList } from "../../protocol/page-walk.ts";
import { storedSessionEvent } from "../../protocol/session-event.ts";
import type { FeedItem } from "../../protocol/session-feed.ts";
import type { ConsoleBus } from "./bus.ts";
import { h, replace } from "./dom.ts";
import { readAll } from "./list-reads.ts";
import { type AppStores, applyFeedItem, vanishedPending } from "./stores.ts";
import { createSessionView, type SessionViewHandle } from "./views/session-view.ts";
import { createSessionsList } from "./views/sessions-list.ts";
import { describeError, type ViewContext } from "./views/view-context.ts";

export interface ConsoleAppDeps {
  stores: AppStores;
  bus: ConsoleBus;
  /** Shows an error from the host (code and message) or a local one. */
  report(err: unknown, what: string): void;
  /** Where the app draws itself. */
  main: HTMLElement;
}

export interface ConsoleApp {
  onItem(item: FeedItem): void;
  /** Re-reads the lists (after connecting and after each reconnect's catch-up). */
  resync(): Promise<void>;
  /** Stops its timers, subscriptions and the open session's view (at sign-out). */
  stop(): void;
}

type Timer = ReturnType<typeof setTimeout>;

/** The app's state and dependencies, which each step below takes explicitly. */
interface AppState extends ConsoleAppDeps {
  ctx: ViewContext;
  list: ReturnType<typeof createSessionsList>;
  sessionPane: HTMLElement;
  view: SessionViewHandle | null;
  /** Each session's position after its last history page (events.since `next`). */
  historyNext: Map<string, string>;
  retry: Timer | null;
  /** Events are hints: what they touch is re-read, a little later and once per burst. */
  timers: Map<string, Timer>;
  scheduled: boolean;
}

export function createConsoleApp(deps: ConsoleAppDeps): ConsoleApp {
  const { stores, bus, report, main } = deps;
  const ctx: ViewContext = { stores, bus, principal: bus.principal, report, now: () => Date.now() };
  const sessionPane = h(
    "div",
    { class: "session-pane" },
    h("p", { class: "muted" }, "Choose a session, or create one."),
  );
  const list = createSessionsList(ctx, (id) => void openSession(a, id));
  replace(main, h("div", { class: "layout" }, list.el, sessionPane));
  const a: AppState = {
    ...deps,
    ctx,
    list,
    sessionPane,
    view: null,
    historyNext: new Map(),
    retry: null,
    timers: new Map(),
    scheduled: false,
  };

  // Rendering: batched, once per frame at most; countdowns once a second.
  const schedule = () => scheduleRender(a);
  const subs = [
    stores.sessions.subscribe(schedule),
    stores.events.subscribe(schedule),
    stores.plans.subscribe(schedule),
    stores.permissions.subscribe(schedule),
  ];
  const ticker = setInterval(() => {
    a.view?.tick();
    list.render();
  }, 1000);

  return {
    onItem: (item) => onItem(a, item),
    resync: () => resync(a),
    stop() {
      clearInterval(ticker);
      if (a.retry) clearTimeout(a.retry);
      for (const s of subs) s.unsubscribe();
      for (const t of a.timers.values()) clearTimeout(t);
      a.view?.destroy();
    },
  };
}

async function openSession(a: AppState, sessionId: string): Promise<void> {
  if (a.view?.sessionId !== sessionId) {
    a.view?.destroy();
    const view = createSessionView(a.ctx, sessionId);
    a.view = view;
    replace(a.sessionPane, view.el);
    a.list.select(sessionId);
    (view.el.querySelector("h2") as HTMLElement | null)?.focus();
  }
  await Promise.all([readSession(a, sessionId), loadHistory(a, sessionId), loadPlans(a, sessionId)]);
}

async function readSession(a: AppState, sessionId: string): Promise<void> {
  try {
    const s = await a.bus.call("session.get", { sessionId });
    a.stores.sessions.trigger.got({ session: s });
    const ms = (s as { machineState?: unknown }).machineState;
    if (a.view?.sessionId === sessionId && typeof ms === "string") a.view.machineState(ms);
  } catch (err) {
    a.report(err, `read session ${sessionId}`);
  }
}

/** The session's stored events after the last page read of it (all of them the first time). */
async function loadHistory(a: AppState, sessionId: string): Promise<void> {
  let after: string | 0 = a.historyNext.get(sessionId) ?? 0;
  try {
    for (let page = 0; page < 20; page++) {
      const r = await a.bus.call("events.since", { sessionId, after, limit: 500 });
      const events = r.events
        .map((b) => storedSessionEvent(sessionId, b as Record<string, unknown>))
        .filter((e): e is SessionEvent => e !== null);
      a.stores.events.trigger.added({ events });
      after = r.next;
      a.historyNext.set(sessionId, r.next);
      if (!r.more) break;
    }
  } catch (err) {
    a.report(err, "read the session's events");
  }
}

async function loadPlans(a: AppState, sessionId: string): Promise<void> {
  try {
    const r = await a.bus.call("plans.history", { sessionId, limit: 20 });
    for (const p of r.proposals) a.stores.plans.trigger.seen({ proposal: p });
  } catch (err) {
    a.report(err, "read the session's plans");
  }
}

/**
 * Re-reads the lists (after connecting and after each reconnect's catch-up). NATS may be back
 * before the host is: while the host does not answer, the status says so and it asks again.
 */
async function resync(a: AppState, attempt = 0): Promise<void> {
  const { stores, bus } = a;
  if (a.retry) clearTimeout(a.retry);
  a.retry = null;
  let sessions: WalkedList<"session.list">;
  try {
    sessions = await readAll(bus, "session.list", {});
  } catch (err) {
    const state = stores.connection.getSnapshot().context.state;
    if (isTransportError(err) && state === "connected") {
      stores.connection.trigger.set({
        state,
        reason: `the host does not answer yet (${describeError(err).message}); asking again`,
      });
      a.retry = setTimeout(() => void resync(a, attempt + 1), Math.min(5_000, 500 * 2 ** attempt));
    } else a.report(err, "re-read the sessions");
    return;
  }
  const now = stores.connection.getSnapshot().context;
  if (now.state === "connected" && now.reason !== null) stores.connection.trigger.set({ state: "connected" });
  stores.sessions.trigger.listed({ sessions: sessions.items, cut: sessions.next !== null });
  const tasks: Array<Promise<unknown>> = [
    readPending(a, null),
    readPermissions(a, null),
    bus
      .call("host.status")
      .then((r) => stores.sessions.trigger.degraded({ list: r.sessions.degraded }))
      .catch(() => stores.sessions.trigger.degraded({ list: null })), // not readable: omitted
  ];
  const results = await Promise.allSettled(tasks);
  for (const r of results) if (r.status === "rejected") a.report(r.reason, "re-read the lists");
  if (a.view) await openSession(a, a.view.sessionId);
}

async function readPermissions(a: AppState, sessionId: string | null): Promise<void> {
  const r = await readAll(a.bus, "permissions.pending", sessionId ? { sessionId } : {});
  a.stores.permissions.trigger.listed({ requests: r.items, sessionId });
}

async function readPending(a: AppState, sessionId: string | null): Promise<void> {
  const { stores } = a;
  const r = await readAll(a.bus, "plans.pending", sessionId ? { sessionId } : {});
  const gone = vanishedPending(stores.plans.getSnapshot().context, r.items, sessionId);
  stores.plans.trigger.pendingListed({ proposals: r.items });
  await Promise.all(
    gone.map((proposalId) =>
      a.bus
        .call("plans.get", { proposalId })
        .then((p) => stores.plans.trigger.seen({ proposal: p }))
        .catch((err) => a.report(err, `read plan ${proposalId}`)),
    ),
  );
}

function soon(a: AppState, key: string, fn: () => Promise<unknown>): void {
  if (a.timers.has(key)) return;
  a.timers.set(
    key,
    setTimeout(() => {
      a.timers.delete(key);
      void fn().catch((err) => a.report(err, "re-read after an event"));
    }, 150),
  );
}

function onItem(a: AppState, item: FeedItem): void {
  const { stores } = a;
  applyFeedItem(stores, item);
  if (item.type === "delta") return;
  const e = item as SessionEvent;
  // A session not listed yet (created, or the caller just named approver): that one is read,
  // never the whole list again (a burst of thousands would re-read it thousands of times).
  const known = stores.sessions.getSnapshot().context.byId[e.sessionId] !== undefined;
  if (!known) soon(a, `get:${e.sessionId}`, () => readSession(a, e.sessionId));
  const type = e.type as string;
  if (type === "machine.state" && a.view?.sessionId === e.sessionId)
    a.view.machineState((e as unknown as { state: string }).state);
  if (type === "plan.changed") soon(a, `plans:${e.sessionId}`, () => readPending(a, e.sessionId));
  if (type.startsWith("permission.")) soon(a, `perms:${e.sessionId}`, () => readPermissions(a, e.sessionId));
  if (
    a.view?.sessionId === e.sessionId &&
    (type === "turn.ended" || type === "plan.changed" || type === "session.changed")
  )
    soon(a, `get:${e.sessionId}`, () => readSession(a, e.sessionId));
}

function scheduleRender(a: AppState): void {
  if (a.scheduled) return;
  a.scheduled = true;
  setTimeout(() => {
    a.scheduled = false;
    a.list.render();
    a.view?.render();
  }, 16);
}

/** A request that got no reply (no host listening, or the connection down), as rpc-client.ts marks it. */
function isTransportError(err: unknown): boolean {
  const details = (err as { details?: { transport?: unknown } }).details;
  return details?.transport === true;
}
