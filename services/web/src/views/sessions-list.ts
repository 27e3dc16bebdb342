// The sessions the person can read: mode, planning state, active turn, a pending approval with its
// deadline, the degraded flag, model and last activity; and the form that creates a session.
import { OPERATING_MODES, PERMISSION_MODES } from "../../../protocol/modes.ts";
import { h, replace, setAttrs, setDisabled, setText, uid } from "../dom.ts";
import type { SessionRow } from "../stores.ts";
import { absoluteTime, countdown } from "../time-format.ts";
import { reconcile } from "./reconcile.ts";
import { modelName, PLAN_COPY } from "./session-view.ts";
import type { ViewContext } from "./view-context.ts";

const PERMISSION_LABELS: Record<string, string> = {
  inherit: "Inherit (the deployment's default)",
  ask: "Ask",
  "accept-edits": "Accept edits",
  auto: "Auto",
};

export function createSessionsList(ctx: ViewContext, onOpen: (sessionId: string) => void) {
  const list = h("ul", { class: "session-list" });
  const empty = h("p", { class: "muted" }, "No sessions yet.");
  const cut = h("p", { class: "muted", hidden: true });
  const form = createSessionForm(ctx, onOpen);
  const el = h(
    "section",
    { class: "sessions", "aria-labelledby": "sessions-heading" },
    h("h2", { id: "sessions-heading" }, "Sessions"),
    empty,
    cut,
    list,
    form.el,
  );
  let selected: string | null = null;

  function render(): void {
    const snap = ctx.stores.sessions.getSnapshot().context;
    const plans = Object.values(ctx.stores.plans.getSnapshot().context.byId);
    const rows = Object.values(snap.byId).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    empty.hidden = rows.length > 0;
    cut.hidden = !snap.cut;
    if (snap.cut) setText(cut, `Showing the newest ${rows.length} sessions: older ones are not loaded.`);
    reconcile(
      list,
      rows,
      (s) => s.id,
      (s) => {
        const open = h("button", { type: "button", class: "session-open" });
        open.addEventListener("click", () => onOpen(s.id));
        return h("li", { class: "session-item" }, open, h("p", { class: "session-meta" }));
      },
      (li, s) => {
        const open = li.querySelector("button")!;
        setText(open, s.title || s.id);
        setAttrs(open, {
          "aria-label": `Open session ${s.title || s.id}`,
          "aria-current": selected === s.id ? "true" : null,
        });
        const pending = plans.find((p) => p.sessionId === s.id && p.status === "pending");
        const degraded = snap.degraded?.[s.id];
        const parts = [
          `mode ${s.mode}`,
          `planning ${s.planningState}`,
          s.activeTurnId ? `turn ${s.activeTurnId}` : "no active turn",
          pending
            ? `approval pending until ${absoluteTime(pending.deadline).iso} (${countdown(pending.deadline, ctx.now())})`
            : null,
          degraded ? `DEGRADED (${degraded.failures} failures since ${degraded.since})` : null,
          `model ${modelName(s.model)}`,
          `last activity ${absoluteTime(s.lastActivity).iso}`,
        ].filter((x): x is string => x !== null);
        li.classList.toggle("has-approval", pending !== undefined);
        li.classList.toggle("degraded", degraded !== undefined);
        setText(li.querySelector(".session-meta")!, parts.join(" · "));
      },
    );
    form.render(rows);
  }

  return {
    el,
    render,
    select(id: string | null) {
      selected = id;
      render();
    },
  };
}

