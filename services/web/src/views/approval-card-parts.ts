// The approval card's elements, built once per card in the order they appear; approval-card.ts
// fills them from the proposal and the plan file it read, and wires their buttons.
import { h, uid } from "../dom.ts";

const MODES = [
  { value: "ask", label: "Ask", help: "every edit and every Bash call waits for a person" },
  { value: "accept-edits", label: "Accept edits", help: "edits run; every Bash call waits for a person" },
  { value: "auto", label: "Auto", help: "edits and Bash run without asking" },
] as const;

/** One permission mode's radio and its labelled row. */
export interface ModeRadio {
  input: HTMLInputElement;
  row: HTMLElement;
}

export interface ApprovalCardParts {
  el: HTMLElement;
  kind: HTMLElement;
  title: HTMLElement;
  question: HTMLElement;
  terminalLine: HTMLElement;
  mismatch: HTMLElement;
  flagsBox: HTMLElement;
  loadButton: HTMLButtonElement;
  body: HTMLElement;
  rawView: HTMLElement;
  rawToggle: HTMLButtonElement;
  reread: HTMLButtonElement;
  hashes: HTMLElement;
  expiry: HTMLElement;
  expiryTime: HTMLElement;
  expiryLocal: HTMLElement;
  timer: HTMLElement;
  modes: HTMLElement;
  radios: ModeRadio[];
  actions: HTMLElement;
  approve: HTMLButtonElement;
  reject: HTMLButtonElement;
  status: HTMLElement;
}

export function approvalCardParts(): ApprovalCardParts {
  const titleId = uid("plan-title");
  const kind = h("p", { class: "card-kind" });
  const title = h("h3", { id: titleId, class: "card-title" });
  const question = h("p", { class: "card-question" });
  const mismatch = h("div", { class: "mismatch", role: "alert", hidden: true });
  const flagsBox = h("div", { class: "plan-flags", hidden: true });
  const body = h("div", { class: "plan-body", "aria-label": "Plan" });
  const rawView = h("pre", { class: "plan-raw", hidden: true, "aria-label": "Plan Markdown as written" });
  const rawToggle = h("button", { type: "button", "aria-pressed": "false" }, "Show raw Markdown");
  const loadButton = h("button", { type: "button", hidden: true }, "Show the plan");
  const reread = h("button", { type: "button", hidden: true }, "Read the plan file again");
  const hashes = h("dl", { class: "hashes" });
  const details = h("details", { class: "plan-details" }, h("summary", {}, "SHA-256 and size"), hashes);
  const expiryTime = h("time", {});
  const expiryLocal = h("span", {});
  const timer = h("span", { class: "countdown", role: "timer", "aria-live": "off" });
  const expiry = h("p", { class: "expiry" }, "Expires ", expiryTime, " (", expiryLocal, ") — ", timer);
  const { modes, radios } = modeChoices();
  const approve = h("button", { type: "button", class: "approve" }, "Approve");
  const reject = h("button", { type: "button", class: "reject" }, "Reject");
  const status = h("p", { class: "card-status", role: "status" });
  const actions = h("div", { class: "card-actions" }, approve, reject);
  const terminalLine = h("p", { class: "terminal-line" });

  const el = h(
    "article",
    { class: "approval-card", "aria-labelledby": titleId },
    kind,
    title,
    question,
    terminalLine,
    mismatch,
    flagsBox,
    loadButton,
    body,
    rawView,
    rawToggle,
    reread,
    details,
    expiry,
    modes,
    actions,
    status,
  );
  return {
    el,
    kind,
    title,
    question,
    terminalLine,
    mismatch,
    flagsBox,
    loadButton,
    body,
    rawView,
    rawToggle,
    reread,
    hashes,
    expiry,
    expiryTime,
    expiryLocal,
    timer,
    modes,
    radios,
    actions,
    approve,
    reject,
    status,
  };
}

/** The permission modes for the execution, Ask preselected; Auto shows its warning. */
function modeChoices(): { modes: HTMLElement; radios: ModeRadio[] } {
  const modeName = uid("approve-mode");
  const autoWarning = h(
    "p",
    { class: "auto-warning", hidden: true, id: uid("auto-warning") },
    "Warning: under Auto, Bash runs without asking and may change any file in the workspace.",
  );
  const radios: ModeRadio[] = MODES.map((m) => {
    const id = uid("mode");
    const input = h("input", {
      type: "radio",
      name: modeName,
      id,
      value: m.value,
      ...(m.value === "ask" ? { checked: true } : {}),
    });
    input.addEventListener("change", () => {
      autoWarning.hidden = selectedMode(radios) !== "auto";
    });
    return {
      input,
      row: h("div", { class: "radio-row" }, input, h("label", { for: id }, `${m.label}: ${m.help}`)),
    };
  });
  const modes = h(
    "fieldset",
    { class: "approve-modes" },
    h("legend", {}, "Permission mode for the execution"),
    ...radios.map((r) => r.row),
    autoWarning,
  );
  return { modes, radios };
}

/** The permission mode picked for the execution (Ask until another is). */
export function selectedMode(radios: readonly ModeRadio[]): string {
  return radios.find((r) => r.input.checked)?.input.value ?? "ask";
}
