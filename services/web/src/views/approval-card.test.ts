// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { proposal } from "../test-fixtures.ts";
import { createApprovalCard } from "./approval-card.ts";
import { button, settle, sha256, testContext } from "./test-context.ts";

const PLAN =
  "# Rename\n\n1. move `a.ts` to `b.ts` — ünïcode\n\n<!-- hidden -->\n![x](https://evil.example/p.png)\n";

/** artifacts.read in pages of `pageBytes`, as the host pages it; `tamper` serves other bytes. */
function artifactHost(file: string, recorded: string, opts: { pageBytes?: number; matches?: boolean } = {}) {
  const bytes = new TextEncoder().encode(file);
  const page = opts.pageBytes ?? 16;
  return (offset: number) => {
    const end = Math.min(bytes.byteLength, offset + page);
    let bin = "";
    for (const b of bytes.slice(offset, end)) bin += String.fromCharCode(b);
    return {
      proposalId: "pr1",
      path: ".pi/plans/pr1.md",
      byteSize: bytes.byteLength,
      sha256: "host-side",
      recordedSha256: recorded,
      matchesRecord: opts.matches ?? true,
      offset,
      data: btoa(bin),
      nextOffset: end < bytes.byteLength ? end : null,
    };
  };
}

describe("approval card", () => {
  it("reads every page, hashes the bytes, renders the plan with its flags, and approves with the chosen mode", async () => {
    const recorded = await sha256(PLAN);
    const read = artifactHost(PLAN, recorded);
    const t = testContext((method, params) => {
      if (method === "artifacts.read") return read((params.offset as number) ?? 0);
      if (method === "plans.resolve")
        return proposal({
          status: "approved",
          version: 2,
          sha256: recorded,
          targetPermissionMode: params.targetPermissionMode as string,
        });
      throw new Error(method);
    });
    const card = createApprovalCard(t.ctx, proposal({ sha256: recorded, byteSize: 10 }));
    document.body.append(card.el);
    await settle();
    const pages = t.calls.filter((c) => c.method === "artifacts.read");
    expect(pages.length).toBeGreaterThan(2);
    expect(pages.map((c) => c.params.offset)).toEqual(pages.map((_, i) => i * 16));
    expect(card.el.querySelector("h3")?.textContent).toBe("Rename the module");
    expect(card.el.querySelector(".plan-body h1")?.textContent).toBe("Rename");
    expect(card.el.querySelector(".plan-body")?.textContent).toContain("ünïcode");
    expect(card.el.querySelector(".plan-body img")?.getAttribute("src")).toBeNull();
    expect(card.el.querySelector(".plan-flags")?.hasAttribute("hidden")).toBe(false);
    expect(card.el.querySelector(".plan-flags")?.textContent).toContain("1 HTML comment");
    expect((card.el.querySelector('[role="alert"]') as HTMLElement).hidden).toBe(true);

    // SHA-256 and size on demand.
    const details = card.el.querySelector("details")!;
    expect(details.open).toBe(false);
    expect(details.textContent).toContain(recorded);
    expect(details.textContent).toContain(`${new TextEncoder().encode(PLAN).byteLength} bytes read`);

    // The raw view shows the Markdown as text.
    button(card.el, "Show raw Markdown").click();
    expect((card.el.querySelector(".plan-raw") as HTMLElement).hidden).toBe(false);
    expect(card.el.querySelector(".plan-raw")?.textContent).toContain("<!-- hidden -->");

    // The deadline: absolute and counting down.
    expect(card.el.querySelector("time")?.getAttribute("datetime")).toBe("2026-01-01T10:30:00.000Z");
    expect(card.el.querySelector('[role="timer"]')?.textContent).toBe("30:00 left");

    // Ask first; Auto warns.
    const radios = [...card.el.querySelectorAll<HTMLInputElement>('input[type="radio"]')];
    expect(radios.find((r) => r.checked)?.value).toBe("ask");
    const warning = card.el.querySelector(".auto-warning") as HTMLElement;
    expect(warning.hidden).toBe(true);
    const auto = radios.find((r) => r.value === "auto")!;
    auto.checked = true;
    auto.dispatchEvent(new Event("change"));
    expect(warning.hidden).toBe(false);
    const accept = radios.find((r) => r.value === "accept-edits")!;
    accept.checked = true;
    accept.dispatchEvent(new Event("change"));
    expect(warning.hidden).toBe(true);

    const approve = button(card.el, "Approve");
    expect(approve.disabled).toBe(false);
    approve.click();
    await settle();
    const resolve = t.calls.find((c) => c.method === "plans.resolve")!;
    expect(resolve.params).toEqual({
      proposalId: "pr1",
      sessionId: "s1",
      turnId: "t1",
      toolCallId: "c1",
      version: 1,
      action: "approve",
      targetPermissionMode: "accept-edits",
    });
    expect(t.ctx.stores.plans.getSnapshot().context.byId.pr1!.status).toBe("approved");
  });

  it("a file that no longer matches its record: a loud alert, Approve off (the host would refuse), Reject on", async () => {
    const recorded = await sha256(PLAN);
    const read = artifactHost(`${PLAN}\nrm -rf /\n`, recorded, { matches: false });
    const t = testContext((method, params) => {
      if (method === "artifacts.read") return read((params.offset as number) ?? 0);
      if (method === "plans.resolve") return proposal({ status: "rejected", version: 2 });
      throw new Error(method);
    });
    const card = createApprovalCard(t.ctx, proposal({ sha256: recorded }));
    await settle();
    const alert = card.el.querySelector('[role="alert"]') as HTMLElement;
    expect(alert.hidden).toBe(false);
    expect(alert.textContent).toContain("no longer matches");
    expect(alert.textContent).toContain(recorded);
    expect(button(card.el, "Approve").disabled).toBe(true);
    const reject = button(card.el, "Reject");
    expect(reject.disabled).toBe(false);
    reject.click();
    await settle();
    expect(t.calls.find((c) => c.method === "plans.resolve")!.params).toMatchObject({ action: "reject" });
    expect(t.calls.find((c) => c.method === "plans.resolve")!.params).not.toHaveProperty(
      "targetPermissionMode",
    );
  });

  it("even when the host says it matches, bytes that hash differently here are a mismatch", async () => {
    const read = artifactHost(PLAN, "f".repeat(64), { matches: true });
    const t = testContext((_m, params) => read((params.offset as number) ?? 0));
    const card = createApprovalCard(t.ctx, proposal({ sha256: "f".repeat(64) }));
    await settle();
    expect((card.el.querySelector('[role="alert"]') as HTMLElement).hidden).toBe(false);
    expect(button(card.el, "Approve").disabled).toBe(true);
  });

  it("past its deadline nothing is actionable; a host refusal is shown with its code", async () => {
    const recorded = await sha256(PLAN);
    const read = artifactHost(PLAN, recorded);
    const t = testContext((method, params) => {
      if (method === "artifacts.read") return read((params.offset as number) ?? 0);
      throw Object.assign(new Error("the approval deadline passed"), { code: "PLAN_APPROVAL_TIMEOUT" });
    });
    const card = createApprovalCard(t.ctx, proposal({ sha256: recorded }));
    await settle();
    button(card.el, "Reject").click();
    await settle();
    expect(card.el.querySelector(".card-status")?.textContent).toBe(
      "Refused: PLAN_APPROVAL_TIMEOUT: the approval deadline passed",
    );
    expect(t.reports).toHaveLength(1);
    t.setNow(Date.parse("2026-01-01T10:30:01.000Z"));
    card.tick();
    expect(card.el.querySelector('[role="timer"]')?.textContent).toBe("expired");
    expect(button(card.el, "Approve").disabled).toBe(true);
    expect(button(card.el, "Reject").disabled).toBe(true);
  });

  it("a terminal card is history: no mode choice, no Approve or Reject; strings from the bus stay text", async () => {
    const t = testContext(() => {
      throw new Error("no call expected");
    });
    const card = createApprovalCard(
      t.ctx,
      proposal({
        status: "expired",
        title: '<img src=x onerror="window.pwned=1">',
        errorCode: "PLAN_APPROVAL_TIMEOUT",
      }),
    );
    await settle();
    expect(t.calls).toHaveLength(0);
    expect(card.el.querySelector("h3")?.textContent).toBe('<img src=x onerror="window.pwned=1">');
    expect(card.el.querySelector("img")).toBeNull();
    expect((card.el.querySelector(".card-actions") as HTMLElement).hidden).toBe(true);
    expect((card.el.querySelector(".approve-modes") as HTMLElement).hidden).toBe(true);
    expect(card.el.querySelector(".terminal-line")?.textContent).toContain("status expired");
    expect(card.el.querySelector(".terminal-line")?.textContent).toContain("PLAN_APPROVAL_TIMEOUT");
  });
});
