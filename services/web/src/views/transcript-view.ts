// The transcript (issue #15 clause 5): streamed text as it arrives, then the `message`; tool calls
// with their decision and code; Bash output as it streams; turn ends with status, code and reason.
// Everything is text.
import type { SessionEvent } from "../../../protocol/events.ts";
import { h, replace } from "../dom.ts";
import type { LiveText } from "../stores.ts";
import { buildTranscript, type TranscriptEntry } from "../transcript.ts";
import { reconcile } from "./reconcile.ts";

function argsText(args: Record<string, unknown>): string {
  const command = args.command;
  if (typeof command === "string") return command;
  const path = args.path ?? args.file_path;
  if (typeof path === "string") return path;
  try {
    return JSON.stringify(args);
  } catch {
    return "";
  }
}

function create(e: TranscriptEntry): HTMLElement {
  return h("li", { class: `t-${e.kind}` });
}

function update(el: HTMLElement, e: TranscriptEntry): void {
  // Entries whose text never changes are filled once.
  if (el.dataset.filled === "1" && e.kind !== "tool" && e.kind !== "live") return;
  el.dataset.filled = "1";
  switch (e.kind) {
    case "turn":
      replace(el, h("span", { class: "t-label" }, `turn ${e.turnId} started (${e.turnKind})`));
      return;
    case "message":
      replace(el, h("span", { class: "t-label" }, "assistant"), h("p", { class: "t-text" }, e.text));
      return;
    case "plan":
      replace(el, h("span", { class: "t-label" }, e.text));
      return;
    case "permission":
      replace(
        el,
        h(
          "span",
          { class: "t-label" },
          `permission for ${e.tool}: ${e.decision}${e.code ? ` (${e.code})` : ""}`,
        ),
      );
      return;
    case "end":
      replace(
        el,
        h(
          "span",
          { class: `t-label end-${e.status}` },
          `turn ${e.turnId} ended: ${e.status}${e.code ? ` ${e.code}` : ""}${e.reason ? ` — ${e.reason}` : ""}`,
        ),
      );
      return;
    case "live": {
      const parts = [h("span", { class: "t-label" }, "assistant (streaming)")];
      if (e.thinking) parts.push(h("p", { class: "t-thinking" }, e.thinking));
      parts.push(h("p", { class: "t-text" }, e.text));
      if (e.dropped > 0)
        parts.push(
          h("p", { class: "muted" }, `${e.dropped} chunks dropped on the way; the full message follows`),
        );
      replace(el, ...parts);
      return;
    }
    case "tool": {
      const r = e.result;
      const verdict = r
        ? `${r.decision === "allow" ? "allowed" : "denied"}${r.isError ? ", error" : ""}${r.code ? ` ${r.code}` : ""}`
        : "running";
      const out = e.output.map((o) => h("span", { class: `out-${o.stream}` }, o.text));
      replace(
        el,
        h("span", { class: "t-label" }, `tool ${e.tool}: ${verdict}`),
        h("code", { class: "t-args" }, argsText(e.args)),
        out.length > 0 ? h("pre", { class: "t-output", "aria-label": `${e.tool} output` }, ...out) : null,
        e.outputCut > 0
          ? h("p", { class: "muted" }, `${e.outputCut} more characters of output not shown`)
          : null,
        // The result repeats streamed output: shown only when it says something else.
        r?.text &&
          r.text.trim() !==
            e.output
              .map((o) => o.text)
              .join("")
              .trim()
          ? h("pre", { class: "t-result", "aria-label": `${e.tool} result` }, r.text)
          : null,
      );
      return;
    }
  }
}

export function createTranscriptView() {
  const list = h("ol", { class: "transcript-list" });
  const empty = h("p", { class: "muted" }, "Nothing yet.");
  const el = h(
    "section",
    { class: "transcript", "aria-label": "Transcript" },
    h("h3", {}, "Transcript"),
    empty,
    list,
  );
  return {
    el,
    render(events: readonly SessionEvent[], live: Readonly<Record<string, LiveText>>): void {
      const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
      reconcile(list, buildTranscript(events, live), (e) => e.key, create, update);
      if (atBottom) el.scrollTop = el.scrollHeight;
      empty.hidden = list.childElementCount > 0;
    },
  };
}
