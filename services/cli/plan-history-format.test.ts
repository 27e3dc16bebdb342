import { describe, expect, it } from "vitest";
import { approvalHintLines } from "./event-format.ts";
import {
  formatPlanBlock,
  formatPlanHistory,
  planCodeMeaning,
  planStatusText,
} from "./plan-history-format.ts";
import { proposalView } from "./test-events.ts";

const RESOLVED = "2025-01-01T00:10:00.000Z";

describe("planStatusText", () => {
  it("says an interrupted plan was interrupted, why, and what to do", () => {
    expect(
      planStatusText(
        proposalView({ status: "interrupted", errorCode: "PLAN_APPROVAL_INTERRUPTED", resolvedAt: RESOLVED }),
      ),
    ).toBe(
      "interrupted (PLAN_APPROVAL_INTERRUPTED): the host restarted (or the session was aborted) while the plan waited for approval; nothing was approved; submit the plan again",
    );
    // Without a code it still says interrupted, and invents none.
    expect(planStatusText(proposalView({ status: "interrupted" }))).toBe(
      "interrupted: the wait for approval ended without an answer; submit the plan again",
    );
  });

  it("says an expired plan expired, with its deadline", () => {
    expect(planStatusText(proposalView({ status: "expired", errorCode: "PLAN_APPROVAL_TIMEOUT" }))).toBe(
      "expired (PLAN_APPROVAL_TIMEOUT): the approval deadline 2025-01-01T00:30:00.000Z passed; nothing was approved; submit the plan again",
    );
  });

  it("an approved plan names its mode and how its execution went", () => {
    const approved = (over: Parameters<typeof proposalView>[0]) =>
      planStatusText(
        proposalView({
          status: "approved",
          action: "approve",
          targetPermissionMode: "accept-edits",
          ...over,
        }),
      );
    expect(approved({ executionId: "x1", executionState: "completed" })).toBe(
      "approved (permission mode accept-edits); execution x1 completed",
    );
    expect(approved({ executionId: "x1", executionState: "queued" })).toBe(
      "approved (permission mode accept-edits); execution x1 queued (waiting for a worker to claim it)",
    );
    expect(approved({ executionId: "x1", executionState: "running" })).toBe(
      "approved (permission mode accept-edits); execution x1 running",
    );
    expect(
      approved({ executionId: "x1", executionState: "interrupted", errorCode: "PLAN_EXECUTION_INTERRUPTED" }),
    ).toBe(
      "approved (permission mode accept-edits); execution x1 interrupted (PLAN_EXECUTION_INTERRUPTED): the approved execution was stopped (an abort, a host restart or stop, or its worker stopping) and is never run again",
    );
    expect(
      approved({
        executionId: "x1",
        executionState: "interrupted",
        errorCode: "PLAN_ARTIFACT_HASH_MISMATCH",
      }),
    ).toBe(
      "approved (permission mode accept-edits); execution x1 interrupted (PLAN_ARTIFACT_HASH_MISMATCH): the plan file changed after approval, so the execution was not run",
    );
  });

  it("rejected and pending are said as such", () => {
    expect(planStatusText(proposalView({ status: "rejected", action: "reject" }))).toBe(
      "rejected: nothing ran; the session stayed in Plan",
    );
    expect(planStatusText(proposalView())).toBe("pending: awaiting approval until 2025-01-01T00:30:00.000Z");
  });
});

describe("planCodeMeaning", () => {
  it("has a sentence for every code a plan row carries, and names an unknown one", () => {
    for (const code of ["PLAN_APPROVAL_INTERRUPTED", "PLAN_APPROVAL_TIMEOUT"])
      expect(planCodeMeaning(code, "approval")).not.toContain(code);
    for (const code of [
      "PLAN_EXECUTION_INTERRUPTED",
      "PLAN_ARTIFACT_HASH_MISMATCH",
      "PLAN_APPROVAL_TIMEOUT",
      "PLAN_APPROVAL_INTERRUPTED",
    ])
      expect(planCodeMeaning(code, "execution")).not.toContain(code);
    expect(planCodeMeaning("PROVIDER_UNAUTHORIZED", "execution")).toBe(
      "the execution turn ended with PROVIDER_UNAUTHORIZED (see docs/errors.md)",
    );
  });
});

describe("formatPlanBlock", () => {
  it("a pending plan ends with the commands to read, approve or reject it", () => {
    const p = proposalView();
    expect(formatPlanBlock(p)).toEqual([
      "plan p1: pending: awaiting approval until 2025-01-01T00:30:00.000Z",
      "  title:    Add a greeting",
      "  question: Shall I write GREETING.md?",
      "  session:  s1 (turn t1)",
      "  created:  2025-01-01T00:00:00.000Z",
      ...approvalHintLines(p).map((l) => `  ${l}`),
    ]);
  });

  it("a resolved plan shows when, and its file", () => {
    expect(formatPlanBlock(proposalView({ status: "rejected", resolvedAt: RESOLVED }))).toEqual([
      "plan p1: rejected: nothing ran; the session stayed in Plan",
      "  title:    Add a greeting",
      "  question: Shall I write GREETING.md?",
      "  session:  s1 (turn t1)",
      `  created:  2025-01-01T00:00:00.000Z, resolved ${RESOLVED}`,
      "  file:     .pi/plan/add-a-greeting-20250101T000000Z.md (120 bytes, sha256 abababababab)",
    ]);
  });

  it("a title or question from the bus stays on its line", () => {
    const p = proposalView({ title: "ok\nplan p9: approved", question: "q\t\u001b[2J?" });
    expect(formatPlanBlock(p).slice(1, 3)).toEqual([
      "  title:    ok\\nplan p9: approved",
      "  question: q\\t\\u001b[2J?",
    ]);
  });
});

describe("formatPlanHistory", () => {
  it("says when a session has no plans", () => {
    expect(formatPlanHistory({ proposals: [], next: null }, { sessionId: "s1" })).toEqual([
      "no plans in session s1",
    ]);
  });

  it("blocks newest first, separated by a blank line, then the command for the older page", () => {
    const a = proposalView({ proposalId: "p2", status: "expired", errorCode: "PLAN_APPROVAL_TIMEOUT" });
    const b = proposalView({ proposalId: "p1", status: "rejected" });
    const lines = formatPlanHistory({ proposals: [a, b], next: "123.p1" }, { sessionId: "s1", limit: "2" });
    expect(lines.filter((l) => l.startsWith("plan "))).toEqual([
      `plan p2: ${planStatusText(a)}`,
      `plan p1: ${planStatusText(b)}`,
    ]);
    expect(lines[formatPlanBlock(a).length]).toBe("");
    expect(lines.slice(-2)).toEqual([
      "",
      "older plans: pihost plans history --session s1 --limit 2 --before 123.p1",
    ]);
    expect(formatPlanHistory({ proposals: [b], next: null }, { sessionId: "s1" })).toEqual(
      formatPlanBlock(b),
    );
  });
});
