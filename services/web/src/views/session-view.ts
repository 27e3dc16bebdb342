// One session: what it is, the mode selector (enabled only while the session is idle), prompt and
// abort, its approval cards and permission prompts, the machine diagram with the host's current
// state highlighted, the event history beside it and the transcript. While an approval is pending
// the card's controls are the session's only enabled ones.
import sessionMachine from "../../../../docs/machines/session.json" with { type: "json" };
import type { ProposalView } from "../../../protocol/schemas.ts";
import { h, replace, setDisabled, setText, uid } from "../dom.ts";
import { type MachineJson, mountMachineViewer } from "../machine/viewer.ts";
import type { PermissionPrompt, SessionRow } from "../stores.ts";
import { absoluteTime } from "../time-format.ts";
import { type ApprovalCard, createApprovalCard } from "./approval-card.ts";
import { createEventHistory } from "./event-history.ts";
import { createPermissionCard, type PermissionCard } from "./permission-card.ts";
import { createTranscriptView } from "./transcript-view.ts";
import type { ViewContext } from "./view-context.ts";

export const PLAN_COPY =
  "Plan is planning intent: Bash still runs under the permission mode and may change files under Auto";

/** Whether the session is idle: no turn, no approval waiting, no execution queued or running. */
export function sessionIdle(s: SessionRow): boolean {
  return (
    s.activeTurnId === null &&
    s.planningState !== "awaiting_approval" &&
    (s.machineState === undefined || s.machineState === "idle" || s.machineState === "passivated")
  );
}

export function modelName(m: { provider: string; model: string }): string {
  return `${m.provider}/${m.model}`;
}

export interface SessionViewHandle {
  el: HTMLElement;
  sessionId: string;
  /** Re-renders from the stores. */
  render(): void;
  /** The host's machine state value: highlighted in the diagram ("passivated" clears it). */
  machineState(value: string | null | undefined): void;
  tick(): void;
  destroy(): void;
}

