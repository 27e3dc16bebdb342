// The session view's elements, built once per view in the order they appear; session-view.ts fills
// them from the stores and wires their controls.
import { h, uid } from "../dom.ts";
import { createEventHistory } from "./event-history.ts";
import { createTranscriptView } from "./transcript-view.ts";

export const PLAN_COPY =
  "Plan is planning intent: Bash still runs under the permission mode and may change files under Auto";

/** One operating mode's radio and its labelled row. */
export interface ModeRadio {
  mode: "agent" | "plan";
  input: HTMLInputElement;
  row: HTMLElement;
}

export interface SessionViewParts {
  el: HTMLElement;
  title: HTMLElement;
  facts: HTMLElement;
  modeRadios: ModeRadio[];
  modeApply: HTMLButtonElement;
  modeNote: HTMLElement;
  promptText: HTMLTextAreaElement;
  promptSend: HTMLButtonElement;
  promptNote: HTMLElement;
  abort: HTMLButtonElement;
  approvalsPending: HTMLElement;
  approvalsHistory: HTMLElement;
  historyBox: HTMLElement;
  prompts: HTMLElement;
  diagram: HTMLElement;
  diagramNote: HTMLElement;
  history: ReturnType<typeof createEventHistory>;
  transcript: ReturnType<typeof createTranscriptView>;
}

export function sessionViewParts(): SessionViewParts {
  const titleId = uid("session-title");
  const title = h("h2", { id: titleId, tabindex: "-1" });
  const facts = h("dl", { class: "facts" });
  const mode = modeSelector();
  const prompt = promptBox();
  const controls = h(
    "section",
    { class: "session-controls", "aria-label": "Session controls" },
    mode.modeSet,
    prompt.box,
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
  const { modeRadios, modeApply, modeNote } = mode;
  const { promptText, promptSend, promptNote, abort } = prompt;
  return {
    el,
    title,
    facts,
    modeRadios,
    modeApply,
    modeNote,
    promptText,
    promptSend,
    promptNote,
    abort,
    approvalsPending,
    approvalsHistory,
    historyBox,
    prompts,
    diagram,
    diagramNote,
    history,
    transcript,
  };
}

/** The mode selector: Agent or Plan, and the button that switches to the one chosen. */
function modeSelector() {
  const modeName = uid("mode");
  const modeRadios: ModeRadio[] = (["agent", "plan"] as const).map((m) => {
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
  return { modeSet, modeRadios, modeApply, modeNote };
}

/** Prompt and abort. */
function promptBox() {
  const promptId = uid("prompt");
  const promptText = h("textarea", { id: promptId, rows: "3", class: "prompt-text" });
  const promptSend = h("button", { type: "button" }, "Send prompt");
  const promptNote = h("p", { class: "muted" });
  const abort = h("button", { type: "button", class: "abort" }, "Abort");
  const box = h(
    "div",
    { class: "prompt-box" },
    h("label", { for: promptId }, "Prompt"),
    promptText,
    h("div", { class: "card-actions" }, promptSend, abort),
    promptNote,
  );
  return { box, promptText, promptSend, promptNote, abort };
}
