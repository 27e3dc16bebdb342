// The console's entry: a login form (NATS user and password; the principal is the user), then the
// app. Credentials live only in this page's memory (the form's fields are cleared once connected;
// nothing goes to storage or cookies). The connection's state is always on screen.
import { type ConsoleBus, connectConsole, reasonOf } from "./bus.ts";
import { type ConsoleApp, createConsoleApp } from "./console-app.ts";
import { webConfig } from "./config.ts";
import { h, replace, setAttrs, setDisabled, setText, uid } from "./dom.ts";
import { createAppStores, type AppStores } from "./stores.ts";
import { describeError } from "./views/view-context.ts";

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

let app: ConsoleApp | null = null;

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
  setText(who, `Signed in as ${bus.principal}`);
  signOut.hidden = false;
  const started = createConsoleApp({ stores, bus, report, main });
  app = started;
  signOut.onclick = () => void onSignOut(started, bus);
  void started.resync();
}

async function onSignOut(started: ConsoleApp, bus: ConsoleBus): Promise<void> {
  app = null;
  started.stop();
  await bus.close();
  resetStores(stores);
  signOut.hidden = true;
  setText(who, "");
  stores.connection.trigger.set({ state: "signed-out" });
  showLogin("Signed out.");
}

function resetStores(s: AppStores): void {
  s.sessions.trigger.reset();
  s.events.trigger.reset();
  s.plans.trigger.reset();
  s.permissions.trigger.reset();
}

setAttrs(document.documentElement, { lang: "en" });
showLogin();
