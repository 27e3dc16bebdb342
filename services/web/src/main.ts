// The console's entry: a login form (NATS user and password; the principal is the user), then the
// app. Credentials live only in this page's memory (the form's fields are cleared once connected;
// nothing goes to storage or cookies). The connection's state is always on screen.
import type { SessionEvent } from "../../protocol/events.ts";
import type { WalkedList } from "../../protocol/page-walk.ts";
import { storedSessionEvent } from "../../protocol/session-event.ts";
import type { FeedItem } from "../../protocol/session-feed.ts";
import { type ConsoleBus, connectConsole, reasonOf } from "./bus.ts";
import { webConfig } from "./config.ts";
import { readAll } from "./list-reads.ts";
import { h, replace, setAttrs, setDisabled, setText, uid } from "./dom.ts";
import { applyFeedItem, createAppStores, type AppStores, vanishedPending } from "./stores.ts";
import { createSessionView, type SessionViewHandle } from "./views/session-view.ts";
import { createSessionsList } from "./views/sessions-list.ts";
import { describeError, type ViewContext } from "./views/view-context.ts";

const stores = createAppStores();
const root = document.getElementById("app")!;

// ---- connection status (always visible) -----------------------------------------------------------

const statusText = h("span", { class: "status-text" });
const statusBar = h("div", { class: "connection", role: "status", "aria-live": "polite" }, statusText);
stores.connection.subscribe(({ context }) => {
  const labels: Record<string, string> = {
    "signed-out": "Not connected",
    connecting: "Connecting…",
    connected: "Connected",
    reconnecting: "Reconnecting",
    "catching-up": "Catching up on missed events…",
    disconnected: "Disconnected",
  };
  const label = labels[context.state] ?? context.state;
  setText(statusText, context.reason ? `${label}: ${context.reason}` : label);
  statusBar.dataset.state = context.state;
});

// ---- errors from the host, with their code --------------------------------------------------------

const notices = h("ul", { class: "notices", "aria-label": "Errors" });
function report(err: unknown, what: string): void {
  const { code, message } = describeError(err);
  const dismiss = h("button", { type: "button", class: "dismiss" }, "Dismiss");
  const li = h(
    "li",
    { class: "notice", role: "alert" },
    h("span", {}, `Could not ${what}: `),
    code ? h("code", { class: "error-code" }, code) : null,
    h("span", {}, ` ${message}`),
    " ",
    dismiss,
  );
  dismiss.addEventListener("click", () => li.remove());
  notices.prepend(li);
  while (notices.childElementCount > 5) notices.lastElementChild?.remove();
}

// ---- login ----------------------------------------------------------------------------------------

function showLogin(reason?: string): void {
  const userId = uid("user");
  const passId = uid("pass");
  const user = h("input", {
    id: userId,
    name: "user",
    autocomplete: "username",
    required: true,
    spellcheck: "false",
  });
  const pass = h("input", {
    id: passId,
    name: "password",
    type: "password",
    autocomplete: "current-password",
  });
  const submit = h("button", { type: "submit" }, "Connect");
  const note = h("p", { class: "card-status", role: "status" }, reason ?? "");
  const form = h(
    "form",
    { class: "login", "aria-labelledby": "login-heading", novalidate: true },
    h("h2", { id: "login-heading" }, "Sign in"),
    h("p", { class: "muted" }, `Server ${webConfig.wsUrl} · subject prefix ${webConfig.prefix}`),
    h("label", { for: userId }, "NATS user"),
    user,
    h("label", { for: passId }, "Password"),
    pass,
    submit,
    note,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const name = user.value.trim();
    if (name === "") {
      setText(note, "Give your NATS user.");
      user.focus();
      return;
    }
    setDisabled(submit, true);
    setText(note, "Connecting…");
    try {
      const bus = await connectConsole({
        wsUrl: webConfig.wsUrl,
        prefix: webConfig.prefix,
        user: name,
        pass: pass.value,
        onState: (state, why) => stores.connection.trigger.set({ state, reason: why ?? null }),
        onItem: (item) => app?.onItem(item),
        onResync: () => void app?.resync(),
        onServerError: (message) => report(new Error(message), "keep the connection clean"),
      });
      pass.value = "";
      user.value = "";
      startApp(bus);
    } catch (err) {
      setText(note, `Could not connect: ${reasonOf(err)}`);
      setDisabled(submit, false);
      pass.focus();
    }
  });
  replace(main, form);
  user.focus();
}