/** The create form: a project id (no method lists projects; known ids are suggested), mode Agent|Plan (Agent preselected) and the permission mode. */
function createSessionForm(ctx: ViewContext, onOpen: (sessionId: string) => void) {
  const projectId = uid("project");
  const listId = uid("projects");
  const titleId = uid("title");
  const permId = uid("perm");
  const project = h("input", {
    id: projectId,
    list: listId,
    required: true,
    autocomplete: "off",
    spellcheck: "false",
  });
  const projects = h("datalist", { id: listId });
  const title = h("input", { id: titleId, maxlength: "200", autocomplete: "off" });
  const modeName = uid("create-mode");
  const modes = modeChoices(modeName);
  const perm = h(
    "select",
    { id: permId },
    ...PERMISSION_MODES.map((m) => h("option", { value: m }, PERMISSION_LABELS[m] ?? m)),
  );
  const autoWarning = h(
    "p",
    { class: "auto-warning", hidden: true },
    "Warning: under Auto, Bash runs without asking and may change any file in the workspace.",
  );
  perm.addEventListener("change", () => {
    autoWarning.hidden = perm.value !== "auto";
  });
  const submit = h("button", { type: "submit" }, "Create session");
  const note = h("p", { class: "card-status", role: "status" });
  const el = h(
    "form",
    { class: "create-session", "aria-labelledby": "create-heading", novalidate: true },
    h("h3", { id: "create-heading" }, "New session"),
    h("label", { for: projectId }, "Project id"),
    project,
    projects,
    h("label", { for: titleId }, "Title (optional)"),
    title,
    h("fieldset", {}, h("legend", {}, "Mode"), ...modes, h("p", { class: "plan-copy" }, PLAN_COPY)),
    h("label", { for: permId }, "Permission mode"),
    perm,
    autoWarning,
    submit,
    note,
  );
  const fields: CreateFields = { el, project, title, modeName, perm, submit, note, busy: false };
  el.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void createSession(ctx, fields, onOpen);
  });

  return {
    el,
    render(rows: readonly SessionRow[]) {
      const ids = [...new Set(rows.map((r) => r.projectId))].sort();
      if (projects.childElementCount !== ids.length)
        replace(projects, ...ids.map((id) => h("option", { value: id })));
    },
  };
}

/** The mode radios, Agent preselected. */
function modeChoices(modeName: string): HTMLElement[] {
  return OPERATING_MODES.map((m) => {
    const id = uid("create-mode-opt");
    const input = h("input", {
      type: "radio",
      name: modeName,
      id,
      value: m,
      ...(m === "agent" ? { checked: true } : {}),
    });
    return h("div", { class: "radio-row" }, input, h("label", { for: id }, m === "agent" ? "Agent" : "Plan"));
  });
}

/** The create form's fields, and whether a create it sent is still waiting for its reply. */
interface CreateFields {
  el: HTMLFormElement;
  project: HTMLInputElement;
  title: HTMLInputElement;
  modeName: string;
  perm: HTMLSelectElement;
  submit: HTMLButtonElement;
  note: HTMLElement;
  busy: boolean;
}

/** Creates the session the form describes and opens it; a refusal is reported. */
async function createSession(
  ctx: ViewContext,
  f: CreateFields,
  onOpen: (sessionId: string) => void,
): Promise<void> {
  const { el, project, title, modeName, perm, submit, note } = f;
  if (f.busy) return;
  const id = project.value.trim();
  if (id === "") {
    setText(note, "Give the project id.");
    project.focus();
    return;
  }
  const mode = (el.querySelector(`input[name="${modeName}"]:checked`) as HTMLInputElement | null)?.value;
  f.busy = true;
  setDisabled(submit, true);
  setText(note, "Creating…");
  try {
    const view = await ctx.bus.call("session.create", {
      projectId: id,
      ...(title.value.trim() ? { title: title.value.trim() } : {}),
      mode: mode === "plan" ? "plan" : "agent",
      permissionMode: perm.value as (typeof PERMISSION_MODES)[number],
    });
    ctx.stores.sessions.trigger.got({ session: view });
    setText(note, `Created ${view.id}.`);
    title.value = "";
    onOpen(view.id);
  } catch (err) {
    setText(note, "");
    ctx.report(err, "create the session");
  } finally {
    f.busy = false;
    setDisabled(submit, false);
  }
}
