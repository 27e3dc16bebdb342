// What a following command writes for a person, item by item: event lines (event-format.ts), the
// model's text as it streams (live deltas, then the `message` event closes the line or corrects
// it), and Bash output line by line as `tool.output` events arrive. Pure: items in, text out; every
// string from the bus is made printable and styled here (terminal-text.ts).
import type { SessionEvent } from "../protocol/events.ts";
import { eventStyle, formatEvent } from "./event-format.ts";
import type { FeedItem, LiveDelta } from "../protocol/session-feed.ts";
import { type Paint, printable } from "./terminal-text.ts";

export interface PrinterOptions {
  paint: Paint;
  /** Prefix every line with the session it belongs to (`pihost watch` of every session). */
  sessionLabels: boolean;
}

/** The label of a session in a multi-session watch: its id, which ids keep short. */
export function sessionLabel(sessionId: string): string {
  return `[${sessionId}] `;
}

export function createHumanPrinter(opts: PrinterOptions) {
  const { paint } = opts;
  /** The assistant line being streamed, if any. */
  let open: { sessionId: string; turnId: string; text: string } | null = null;
  /** Per turn: characters of text deltas still to come that a `message` event already printed. */
  const skip = new Map<string, number>();
  /** Per tool call: the output line not yet ended by a newline. */
  const partial = new Map<string, { stream: "stdout" | "stderr"; text: string; sessionId: string }>();

  const label = (sessionId: string) => (opts.sessionLabels ? sessionLabel(sessionId) : "");
  const lines = (sessionId: string, ls: string[], style: ReturnType<typeof eventStyle> = null) =>
    ls.map((l, i) => `${label(sessionId)}${i === 0 ? paint(style, printable(l)) : printable(l)}\n`).join("");

  /** Ends a streamed line, so other output starts on a line of its own. */
  function close(): string {
    if (open === null) return "";
    open = null;
    return "\n";
  }

  function onDelta(d: LiveDelta): string {
    let text = d.chunks
      .filter((c) => c.kind === "text")
      .map((c) => c.text)
      .join("");
    const key = `${d.sessionId}/${d.turnId}`;
    const owed = skip.get(key) ?? 0;
    if (owed > 0) {
      // A late delta of text the message event already printed.
      const n = Math.min(owed, text.length);
      text = text.slice(n);
      if (owed - n > 0) skip.set(key, owed - n);
      else skip.delete(key);
    }
    if (text === "") return "";
    let head = "";
    if (open === null || open.sessionId !== d.sessionId || open.turnId !== d.turnId) {
      head = `${close()}${label(d.sessionId)}${paint("bold", "assistant:")} `;
      open = { sessionId: d.sessionId, turnId: d.turnId, text: "" };
    }
    open.text += text;
    // A newline inside streamed text starts the next line under the same label.
    return head + printable(text).replace(/\n/g, `\n${label(d.sessionId)}`);
  }

  function onMessage(e: SessionEvent<"message">): string {
    if (open !== null && open.sessionId === e.sessionId && open.turnId === e.turnId) {
      const streamed = open.text;
      open = null;
      if (e.text.startsWith(streamed)) {
        const rest = e.text.slice(streamed.length);
        if (rest.length > 0) skip.set(`${e.sessionId}/${e.turnId}`, rest.length);
        return `${printable(rest).replace(/\n/g, `\n${label(e.sessionId)}`)}\n`;
      }
      // Deltas were lost or differ: the record wins, in full.
      return `\n${lines(e.sessionId, formatEvent(e))}`;
    }
    return close() + lines(e.sessionId, formatEvent(e));
  }

  function onOutput(e: SessionEvent<"tool.output">): string {
    const prev = partial.get(e.toolCallId);
    let text = (prev && prev.stream === e.stream ? prev.text : "") + e.text;
    let written = close();
    if (prev && prev.stream !== e.stream) written += outputLine(prev.sessionId, prev.stream, prev.text);
    const cut = text.lastIndexOf("\n");
    if (cut >= 0) {
      for (const l of text.slice(0, cut).split("\n")) written += outputLine(e.sessionId, e.stream, l);
      text = text.slice(cut + 1);
    }
    if (text) partial.set(e.toolCallId, { stream: e.stream, text, sessionId: e.sessionId });
    else partial.delete(e.toolCallId);
    return written;
  }

  function outputLine(sessionId: string, stream: "stdout" | "stderr", text: string): string {
    return `${label(sessionId)}${paint("dim", stream === "stdout" ? "  | " : "  ! ")}${printable(text)}\n`;
  }

  /** What a call's output left without a final newline, before its result. */
  function endOutput(toolCallId: string): string {
    const p = partial.get(toolCallId);
    if (!p) return "";
    partial.delete(toolCallId);
    return outputLine(p.sessionId, p.stream, p.text);
  }

  return {
    /** The text to write for one item ("" for nothing). */
    item(item: FeedItem): string {
      if (item.type === "delta") return onDelta(item);
      if (item.type === "message") return onMessage(item as SessionEvent<"message">);
      if (item.type === "tool.output") return onOutput(item as SessionEvent<"tool.output">);
      const ls = formatEvent(item);
      // An event without a line of its own (machine.state) leaves a streamed line open.
      if (ls.length === 0) return "";
      let head = close();
      if (item.type === "tool.result") head += endOutput((item as SessionEvent<"tool.result">).toolCallId);
      return head + lines(item.sessionId, ls, eventStyle(item));
    },
    /** Lines of our own (notices, hints): the open streamed line is ended first. */
    note(ls: string[], style: Parameters<Paint>[0] = null): string {
      return close() + ls.map((l, i) => `${i === 0 ? paint(style, printable(l)) : printable(l)}\n`).join("");
    },
  };
}

export type HumanPrinter = ReturnType<typeof createHumanPrinter>;
