// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { ev, proposal, sessionView } from "../test-fixtures.ts";
import { createSessionView, PLAN_COPY } from "./session-view.ts";
import { button, settle, testContext } from "./test-context.ts";

/** Enabled controls that act on the session (the diagram's own view controls, e.g. zoom, act on nothing). */
function enabledControls(root: HTMLElement): string[] {
  return [
    ...root.querySelectorAll<HTMLButtonElement | HTMLInputElement | HTMLTextAreaElement>(
      "button, input, textarea, select",
    ),
  ]
    .filter((c) => !c.disabled && !c.closest("[hidden]") && !c.closest(".machine-diagram"))
    .map((c) => c.textContent || c.getAttribute("value") || c.tagName.toLowerCase());
}

describe("session view", () => {
  it("idle: the owner may switch the mode (with the Plan copy), prompt; abort is off", async () => {
    const t = testContext(() => ({}));
    t.ctx.stores.sessions.trigger.listed({ sessions: [sessionView({ machineState: "idle" } as never)] });
    const view = createSessionView(t.ctx, "s1");
    document.body.append(view.el);
    expect(view.el.querySelector(".mode-selector")?.textContent).toContain(PLAN_COPY);
    const radios = [...view.el.querySelectorAll<HTMLInputElement>(".mode-selector input")];
    expect(radios.map((r) => [r.value, r.checked, r.disabled])).toEqual([
      ["agent", true, false],
      ["plan", false, false],
    ]);
    expect(button(view.el, "Send prompt").disabled).toBe(false);
    expect(button(view.el, "Abort").disabled).toBe(true);
    view.destroy();
  });

  it("while a turn runs the mode selector is off and abort is on", () => {
    const t = testContext(() => ({}));
    t.ctx.stores.sessions.trigger.listed({ sessions: [sessionView({ activeTurnId: "t1" })] });
    t.ctx.stores.sessions.trigger.event({ event: ev("machine.state", 1, { state: "running" }) });
    const view = createSessionView(t.ctx, "s1");
    expect(
      [...view.el.querySelectorAll<HTMLInputElement>(".mode-selector input")].every((r) => r.disabled),
    ).toBe(true);
    expect(button(view.el, "Abort").disabled).toBe(false);
    expect(view.el.querySelector(".machine-now")?.textContent).toBe("Host state: running");
    view.destroy();
  });

  it("while an approval is pending, the card's controls are the session's only enabled ones", async () => {
    const t = testContext((method) => {
      if (method === "artifacts.read") throw Object.assign(new Error("gone"), { code: "FILE_NOT_FOUND" });
      return {};
    });
    t.ctx.stores.sessions.trigger.listed({
      sessions: [sessionView({ mode: "plan", planningState: "awaiting_approval", activeTurnId: "t1" })],
    });
    t.ctx.stores.sessions.trigger.event({ event: ev("machine.state", 1, { state: "parked" }) });
    t.ctx.stores.plans.trigger.pendingListed({ proposals: [proposal()] });
    const view = createSessionView(t.ctx, "s1");
    document.body.append(view.el);
    await settle();
    // The plan file could not be read, so Approve stays off; Reject and the mode choice remain.
    expect(enabledControls(view.el)).toEqual(["ask", "accept-edits", "auto", "Reject"]);
    view.destroy();
  });

  it("another person (an approver) may abort but not prompt or switch the mode", () => {
    const t = testContext(() => ({}), { principal: "bob" });
    t.ctx.stores.sessions.trigger.listed({
      sessions: [sessionView({ approvers: ["bob"], activeTurnId: "t1" })],
    });
    const view = createSessionView(t.ctx, "s1");
    expect(button(view.el, "Send prompt").disabled).toBe(true);
    expect(button(view.el, "Abort").disabled).toBe(false);
    expect(
      [...view.el.querySelectorAll<HTMLInputElement>(".mode-selector input")].every((r) => r.disabled),
    ).toBe(true);
    view.destroy();
  });

  it("the diagram highlights the host's state value; passivated clears it", async () => {
    const t = testContext(() => ({}));
    t.ctx.stores.sessions.trigger.listed({ sessions: [sessionView()] });
    const view = createSessionView(t.ctx, "s1");
    document.body.append(view.el);
    view.machineState("idle");
    for (let i = 0; i < 50 && !view.el.querySelector("[data-state]"); i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(view.el.querySelector('[data-state="idle"]')?.getAttribute("aria-current")).toBe("true");
    view.machineState("parked");
    expect(view.el.querySelector('[data-state="parked"]')?.getAttribute("aria-current")).toBe("true");
    expect(view.el.querySelector('[data-state="idle"]')?.hasAttribute("aria-current")).toBe(false);
    view.machineState("passivated");
    expect(view.el.querySelector('[aria-current="true"]')).toBeNull();
    view.destroy();
  });
});
