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

/** What a printer remembers between items. */
interface PrinterState {
  opts: PrinterOptions;
  /** The assistant line being streamed, if any. */
  open: { sessionId: string; turnId: string; text: string } | null;
  /** Per turn: characters of text deltas still to come that a `message` event already printed. */
  skip: Map<string, number>;
  /** Per tool call: the output line not yet ended by a newline. */
  partial: Map<string, { stream: "stdout" | "stderr"; text: string; sessionId: string }>;
}

export function createHumanPrinter(opts: PrinterOptions) {
  const p: PrinterState = { opts, open: null, skip: new Map(), partial: new Map() };
  return {
    /** The text to write for one item ("" for nothing). */
    item(item: FeedItem): string {
      return printItem(p, item);
    },
    /** Lines of our own (notices, hints): the open streamed line is ended first. */
    note(ls: string[], style: Parameters<Paint>[0] = null): string {
      return (
        close(p) + ls.map((l, i) => `${i === 0 ? opts.paint(style, printable(l)) : printable(l)}\n`).join("")
      );
    },
  };
}

function label(p: PrinterState, sessionId: string): string {
  return p.opts.sessionLabels ? sessionLabel(sessionId) : "";
}

function lines(
  p: PrinterState,
  sessionId: string,
  ls: string[],
  style: ReturnType<typeof eventStyle> = null,
): string {
  return ls
    .map((l, i) => `${label(p, sessionId)}${i === 0 ? p.opts.paint(style, printable(l)) : printable(l)}\n`)
    .join("");
}

/** Ends a streamed line, so other output starts on a line of its own. */
function close(p: PrinterState): string {
  if (p.open === null) return "";
  p.open = null;
  return "\n";
}

function printItem(p: PrinterState, item: FeedItem): string {
  if (item.type === "delta") return onDelta(p, item);
  if (item.type === "message") return onMessage(p, item);
  if (item.type === "tool.output") return onOutput(p, item);
  const ls = formatEvent(item);
  // An event without a line of its own (machine.state) leaves a streamed line open.
  if (ls.length === 0) return "";
  let head = close(p);
  if (item.type === "tool.result") head += endOutput(p, item.toolCallId);
  return head + lines(p, item.sessionId, ls, eventStyle(item));
}

function onDelta(p: PrinterState, d: LiveDelta): string {
  let text = d.chunks
    .filter((c) => c.kind === "text")
    .map((c) => c.text)
    .join("");
  const key = `${d.sessionId}/${d.turnId}`;
  const owed = p.skip.get(key) ?? 0;
  if (owed > 0) {
    // A late delta of text the message event already printed.
    const n = Math.min(owed, text.length);
    text = text.slice(n);
    if (owed - n > 0) p.skip.set(key, owed - n);
    else p.skip.delete(key);
  }
  if (text === "") return "";
  let head = "";
  if (p.open === null || p.open.sessionId !== d.sessionId || p.open.turnId !== d.turnId) {
    head = `${close(p)}${label(p, d.sessionId)}${p.opts.paint("bold", "assistant:")} `;
    p.open = { sessionId: d.sessionId, turnId: d.turnId, text: "" };
  }
  p.open.text += text;
  // A newline inside streamed text starts the next line under the same label.
  return head + printable(text).replace(/\n/g, `\n${label(p, d.sessionId)}`);
}

function onMessage(p: PrinterState, e: SessionEvent<"message">): string {
  const open = p.open;
  if (open !== null && open.sessionId === e.sessionId && open.turnId === e.turnId) {
    const streamed = open.text;
    p.open = null;
    if (e.text.startsWith(streamed)) {
      const rest = e.text.slice(streamed.length);
      if (rest.length > 0) p.skip.set(`${e.sessionId}/${e.turnId}`, rest.length);
      return `${printable(rest).replace(/\n/g, `\n${label(p, e.sessionId)}`)}\n`;
    }
    // Deltas were lost or differ: the record wins, in full.
    return `\n${lines(p, e.sessionId, formatEvent(e))}`;
  }
  return close(p) + lines(p, e.sessionId, formatEvent(e));
}

function onOutput(p: PrinterState, e: SessionEvent<"tool.output">): string {
  const prev = p.partial.get(e.toolCallId);
  let text = (prev && prev.stream === e.stream ? prev.text : "") + e.text;
  let written = close(p);
  if (prev && prev.stream !== e.stream) written += outputLine(p, prev.sessionId, prev.stream, prev.text);
  const cut = text.lastIndexOf("\n");
  if (cut >= 0) {
    for (const l of text.slice(0, cut).split("\n")) written += outputLine(p, e.sessionId, e.stream, l);
    text = text.slice(cut + 1);
  }
  if (text) p.partial.set(e.toolCallId, { stream: e.stream, text, sessionId: e.sessionId });
  else p.partial.delete(e.toolCallId);
  return written;
}

function outputLine(p: PrinterState, sessionId: string, stream: "stdout" | "stderr", text: string): string {
  return `${label(p, sessionId)}${p.opts.paint("dim", stream === "stdout" ? "  | " : "  ! ")}${printable(text)}\n`;
}

/** What a call's output left without a final newline, before its result. */
function endOutput(p: PrinterState, toolCallId: string): string {
  const part = p.partial.get(toolCallId);
  if (!part) return "";
  p.partial.delete(toolCallId);
  return outputLine(p, part.sessionId, part.stream, part.text);
}

export type HumanPrinter = ReturnType<typeof createHumanPrinter>;