// ---- the app --------------------------------------------------------------------------------------

interface App {
  onItem(item: FeedItem): void;
  resync(): Promise<void>;
}
let app: App | null = null;

const main = h("main", { id: "main", tabindex: "-1" });
const who = h("span", { class: "who" });
const signOut = h("button", { type: "button", hidden: true }, "Sign out");
root.append(
  h("a", { class: "skip", href: "#main" }, "Skip to content"),
  h(
    "header",
    { class: "top" },
    h("h1", {}, "pi-host console"),
    statusBar,
    who,
    h("a", { href: "./machines.html", class: "machines-link" }, "All machines"),
    signOut,
  ),
  notices,
  main,
);

function startApp(bus: ConsoleBus): void {
  const ctx: ViewContext = { stores, bus, principal: bus.principal, report, now: () => Date.now() };
  setText(who, `Signed in as ${bus.principal}`);
  signOut.hidden = false;
  let view: SessionViewHandle | null = null;
  const sessionPane = h(
    "div",
    { class: "session-pane" },
    h("p", { class: "muted" }, "Choose a session, or create one."),
  );
  const list = createSessionsList(ctx, (id) => void open(id));
  replace(main, h("div", { class: "layout" }, list.el, sessionPane));

  async function open(sessionId: string): Promise<void> {
    if (view?.sessionId !== sessionId) {
      view?.destroy();
      view = createSessionView(ctx, sessionId);
      replace(sessionPane, view.el);
      list.select(sessionId);
      (view.el.querySelector("h2") as HTMLElement | null)?.focus();
    }
    await Promise.all([readSession(sessionId), loadHistory(sessionId), loadPlans(sessionId)]);
  }

  async function readSession(sessionId: string): Promise<void> {
    try {
      const s = await bus.call("session.get", { sessionId });
      stores.sessions.trigger.got({ session: s });
      const ms = (s as { machineState?: unknown }).machineState;
      if (view?.sessionId === sessionId && typeof ms === "string") view.machineState(ms);
    } catch (err) {
      report(err, `read session ${sessionId}`);
    }
  }

  /** Each session's position after its last history page (events.since `next`). */
  const historyNext = new Map<string, string>();
  /** The session's stored events after the last page read of it (all of them the first time). */
  async function loadHistory(sessionId: string): Promise<void> {
    let after: string | 0 = historyNext.get(sessionId) ?? 0;
    try {
      for (let page = 0; page < 20; page++) {
        const r = await bus.call("events.since", { sessionId, after, limit: 500 });
        const events = r.events
          .map((b) => storedSessionEvent(sessionId, b as Record<string, unknown>))
          .filter((e): e is SessionEvent => e !== null);
        stores.events.trigger.added({ events });
        after = r.next;
        historyNext.set(sessionId, r.next);
        if (!r.more) break;
      }
    } catch (err) {
      report(err, "read the session's events");
    }
  }

  async function loadPlans(sessionId: string): Promise<void> {
    try {
      const r = await bus.call("plans.history", { sessionId, limit: 20 });
      for (const p of r.proposals) stores.plans.trigger.seen({ proposal: p });
    } catch (err) {
      report(err, "read the session's plans");
    }
  }

  let retry: ReturnType<typeof setTimeout> | null = null;
  /**
   * Re-reads the lists (after connecting and after each reconnect's catch-up). NATS may be back
   * before the host is: while the host does not answer, the status says so and it asks again.
   */
  async function resync(attempt = 0): Promise<void> {
    if (retry) clearTimeout(retry);
    retry = null;
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
        retry = setTimeout(() => void resync(attempt + 1), Math.min(5_000, 500 * 2 ** attempt));
      } else report(err, "re-read the sessions");
      return;
    }
    const now = stores.connection.getSnapshot().context;
    if (now.state === "connected" && now.reason !== null)
      stores.connection.trigger.set({ state: "connected" });
    stores.sessions.trigger.listed({ sessions: sessions.items, cut: sessions.next !== null });
    const tasks: Array<Promise<unknown>> = [
      readPending(null),
      readPermissions(null),
      bus
        .call("host.status")
        .then((r) => stores.sessions.trigger.degraded({ list: r.sessions.degraded }))
        .catch(() => stores.sessions.trigger.degraded({ list: null })), // not readable: omitted
    ];
    const results = await Promise.allSettled(tasks);
    for (const r of results) if (r.status === "rejected") report(r.reason, "re-read the lists");
    if (view) await open(view.sessionId);
  }

  async function readPermissions(sessionId: string | null): Promise<void> {
    const r = await readAll(bus, "permissions.pending", sessionId ? { sessionId } : {});
    stores.permissions.trigger.listed({ requests: r.items, sessionId });
  }

  async function readPending(sessionId: string | null): Promise<void> {
    const r = await readAll(bus, "plans.pending", sessionId ? { sessionId } : {});
    const gone = vanishedPending(stores.plans.getSnapshot().context, r.items, sessionId);
    stores.plans.trigger.pendingListed({ proposals: r.items });
    await Promise.all(
      gone.map((proposalId) =>
        bus
          .call("plans.get", { proposalId })
          .then((p) => stores.plans.trigger.seen({ proposal: p }))
          .catch((err) => report(err, `read plan ${proposalId}`)),
      ),
    );
  }

  // Events are hints: what they touch is re-read, a little later and once per burst.
  const timers = new Map<string, ReturnType<typeof setTimeout>>();
  function soon(key: string, fn: () => Promise<unknown>): void {
    if (timers.has(key)) return;
    timers.set(
      key,
      setTimeout(() => {
        timers.delete(key);
        void fn().catch((err) => report(err, "re-read after an event"));
      }, 150),
    );
  }

  app = {
    onItem(item) {
      applyFeedItem(stores, item);
      if (item.type === "delta") return;
      const e = item as SessionEvent;
      // A session not listed yet (created, or the caller just named approver): that one is read,
      // never the whole list again (a burst of thousands would re-read it thousands of times).
      const known = stores.sessions.getSnapshot().context.byId[e.sessionId] !== undefined;
      if (!known) soon(`get:${e.sessionId}`, () => readSession(e.sessionId));
      const type = e.type as string;
      if (type === "machine.state" && view?.sessionId === e.sessionId)
        view.machineState((e as unknown as { state: string }).state);
      if (type === "plan.changed") soon(`plans:${e.sessionId}`, () => readPending(e.sessionId));
      if (type.startsWith("permission.")) soon(`perms:${e.sessionId}`, () => readPermissions(e.sessionId));
      if (
        view?.sessionId === e.sessionId &&
        (type === "turn.ended" || type === "plan.changed" || type === "session.changed")
      )
        soon(`get:${e.sessionId}`, () => readSession(e.sessionId));
    },
    resync,
  };

  // Rendering: batched, once per frame at most; countdowns once a second.
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      list.render();
      view?.render();
    }, 16);
  };
  const subs = [
    stores.sessions.subscribe(schedule),
    stores.events.subscribe(schedule),
    stores.plans.subscribe(schedule),
    stores.permissions.subscribe(schedule),
  ];
  const ticker = setInterval(() => {
    view?.tick();
    list.render();
  }, 1000);

  const onSignOut = async () => {
    clearInterval(ticker);
    if (retry) clearTimeout(retry);
    for (const s of subs) s.unsubscribe();
    for (const t of timers.values()) clearTimeout(t);
    app = null;
    view?.destroy();
    await bus.close();
    resetStores(stores);
    signOut.hidden = true;
    setText(who, "");
    stores.connection.trigger.set({ state: "signed-out" });
    showLogin("Signed out.");
  };
  signOut.onclick = () => void onSignOut();
  void resync();
}

/** A request that got no reply (no host listening, or the connection down), as rpc-client.ts marks it. */
function isTransportError(err: unknown): boolean {
  const details = (err as { details?: { transport?: unknown } }).details;
  return details?.transport === true;
}

function resetStores(s: AppStores): void {
  s.sessions.trigger.reset();
  s.events.trigger.reset();
  s.plans.trigger.reset();
  s.permissions.trigger.reset();
}

setAttrs(document.documentElement, { lang: "en" });
showLogin();
