// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import type { PermissionPrompt } from "../stores.ts";
import { createPermissionCard, PREVIEW_MAX_CHARS, previewText } from "./permission-card.ts";
import { button, settle, testContext } from "./test-context.ts";

const prompt: PermissionPrompt = {
  requestId: "r1",
  sessionId: "s1",
  turnId: "t1",
  toolCallId: "c1",
  tool: "bash",
  risk: "high",
  preview: { command: "echo '<script>alert(1)</script>'" },
  deadline: "2026-01-01T10:05:00.000Z",
  status: "pending",
  decision: null,
  code: null,
};

describe("permission prompt", () => {
  it("tool, risk, preview as text, deadline countdown; three answers and no default", async () => {
    const t = testContext((_m, params) => ({
      requestId: "r1",
      status: "allowed",
      decision: params.decision,
    }));
    const card = createPermissionCard(t.ctx, prompt);
    document.body.append(card.el);
    expect(card.el.querySelector("h3")?.textContent).toBe("Permission needed: bash");
    expect(card.el.textContent).toContain("Risk: high");
    expect(card.el.querySelector("pre")?.textContent).toContain("<script>alert(1)</script>");
    expect(card.el.querySelector("script")).toBeNull();
    expect(card.el.querySelector('[role="timer"]')?.textContent).toBe("5:00 left");
    const names = [...card.el.querySelectorAll("button")].map((b) => b.textContent);
    expect(names).toEqual(["Allow once", "Allow for session", "Deny"]);
    // No default: nothing focused, no submit button, no form for Enter to submit.
    expect(document.activeElement).toBe(document.body);
    expect(card.el.querySelector("form")).toBeNull();
    expect([...card.el.querySelectorAll("button")].every((b) => b.type === "button" && !b.autofocus)).toBe(
      true,
    );
    card.el.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    await settle();
    expect(t.calls).toHaveLength(0);

    button(card.el, "Allow for session").click();
    await settle();
    expect(t.calls).toEqual([
      { method: "permissions.resolve", params: { requestId: "r1", decision: "allow-session" } },
    ]);
    expect(card.el.querySelector(".card-status")?.textContent).toBe("Answered: allow-session");
  });

  it("past the deadline the answers are off", () => {
    const t = testContext(() => ({}), { now: Date.parse("2026-01-01T10:06:00.000Z") });
    const card = createPermissionCard(t.ctx, prompt);
    expect([...card.el.querySelectorAll("button")].every((b) => b.disabled)).toBe(true);
    expect(card.el.querySelector('[role="timer"]')?.textContent).toBe("expired");
  });

  it("the preview is cut at a few KB", () => {
    const text = previewText({ content: "y".repeat(20_000) });
    expect(text.length).toBeLessThan(PREVIEW_MAX_CHARS + 100);
    expect(text).toMatch(/more characters not shown\)$/);
  });
});
