// A session's transcript from its events (pure): turns, assistant messages, tool calls with their
// decision, code and streamed output, permission answers and turn ends; then the live text of turns
// whose `message` has not arrived yet. Every string stays data: the views render it as text.
import type { SessionEvent } from "../../protocol/events.ts";
import type { LiveText } from "./stores.ts";

/** Output characters kept per tool call; the rest is counted, not shown. */
export const MAX_TOOL_OUTPUT_CHARS = 64 * 1024;

export interface ToolEntry {
  kind: "tool";
  key: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  output: Array<{ stream: "stdout" | "stderr"; text: string }>;
  /** Output characters beyond MAX_TOOL_OUTPUT_CHARS, not kept. */
  outputCut: number;
  result: { decision: "allow" | "deny"; isError: boolean; code: string | null; text: string } | null;
}

export type TranscriptEntry =
  | { kind: "turn"; key: string; turnId: string; turnKind: string; at: string }
  | { kind: "message"; key: string; turnId: string; text: string; at: string }
  | ToolEntry
  | { kind: "permission"; key: string; turnId: string; tool: string; decision: string; code: string | null }
  | { kind: "plan"; key: string; text: string }
  | { kind: "end"; key: string; turnId: string; status: string; code: string | null; reason: string | null }
  | { kind: "live"; key: string; turnId: string; text: string; thinking: string; dropped: number };

/** The transcript built so far, and its tool entries by call id. */
interface TranscriptBuild {
  out: TranscriptEntry[];
  tools: Map<string, ToolEntry>;
}

export function buildTranscript(
  events: readonly SessionEvent[],
  live: Readonly<Record<string, LiveText>> = {},
): TranscriptEntry[] {
  const b: TranscriptBuild = { out: [], tools: new Map() };
  for (const e of events) addEvent(b, e);
  for (const [turnId, l] of Object.entries(live)) {
    if (l.text || l.thinking)
      b.out.push({
        kind: "live",
        key: `live-${turnId}`,
        turnId,
        text: l.text,
        thinking: l.thinking,
        dropped: l.dropped,
      });
  }
  return b.out;
}

function addEvent(b: TranscriptBuild, e: SessionEvent): void {
  const { out } = b;
  const key = `e${e.seq}`;
  switch (e.type) {
    case "turn.started": {
      const t = e;
      out.push({ kind: "turn", key, turnId: t.turnId, turnKind: t.kind, at: t.at });
      break;
    }
    case "message": {
      const m = e;
      out.push({ kind: "message", key, turnId: m.turnId, text: m.text, at: m.at });
      break;
    }
    case "tool.called":
      addToolCall(b, e, key);
      break;
    case "tool.output":
      addToolOutput(b, e, key);
      break;
    case "tool.result": {
      const r = e;
      const entry = toolFor(b, r.toolCallId, r.turnId, r.tool, key);
      entry.result = { decision: r.decision, isError: r.isError, code: r.code ?? null, text: r.text };
      break;
    }
    case "permission.resolved": {
      const p = e;
      out.push({
        kind: "permission",
        key,
        turnId: p.turnId,
        tool: p.tool,
        decision: p.decision,
        code: p.code ?? null,
      });
      break;
    }
    case "plan.changed": {
      const p = e;
      if (p.action && p.proposal)
        out.push({ kind: "plan", key, text: `plan ${p.action}: ${p.proposal.title}` });
      else if (p.execution) out.push({ kind: "plan", key, text: `execution ${p.execution.state}` });
      break;
    }
    case "turn.ended": {
      const t = e;
      out.push({
        kind: "end",
        key,
        turnId: t.turnId,
        status: t.status,
        code: t.code ?? null,
        reason: t.reason ?? null,
      });
      break;
    }
    default:
      break;
  }
}

function addToolCall(b: TranscriptBuild, c: SessionEvent<"tool.called">, key: string): void {
  const entry: ToolEntry = {
    kind: "tool",
    key,
    turnId: c.turnId,
    toolCallId: c.toolCallId,
    tool: c.tool,
    args: c.args ?? {},
    output: [],
    outputCut: 0,
    result: null,
  };
  b.tools.set(c.toolCallId, entry);
  b.out.push(entry);
}

function addToolOutput(b: TranscriptBuild, o: SessionEvent<"tool.output">, key: string): void {
  const entry = toolFor(b, o.toolCallId, o.turnId, o.tool, key);
  const kept = entry.output.reduce((n, c) => n + c.text.length, 0);
  const room = Math.max(0, MAX_TOOL_OUTPUT_CHARS - kept);
  const text = o.text.slice(0, room);
  entry.outputCut += o.text.length - text.length;
  if (text) {
    const last = entry.output[entry.output.length - 1];
    if (last && last.stream === o.stream) last.text += text;
    else entry.output.push({ stream: o.stream, text });
  }
}

// Output or a result whose tool.called was not kept (trimmed history): an entry of its own.
function toolFor(
  b: TranscriptBuild,
  toolCallId: string,
  turnId: string,
  tool: string,
  key: string,
): ToolEntry {
  let entry = b.tools.get(toolCallId);
  if (!entry) {
    entry = {
      kind: "tool",
      key,
      turnId,
      toolCallId,
      tool,
      args: {},
      output: [],
      outputCut: 0,
      result: null,
    };
    b.tools.set(toolCallId, entry);
    b.out.push(entry);
  }
  return entry;
}
