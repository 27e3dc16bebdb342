// One session: what it is, the mode selector (enabled only while the session is idle), prompt and
// abort, its approval cards and permission prompts, the machine diagram with the host's current
// state highlighted, the event history beside it and the transcript. While an approval is pending
// the card's controls are the session's only enabled ones.
import sessionMachine from "../../../../docs/machines/session.json" with { type: "json" };
import type { ProposalView } from "../../../protocol/schemas.ts";
import { h, replace, setDisabled, setText } from "../dom.ts";
import { type MachineJson, mountMachineViewer } from "../machine/viewer.ts";
import type { PermissionPrompt, SessionRow } from "../stores.ts";
import { absoluteTime } from "../time-format.ts";
import { type ApprovalCard, createApprovalCard } from "./approval-card.ts";
import { createPermissionCard, type PermissionCard } from "./permission-card.ts";
import { type SessionViewParts, sessionViewParts } from "./session-view-parts.ts";
import type { ViewContext } from "./view-context.ts";

export { PLAN_COPY } from "./session-view-parts.ts";

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

type MachineViewer = { highlight(v: string | null): void; destroy(): void };

/** One view's state and dependencies, which each step below takes explicitly. */
interface ViewState {
  ctx: ViewContext;
  sessionId: string;
  parts: SessionViewParts;
  modeBusy: boolean;
  modeTouched: boolean;
  promptBusy: boolean;
  abortBusy: boolean;
  cards: Map<string, ApprovalCard>;
  permCards: Map<string, PermissionCard>;
  viewer: MachineViewer | null;
  lastMachine: string | null | undefined;
  destroyed: boolean;
}

export function createSessionView(ctx: ViewContext, sessionId: string): SessionViewHandle {
  const parts = sessionViewParts();
  const v: ViewState = {
    ctx,
    sessionId,
    parts,
    modeBusy: false,
    modeTouched: false,
    promptBusy: false,
    abortBusy: false,
    cards: new Map(),
    permCards: new Map(),
    viewer: null,
    lastMachine: undefined,
    destroyed: false,
  };
  for (const r of parts.modeRadios)
    r.input.addEventListener("change", () => {
      v.modeTouched = true;
      renderView(v);
    });
  parts.modeApply.addEventListener("click", () => void switchMode(v));
  parts.promptSend.addEventListener("click", () => void sendPrompt(v));
  parts.abort.addEventListener("click", () => void abortSession(v));
  mountDiagram(v);

  renderView(v);
  return {
    el: parts.el,
    sessionId,
    render: () => renderView(v),
    machineState: (value) => machineState(v, value),
    tick() {
      for (const c of v.cards.values()) c.tick();
      for (const c of v.permCards.values()) c.tick();
    },
    destroy() {
      v.destroyed = true;
      v.viewer?.destroy();
      parts.el.remove();
    },
  };
}

async function switchMode(v: ViewState): Promise<void> {
  const { ctx, sessionId } = v;
  const chosen = v.parts.modeRadios.find((r) => r.input.checked)?.mode;
  if (!chosen) return;
  v.modeBusy = true;
  renderView(v);
  try {
    const view = await ctx.bus.call("session.configure", { sessionId, mode: chosen });
    ctx.stores.sessions.trigger.got({ session: view });
    v.modeTouched = false;
  } catch (err) {
    ctx.report(err, "switch the mode");
  } finally {
    v.modeBusy = false;
    renderView(v);
  }
}

async function sendPrompt(v: ViewState): Promise<void> {
  const { ctx, sessionId } = v;
  const { promptText, promptNote } = v.parts;
  const text = promptText.value;
  if (text.trim() === "") {
    setText(promptNote, "Write a prompt first.");
    return;
  }
  v.promptBusy = true;
  renderView(v);
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
    v.promptBusy = false;
    renderView(v);
  }
}

async function abortSession(v: ViewState): Promise<void> {
  const { ctx, sessionId } = v;
  v.abortBusy = true;
  renderView(v);
  try {
    const r = await ctx.bus.call("session.abort", { sessionId });
    setText(
      v.parts.promptNote,
      r.aborted ? `Aborted turn ${r.aborted.turnId} (${r.aborted.code}).` : "Nothing was running.",
    );
  } catch (err) {
    ctx.report(err, "abort");
  } finally {
    v.abortBusy = false;
    renderView(v);
  }
}

