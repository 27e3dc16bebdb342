import { describe, expect, it } from "vitest";
import { ev } from "./test-fixtures.ts";
import { buildTranscript, MAX_TOOL_OUTPUT_CHARS } from "./transcript.ts";

describe("buildTranscript", () => {
  it("a turn: start, tool call with streamed output and its decision, message, end with code and reason", () => {
    const out = buildTranscript([
      ev("turn.started", 1, { turnId: "t1", kind: "prompt" }),
      ev("tool.called", 2, { turnId: "t1", toolCallId: "c1", tool: "bash", args: { command: "ls" } }),
      ev("tool.output", 3, {
        turnId: "t1",
        toolCallId: "c1",
        tool: "bash",
        stream: "stdout",
        chunk: 0,
        text: "a\n",
      }),
      ev("tool.output", 4, {
        turnId: "t1",
        toolCallId: "c1",
        tool: "bash",
        stream: "stdout",
        chunk: 1,
        text: "b\n",
      }),
      ev("tool.output", 5, {
        turnId: "t1",
        toolCallId: "c1",
        tool: "bash",
        stream: "stderr",
        chunk: 2,
        text: "oops",
      }),
      ev("tool.result", 6, {
        turnId: "t1",
        toolCallId: "c1",
        tool: "bash",
        decision: "deny",
        isError: true,
        code: "PERMISSION_DENIED",
        text: "denied",
      }),
      ev("message", 7, { turnId: "t1", role: "assistant", text: "<script>x</script>" }),
      ev("turn.ended", 8, { turnId: "t1", status: "failed", code: "MODEL_ERROR", reason: "quota" }),
    ]);
    expect(out.map((e) => e.kind)).toEqual(["turn", "tool", "message", "end"]);
    const tool = out[1] as Extract<(typeof out)[number], { kind: "tool" }>;
    expect(tool.output).toEqual([
      { stream: "stdout", text: "a\nb\n" },
      { stream: "stderr", text: "oops" },
    ]);
    expect(tool.result).toEqual({
      decision: "deny",
      isError: true,
      code: "PERMISSION_DENIED",
      text: "denied",
    });
    expect(out[2]).toMatchObject({ text: "<script>x</script>" });
    expect(out[3]).toMatchObject({ status: "failed", code: "MODEL_ERROR", reason: "quota" });
  });

  it("live text of a turn without its message comes last; tool output is bounded", () => {
    const big = "x".repeat(MAX_TOOL_OUTPUT_CHARS + 10);
    const out = buildTranscript(
      [
        ev("tool.output", 1, {
          turnId: "t1",
          toolCallId: "c9",
          tool: "bash",
          stream: "stdout",
          chunk: 0,
          text: big,
        }),
      ],
      { t1: { text: "typing", thinking: "", dropped: 0 } },
    );
    expect(out.map((e) => e.kind)).toEqual(["tool", "live"]);
    const tool = out[0] as Extract<(typeof out)[number], { kind: "tool" }>;
    expect(tool.output[0]!.text.length).toBe(MAX_TOOL_OUTPUT_CHARS);
    expect(tool.outputCut).toBe(10);
  });
});
