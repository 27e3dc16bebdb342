// A permission prompt (issue #15 clause 5): the tool, its risk, a bounded preview shown as text and
// the deadline with a countdown; Allow once, Allow for session, Deny. No default: no button is
// focused or styled as the primary one, and there is no form, so Enter alone answers nothing.
import { h, setDisabled, setText, uid } from "../dom.ts";
import type { PermissionPrompt } from "../stores.ts";
import { absoluteTime, countdown } from "../time-format.ts";
import { errorText, type ViewContext } from "./view-context.ts";

/** Characters of a prompt's preview shown at most. */
export const PREVIEW_MAX_CHARS = 4096;

/** The preview as text, cut at PREVIEW_MAX_CHARS (and said so). */
export function previewText(preview: Record<string, unknown>): string {
  let text: string;
  try {
    text = JSON.stringify(preview, null, 2) ?? "";
  } catch {
    text = String(preview);
  }
  if (text.length <= PREVIEW_MAX_CHARS) return text;
  return `${text.slice(0, PREVIEW_MAX_CHARS)}\n… (${text.length - PREVIEW_MAX_CHARS} more characters not shown)`;
}

export interface PermissionCard {
  el: HTMLElement;
  update(p: PermissionPrompt): void;
  tick(): void;
}

const DECISIONS = [
  { decision: "allow-once", label: "Allow once" },
  { decision: "allow-session", label: "Allow for session" },
  { decision: "deny", label: "Deny" },
] as const;

export function createPermissionCard(ctx: ViewContext, initial: PermissionPrompt): PermissionCard {
  let p = initial;
  let busy = false;
  const titleId = uid("perm-title");
  const title = h("h3", { id: titleId });
  const risk = h("p", { class: "risk" });
  const preview = h("pre", { class: "preview", "aria-label": "What the tool would do" });
  const deadlineTime = h("time", {});
  const timer = h("span", { class: "countdown", role: "timer", "aria-live": "off" });
  const deadline = h("p", { class: "expiry" }, "Unanswered it is denied at ", deadlineTime, " — ", timer);
  const status = h("p", { class: "card-status", role: "status" });
  const buttons = DECISIONS.map((d) => {
    const b = h("button", { type: "button" }, d.label);
    b.addEventListener("click", () => void answer(d.decision));
    return b;
  });
  const el = h(
    "article",
    { class: "permission-card", "aria-labelledby": titleId },
    title,
    risk,
    preview,
    deadline,
    h("div", { class: "card-actions" }, ...buttons),
    status,
  );

  async function answer(decision: (typeof DECISIONS)[number]["decision"]): Promise<void> {
    if (busy) return;
    busy = true;
    tick();
    try {
      const r = await ctx.bus.call("permissions.resolve", { requestId: p.requestId, decision });
      setText(status, `Answered: ${r.decision ?? r.status}`);
    } catch (err) {
      setText(status, `Refused: ${errorText(err)}`);
      ctx.report(err, "answer the permission prompt");
    } finally {
      busy = false;
      tick();
    }
  }

  function render(): void {
    setText(title, `Permission needed: ${p.tool}`);
    setText(risk, `Risk: ${p.risk}`);
    setText(preview, previewText(p.preview));
    const t = absoluteTime(p.deadline);
    deadlineTime.setAttribute("datetime", t.iso);
    setText(deadlineTime, `${t.iso} (local time ${t.local})`);
    el.classList.toggle(`risk-${p.risk}`, true);
    tick();
  }

  function tick(): void {
    setText(timer, countdown(p.deadline, ctx.now()));
    const open = p.status === "pending" && Date.parse(p.deadline) > ctx.now();
    for (const b of buttons) setDisabled(b, busy || !open);
  }

  render();
  return {
    el,
    update(next) {
      p = next;
      render();
    },
    tick,
  };
}
