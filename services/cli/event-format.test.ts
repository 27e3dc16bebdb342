import { describe, expect, it } from "vitest";
import { approvalHintLines, formatEvent } from "./event-format.ts";
import { ev, proposalView } from "./test-events.ts";

describe("formatEvent", () => {
  it("formats turn boundaries", () => {
    expect(formatEvent(ev("turn.started", { turnId: "t1", kind: "prompt" }))).toEqual([
      "turn started: t1 (prompt)",
    ]);
    expect(formatEvent(ev("turn.ended", { turnId: "t1", status: "completed" }))).toEqual([
      "turn ended: t1 completed",
    ]);
    expect(formatEvent(ev("turn.ended", { turnId: "t1", status: "aborted", code: "TURN_ABORTED" }))).toEqual([
      "turn ended: t1 aborted (TURN_ABORTED)",
    ]);
    // A provider's failure: its code and its own message, as the person needs them.
    expect(
      formatEvent(
        ev("turn.ended", {
          turnId: "t1",
          status: "error",
          code: "PROVIDER_UNAUTHORIZED",
          reason: "401 Incorrect API key provided: sk-bad.",
        }),
      ),
    ).toEqual(["turn ended: t1 error (PROVIDER_UNAUTHORIZED): 401 Incorrect API key provided: sk-bad."]);
  });

  it("a permission prompt says what, how risky, until when, and how to answer", () => {
    expect(
      formatEvent(
        ev("permission.requested", {
          requestId: "perm_1",
          turnId: "t1",
          toolCallId: "c1",
          tool: "Bash",
          risk: "high",
          preview: { command: "rm -rf build" },
          deadline: "2026-12-01T16:00:00.000Z",
        }),
      ),
    ).toEqual([
      'permission needed: Bash (high) {"command":"rm -rf build"} until 2026-12-01T16:00:00.000Z',
      "  answer: pihost permissions allow perm_1   (or allow-session, deny)",
    ]);
    expect(
      formatEvent(
        ev("permission.resolved", {
          requestId: "perm_1",
          turnId: "t1",
          toolCallId: "c1",
          tool: "Bash",
          decision: "deny",
          code: "PERMISSION_TIMEOUT",
        }),
      ),
    ).toEqual(["permission deny: Bash (PERMISSION_TIMEOUT)"]);
  });

  it("formats assistant text", () => {
    expect(formatEvent(ev("message", { turnId: "t1", role: "assistant", text: "Hello" }))).toEqual([
      "assistant: Hello",
    ]);
  });

  it("formats tool calls with clipped arguments", () => {
    expect(
      formatEvent(
        ev("tool.called", { turnId: "t1", toolCallId: "c1", tool: "Read", args: { path: "README.md" } }),
      ),
    ).toEqual(['tool call: Read {"path":"README.md"}']);
    const [line] = formatEvent(
      ev("tool.called", {
        turnId: "t1",
        toolCallId: "c1",
        tool: "Write",
        args: { content: "x".repeat(500) },
      }),
    );
    expect(line?.length).toBeLessThan(230);
    expect(line?.endsWith("...")).toBe(true);
  });

  it("formats tool results with their decision and code", () => {
    const base = { turnId: "t1", toolCallId: "c1" };
    expect(
      formatEvent(
        ev("tool.result", {
          ...base,
          tool: "Read",
          decision: "allow",
          isError: false,
          text: "line 1\nline 2",
        }),
      ),
    ).toEqual(["tool result: Read allow: line 1 line 2"]);
    expect(
      formatEvent(
        ev("tool.result", {
          ...base,
          tool: "Write",
          decision: "deny",
          isError: true,
          code: "WRITE_DISABLED_IN_PLAN",
          text: "Write is denied in Plan mode.",
        }),
      ),
    ).toEqual(["tool result: Write deny WRITE_DISABLED_IN_PLAN: Write is denied in Plan mode."]);
    expect(
      formatEvent(
        ev("tool.result", {
          ...base,
          tool: "Edit",
          decision: "allow",
          isError: true,
          code: "EDIT_NO_MATCH",
          text: "",
        }),
      ),
    ).toEqual(["tool result: Edit allow, failed EDIT_NO_MATCH"]);
  });

  it("formats a submitted plan with its id and file", () => {
    const lines = formatEvent(
      ev("plan.changed", { state: "awaiting_approval", action: "submitted", proposal: proposalView() }),
    );
    expect(lines[0]).toBe('plan submitted: p1 "Add a greeting"');
    expect(lines[1]).toContain(".pi/plan/add-a-greeting-20250101T000000Z.md");
    expect(lines[2]).toBe("  question: Shall I write GREETING.md?");
  });

  it("formats approval, rejection and execution progress", () => {
    expect(
      formatEvent(
        ev("plan.changed", {
          state: "inactive",
          action: "approved",
          targetPermissionMode: "accept-edits",
          proposal: proposalView({ status: "approved" }),
          execution: { executionId: "x1", state: "queued" },
        }),
      ),
    ).toEqual(["plan approved: p1 (permission mode accept-edits); execution x1 queued"]);
    expect(
      formatEvent(ev("plan.changed", { state: "planning", action: "rejected", proposal: proposalView() })),
    ).toEqual(["plan rejected: p1; the session stays in Plan"]);
    expect(
      formatEvent(
        ev("plan.changed", {
          state: "inactive",
          proposal: proposalView({ errorCode: "PLAN_ARTIFACT_HASH_MISMATCH" }),
          execution: { executionId: "x1", state: "interrupted" },
        }),
      ),
    ).toEqual(["execution x1 interrupted (PLAN_ARTIFACT_HASH_MISMATCH)"]);
  });

  it("formats session changes", () => {
    expect(
      formatEvent(
        ev("session.changed", { mode: "plan", permissionMode: "ask", planningState: "planning", version: 2 }),
      ),
    ).toEqual(["session: mode plan, permissions ask, planning planning"]);
  });
});

describe("approvalHintLines", () => {
  it("spells the exact commands with the proposal id and lists the modes without choosing one", () => {
    const lines = approvalHintLines(proposalView());
    expect(lines).toContain("  read:    pihost plans show p1");
    expect(lines).toContain(
      "  approve: pihost plans approve p1 --mode MODE   (MODE: ask, accept-edits, auto)",
    );
    expect(lines).toContain("  reject:  pihost plans reject p1");
    expect(lines.join("\n")).toContain(".pi/plan/add-a-greeting-20250101T000000Z.md");
  });
});