export function createSessionView(ctx: ViewContext, sessionId: string): SessionViewHandle {
  const titleId = uid("session-title");
  const title = h("h2", { id: titleId, tabindex: "-1" });
  const facts = h("dl", { class: "facts" });

  // Mode selector.
  const modeName = uid("mode");
  const modeRadios = (["agent", "plan"] as const).map((m) => {
    const id = uid("mode-opt");
    const input = h("input", { type: "radio", name: modeName, id, value: m });
    return {
      mode: m,
      input,
      row: h("div", { class: "radio-row" }, input, h("label", { for: id }, m === "agent" ? "Agent" : "Plan")),
    };
  });
  const modeApply = h("button", { type: "button" }, "Switch mode");
  const modeNote = h("p", { class: "muted mode-note" });
  const planCopyId = uid("plan-copy");
  const modeSet = h(
    "fieldset",
    { class: "mode-selector", "aria-describedby": planCopyId },
    h("legend", {}, "Mode"),
    ...modeRadios.map((r) => r.row),
    h("p", { id: planCopyId, class: "plan-copy" }, PLAN_COPY),
    modeApply,
    modeNote,
  );
  let modeBusy = false;
  let modeTouched = false;
  for (const r of modeRadios)
    r.input.addEventListener("change", () => {
      modeTouched = true;
      render();
    });
  modeApply.addEventListener("click", async () => {
    const chosen = modeRadios.find((r) => r.input.checked)?.mode;
    if (!chosen) return;
    modeBusy = true;
    render();
    try {
      const view = await ctx.bus.call("session.configure", { sessionId, mode: chosen });
      ctx.stores.sessions.trigger.got({ session: view });
      modeTouched = false;
    } catch (err) {
      ctx.report(err, "switch the mode");
    } finally {
      modeBusy = false;
      render();
    }
  });

  // Prompt and abort.
  const promptId = uid("prompt");
  const promptText = h("textarea", { id: promptId, rows: "3", class: "prompt-text" });
  const promptSend = h("button", { type: "button" }, "Send prompt");
  const promptNote = h("p", { class: "muted" });
  const abort = h("button", { type: "button", class: "abort" }, "Abort");
  let promptBusy = false;
  let abortBusy = false;
  promptSend.addEventListener("click", async () => {
    const text = promptText.value;
    if (text.trim() === "") {
      setText(promptNote, "Write a prompt first.");
      return;
    }
    promptBusy = true;
    render();
    try {
      const r = await ctx.bus.call("session.prompt", {
        sessionId,
        text,
        idempotencyKey: crypto.randomUUID?.() ?? `${Date.now()}-${Math.random()}`,
      });
      promptText.value = "";
      setText(promptNote, `Turn ${r.turnId} started.`);
    } catch (err) {
      ctx.report(err, "send the prompt");
    } finally {
      promptBusy = false;
      render();
    }
  });
  abort.addEventListener("click", async () => {
    abortBusy = true;
    render();
    try {
      const r = await ctx.bus.call("session.abort", { sessionId });
      setText(
        promptNote,
        r.aborted ? `Aborted turn ${r.aborted.turnId} (${r.aborted.code}).` : "Nothing was running.",
      );
    } catch (err) {
      ctx.report(err, "abort");
    } finally {
      abortBusy = false;
      render();
    }
  });
  const controls = h(
    "section",
    { class: "session-controls", "aria-label": "Session controls" },
    modeSet,
    h(
      "div",
      { class: "prompt-box" },
      h("label", { for: promptId }, "Prompt"),
      promptText,
      h("div", { class: "card-actions" }, promptSend, abort),
      promptNote,
    ),
  );

  // Approvals and prompts.
  const approvalsPending = h("div", { class: "approvals-pending" });
  const approvalsHistory = h("div", { class: "approvals-history" });
  const historyBox = h(
    "details",
    { class: "plan-history" },
    h("summary", {}, "Earlier plans"),
    approvalsHistory,
  );
  const approvals = h("section", { class: "approvals", "aria-label": "Plans" }, approvalsPending, historyBox);
  const prompts = h("section", { class: "permission-prompts", "aria-label": "Permission prompts" });
  const cards = new Map<string, ApprovalCard>();
  const permCards = new Map<string, PermissionCard>();

  // Machine and events.
  const diagram = h("div", { class: "machine-diagram" });
  const diagramNote = h("p", { class: "muted" });
  const history = createEventHistory();
  const machineBox = h(
    "section",
    { class: "machine-box", "aria-label": "Session machine" },
    h(
      "div",
      { class: "machine-pane" },
      h("h3", {}, "Session machine"),
      h("p", { class: "machine-now" }),
      diagram,
      diagramNote,
    ),
    history.el,
  );
  const transcript = createTranscriptView();

  const el = h(
    "section",
    { class: "session-view", "aria-labelledby": titleId },
    title,
    facts,
    approvals,
    prompts,
    controls,
    machineBox,
    transcript.el,
  );

  let viewer: { highlight(v: string | null): void; destroy(): void } | null = null;
  let lastMachine: string | null | undefined;
  let destroyed = false;
  void mountMachineViewer(diagram, sessionMachine as MachineJson, { title: "Session machine" })
    .then((v) => {
      if (destroyed) {
        v.destroy();
        return;
      }
      viewer = v;
      if (lastMachine !== undefined) v.highlight(lastMachine === "passivated" ? null : lastMachine);
    })
    .catch((err) => setText(diagramNote, `The diagram could not be drawn: ${String(err)}`));

  function machineState(value: string | null | undefined): void {
    if (value === undefined) return;
    lastMachine = value;
    setText(el.querySelector(".machine-now")!, `Host state: ${value ?? "unknown"}`);
    viewer?.highlight(value === null || value === "passivated" ? null : value);
  }

  function render(): void {
    const s = ctx.stores.sessions.getSnapshot().context.byId[sessionId];
    if (!s) {
      setText(title, `Session ${sessionId}`);
      replace(facts, h("dd", {}, "Not readable (or not loaded yet)."));
      return;
    }
    setText(title, s.title || `Session ${s.id}`);
    const degraded = ctx.stores.sessions.getSnapshot().context.degraded?.[s.id];
    const rows: Array<[string, string]> = [
      ["Session", s.id],
      ["Project", s.projectId],
      ["Owner", s.owner],
      ["Approvers", s.approvers.join(", ") || "none"],
      ["Mode", s.mode],
      ["Permission mode", s.permissionMode],
      ["Planning", s.planningState],
      ["Machine", s.machineState ?? "unknown"],
      ["Active turn", s.activeTurnId ?? "none"],
      ["Model", modelName(s.model)],
      ["Last activity", absoluteTime(s.lastActivity).iso],
    ];
    if (degraded) rows.push(["Degraded", `${degraded.failures} failures since ${degraded.since}`]);
    replace(facts, ...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));

    const plans = Object.values(ctx.stores.plans.getSnapshot().context.byId).filter(
      (p) => p.sessionId === sessionId,
    );
    const pending = plans.filter((p) => p.status === "pending");
    const terminal = plans
      .filter((p) => p.status !== "pending")
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    const approvalPending = pending.length > 0 || s.planningState === "awaiting_approval";
    placeCards(approvalsPending, pending);
    placeCards(approvalsHistory, terminal);
    historyBox.hidden = terminal.length === 0;

    const perms = Object.values(ctx.stores.permissions.getSnapshot().context.byId).filter(
      (p) => p.sessionId === sessionId && p.status === "pending",
    );
    placePermissions(perms);

    // Controls: the owner prompts and switches modes; owner and approvers abort; none while an approval waits.
    const owner = ctx.principal === s.owner;
    const idle = sessionIdle(s);
    if (!modeTouched || modeBusy) for (const r of modeRadios) r.input.checked = r.mode === s.mode;
    const chosen = modeRadios.find((r) => r.input.checked)?.mode;
    const modeOpen = owner && idle && !approvalPending && !modeBusy;
    for (const r of modeRadios) setDisabled(r.input, !modeOpen);
    setDisabled(modeApply, !modeOpen || chosen === s.mode);
    setText(
      modeNote,
      !owner
        ? "Only the session's owner can switch the mode."
        : approvalPending
          ? "A plan is waiting for approval: answer it first."
          : !idle
            ? "The mode can be switched only while the session is idle."
            : "",
    );
    const running = s.activeTurnId !== null || s.machineState === "running" || s.machineState === "queued";
    setDisabled(promptText, !owner || approvalPending);
    setDisabled(promptSend, !owner || approvalPending || promptBusy || s.activeTurnId !== null);
    setDisabled(abort, approvalPending || abortBusy || !running);
    if (!owner) setText(promptNote, "Only the session's owner can prompt.");

    const snap = ctx.stores.events.getSnapshot().context;
    const events = snap.bySession[sessionId] ?? [];
    history.render(events);
    transcript.render(events, snap.live[sessionId] ?? {});
    if (s.machineState !== undefined && s.machineState !== lastMachine) machineState(s.machineState);
  }

  function placeCards(container: HTMLElement, list: ProposalView[]): void {
    const keep = new Set(list.map((p) => p.proposalId));
    for (const p of list) {
      let card = cards.get(p.proposalId);
      if (!card) {
        card = createApprovalCard(ctx, p);
        cards.set(p.proposalId, card);
      } else card.update(p);
      if (card.el.parentElement !== container) container.append(card.el);
    }
    for (const child of [...container.children]) {
      const id = [...cards].find(([, c]) => c.el === child)?.[0];
      if (id && !keep.has(id)) child.remove();
    }
  }

  function placePermissions(list: PermissionPrompt[]): void {
    const keep = new Set(list.map((p) => p.requestId));
    for (const [id, card] of permCards) {
      if (!keep.has(id)) {
        card.el.remove();
        permCards.delete(id);
      }
    }
    for (const p of list) {
      let card = permCards.get(p.requestId);
      if (!card) {
        card = createPermissionCard(ctx, p);
        permCards.set(p.requestId, card);
        prompts.append(card.el);
      } else card.update(p);
    }
    prompts.hidden = list.length === 0;
  }

  render();
  return {
    el,
    sessionId,
    render,
    machineState,
    tick() {
      for (const c of cards.values()) c.tick();
      for (const c of permCards.values()) c.tick();
    },
    destroy() {
      destroyed = true;
      viewer?.destroy();
      el.remove();
    },
  };
}