function mountDiagram(v: ViewState): void {
  void mountMachineViewer(v.parts.diagram, sessionMachine as MachineJson, { title: "Session machine" })
    .then((viewer) => {
      if (v.destroyed) {
        viewer.destroy();
        return;
      }
      v.viewer = viewer;
      const last = v.lastMachine;
      if (last !== undefined) viewer.highlight(last === "passivated" ? null : last);
    })
    .catch((err) => setText(v.parts.diagramNote, `The diagram could not be drawn: ${String(err)}`));
}

function machineState(v: ViewState, value: string | null | undefined): void {
  if (value === undefined) return;
  v.lastMachine = value;
  setText(v.parts.el.querySelector(".machine-now")!, `Host state: ${value ?? "unknown"}`);
  v.viewer?.highlight(value === null || value === "passivated" ? null : value);
}

function renderView(v: ViewState): void {
  const { ctx, sessionId, parts } = v;
  const s = ctx.stores.sessions.getSnapshot().context.byId[sessionId];
  if (!s) {
    setText(parts.title, `Session ${sessionId}`);
    replace(parts.facts, h("dd", {}, "Not readable (or not loaded yet)."));
    return;
  }
  renderFacts(v, s);
  const approvalPending = renderPlans(v, s);

  const perms = Object.values(ctx.stores.permissions.getSnapshot().context.byId).filter(
    (p) => p.sessionId === sessionId && p.status === "pending",
  );
  placePermissions(v, perms);
  renderControls(v, s, approvalPending);

  const snap = ctx.stores.events.getSnapshot().context;
  const events = snap.bySession[sessionId] ?? [];
  parts.history.render(events);
  parts.transcript.render(events, snap.live[sessionId] ?? {});
  if (s.machineState !== undefined && s.machineState !== v.lastMachine) machineState(v, s.machineState);
}

function renderFacts(v: ViewState, s: SessionRow): void {
  setText(v.parts.title, s.title || `Session ${s.id}`);
  const degraded = v.ctx.stores.sessions.getSnapshot().context.degraded?.[s.id];
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
  replace(v.parts.facts, ...rows.flatMap(([k, val]) => [h("dt", {}, k), h("dd", {}, val)]));
}

/** The session's approval cards, pending first, earlier ones below; whether an approval waits. */
function renderPlans(v: ViewState, s: SessionRow): boolean {
  const plans = Object.values(v.ctx.stores.plans.getSnapshot().context.byId).filter(
    (p) => p.sessionId === v.sessionId,
  );
  const pending = plans.filter((p) => p.status === "pending");
  const terminal = plans
    .filter((p) => p.status !== "pending")
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const approvalPending = pending.length > 0 || s.planningState === "awaiting_approval";
  placeCards(v, v.parts.approvalsPending, pending);
  placeCards(v, v.parts.approvalsHistory, terminal);
  v.parts.historyBox.hidden = terminal.length === 0;
  return approvalPending;
}

// Controls: the owner prompts and switches modes; owner and approvers abort; none while an approval waits.
function renderControls(v: ViewState, s: SessionRow, approvalPending: boolean): void {
  const { modeRadios, modeApply, modeNote, promptText, promptSend, promptNote, abort } = v.parts;
  const owner = v.ctx.principal === s.owner;
  const idle = sessionIdle(s);
  if (!v.modeTouched || v.modeBusy) for (const r of modeRadios) r.input.checked = r.mode === s.mode;
  const chosen = modeRadios.find((r) => r.input.checked)?.mode;
  const modeOpen = owner && idle && !approvalPending && !v.modeBusy;
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
  setDisabled(promptSend, !owner || approvalPending || v.promptBusy || s.activeTurnId !== null);
  setDisabled(abort, approvalPending || v.abortBusy || !running);
  if (!owner) setText(promptNote, "Only the session's owner can prompt.");
}

function placeCards(v: ViewState, container: HTMLElement, list: ProposalView[]): void {
  const { cards } = v;
  const keep = new Set(list.map((p) => p.proposalId));
  for (const p of list) {
    let card = cards.get(p.proposalId);
    if (!card) {
      card = createApprovalCard(v.ctx, p);
      cards.set(p.proposalId, card);
    } else card.update(p);
    if (card.el.parentElement !== container) container.append(card.el);
  }
  for (const child of [...container.children]) {
    const id = [...cards].find(([, c]) => c.el === child)?.[0];
    if (id && !keep.has(id)) child.remove();
  }
}

function placePermissions(v: ViewState, list: PermissionPrompt[]): void {
  const { permCards } = v;
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
      card = createPermissionCard(v.ctx, p);
      permCards.set(p.requestId, card);
      v.parts.prompts.append(card.el);
    } else card.update(p);
  }
  v.parts.prompts.hidden = list.length === 0;
}
