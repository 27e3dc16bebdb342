import { describe, expect, it } from "vitest";
import type { SessionEvent } from "../protocol/events.ts";
import { createHumanPrinter } from "./human-printer.ts";
import type { LiveDelta } from "../protocol/session-feed.ts";
import { painter } from "./terminal-text.ts";
import { ev } from "./test-events.ts";

const delta = (text: string, turnId = "t1", sessionId = "s1"): LiveDelta => ({
  type: "delta",
  sessionId,
  turnId,
  chunks: [{ kind: "text", text }],
});
const msg = (text: string, turnId = "t1") => ev("message", { turnId, role: "assistant", text });
const output = (text: string, stream: "stdout" | "stderr" = "stdout", chunk = 0) =>
  ev("tool.output", { turnId: "t1", toolCallId: "c1", tool: "Bash", stream, chunk, text });

function print(items: Array<LiveDelta | SessionEvent>, sessionLabels = false): string {
  const p = createHumanPrinter({ paint: painter(false), sessionLabels });
  return items.map((i) => p.item(i)).join("");
}

describe("the human printer", () => {
  it("streams text as it arrives; the message event then only ends the line", () => {
    expect(print([delta("Hel"), delta("lo"), msg("Hello")])).toBe("assistant: Hello\n");
  });

  it("prints what the deltas missed, and skips it when the late delta comes", () => {
    expect(print([delta("Hel"), msg("Hello world"), delta("lo world"), delta("Next")])).toBe(
      "assistant: Hello world\nassistant: Next",
    );
  });

  it("prints the record in full when the deltas do not match it", () => {
    expect(print([delta("Hi"), msg("Hello")])).toBe("assistant: Hi\nassistant: Hello\n");
  });

  it("a message with no deltas is one line; thinking is not printed", () => {
    const thinking: LiveDelta = { ...delta(""), chunks: [{ kind: "thinking", text: "hmm" }] };
    expect(print([thinking, msg("Done.")])).toBe("assistant: Done.\n");
  });

  it("ends a streamed line before any other event", () => {
    expect(
      print([
        delta("Looking"),
        ev("tool.called", { turnId: "t1", toolCallId: "c1", tool: "Glob", args: {} }),
      ]),
    ).toBe("assistant: Looking\ntool call: Glob {}\n");
  });

  it("Bash output line by line as it streams, the rest before the result", () => {
    const result = ev("tool.result", {
      turnId: "t1",
      toolCallId: "c1",
      tool: "Bash",
      decision: "allow",
      isError: false,
      text: "",
    });
    expect(
      print([
        output("one\ntw"),
        output("o\nthr", "stdout", 1),
        output("oops\n", "stderr", 2),
        output("ee", "stdout", 3),
        result,
      ]),
    ).toBe("  | one\n  | two\n  | thr\n  ! oops\n  | ee\ntool result: Bash allow\n");
  });

  it("control characters from the bus are shown, never obeyed", () => {
    const out = print([delta("\u001b[2Jgone"), msg("\u001b[2Jgone"), output("\u001b]0;title\u0007\n")]);
    expect(out).not.toContain("\u001b");
    expect(out).toContain("\\u{1b}[2Jgone");
  });

  it("a watch of every session labels each line with its session", () => {
    expect(
      print([delta("a\nb", "t1", "s1"), ev("turn.started", { turnId: "t9", kind: "prompt" })], true),
    ).toBe("[s1] assistant: a\n[s1] b\n[s1] turn started: t9 (prompt)\n");
  });
});
