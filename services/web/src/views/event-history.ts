// The session's event history beside its machine: one line per event (seq, time, type, the gist),
// newest last, as text.
import type { SessionEvent } from "../../../protocol/events.ts";
import { h, replace } from "../dom.ts";
import { reconcile } from "./reconcile.ts";

/** Lines shown at most (the newest). */
const SHOWN = 400;

export function eventGist(e: SessionEvent): string {
  const b = e as unknown as Record<string, unknown>;
  const s = (v: unknown) => (typeof v === "string" ? v : "");
  switch (e.type as string) {
    case "machine.state":
      return s(b.state);
    case "session.changed":
      return `${s(b.mode)} · ${s(b.permissionMode)} · ${s(b.planningState)}`;
    case "turn.started":
      return `${s(b.turnId)} (${s(b.kind)})`;
    case "turn.claimed":
      return `${s(b.turnId)} by ${s(b.workerId)}`;
    case "turn.ended":
      return `${s(b.turnId)} ${s(b.status)}${b.code ? ` ${s(b.code)}` : ""}`;
    case "tool.called":
    case "tool.output":
      return `${s(b.tool)} ${s(b.toolCallId)}`;
    case "tool.result":
      return `${s(b.tool)} ${s(b.decision)}${b.code ? ` ${s(b.code)}` : ""}`;
    case "plan.changed":
      return [s(b.state), s(b.action), s(b.status)].filter(Boolean).join(" · ");
    case "permission.requested":
      return `${s(b.tool)} (${s(b.risk)})`;
    case "permission.resolved":
      return `${s(b.tool)} ${s(b.decision)}`;
    case "approvers.added":
      return `${Array.isArray(b.approvers) ? b.approvers.map(s).join(", ") : ""} by ${s(b.addedBy)}`;
    default:
      return "";
  }
}

export function createEventHistory() {
  const list = h("ol", { class: "event-list" });
  const el = h(
    "section",
    { class: "event-history", "aria-label": "Event history" },
    h("h3", {}, "Events"),
    list,
  );
  return {
    el,
    render(events: readonly SessionEvent[]): void {
      const shown = events.slice(-SHOWN);
      const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
      reconcile(
        list,
        shown,
        (e) => String(e.seq),
        (e) => {
          const li = h("li", { class: `ev ev-${e.type.replace(/\./g, "-")}` });
          replace(
            li,
            h("span", { class: "ev-seq" }, `#${e.seq}`),
            " ",
            h("time", { datetime: e.at }, e.at.slice(11, 19)),
            " ",
            h("span", { class: "ev-type" }, e.type),
            " ",
            h("span", { class: "ev-gist" }, eventGist(e)),
          );
          return li;
        },
        () => {},
      );
      if (atBottom) el.scrollTop = el.scrollHeight;
    },
  };
}
