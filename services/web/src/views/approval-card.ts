// The approval card of the decision records (issue #15 clause 4): title, question, the plan file
// fetched page by page through artifacts.read, hashed in the browser and compared with the record,
// rendered through markdown.ts; SHA-256 and size on demand; a loud mismatch state; the absolute
// expiry with a live countdown; Approve with a permission mode starting at Ask; Reject. Terminal
// cards are history and offer no action.
import type { ProposalView } from "../../../protocol/schemas.ts";
import { h, replace, setAttrs, setDisabled, setText, uid } from "../dom.ts";
import { planFragment, rawWithHiddenShown, renderPlan } from "../markdown.ts";
import { absoluteTime, countdown } from "../time-format.ts";
import { errorText, type ViewContext } from "./view-context.ts";

const MODES = [
  { value: "ask", label: "Ask", help: "every edit and every Bash call waits for a person" },
  { value: "accept-edits", label: "Accept edits", help: "edits run; every Bash call waits for a person" },
  { value: "auto", label: "Auto", help: "edits and Bash run without asking" },
] as const;

/** The plan file as the browser read it. */
export interface FetchedPlan {
  bytes: Uint8Array;
  path: string;
  recordedSha256: string;
  /** The host's own comparison of the file it read with the record (last page). */
  hostMatches: boolean;
  /** SHA-256 of the reassembled bytes, computed here; null when this browser cannot hash (no secure context). */
  sha256: string | null;
}

/** Every page of the plan file, reassembled as bytes and hashed with crypto.subtle. */
export async function fetchPlan(ctx: ViewContext, proposalId: string): Promise<FetchedPlan> {
  const parts: Uint8Array[] = [];
  let offset = 0;
  for (;;) {
    const page = await ctx.bus.call("artifacts.read", { proposalId, offset });
    parts.push(fromBase64(page.data));
    if (page.nextOffset === null) {
      const bytes = concat(parts);
      return {
        bytes,
        path: page.path,
        recordedSha256: page.recordedSha256,
        hostMatches: page.matchesRecord,
        sha256: await sha256Hex(bytes),
      };
    }
    // Each page must move on, or a faulty host would keep the page asking forever.
    if (page.nextOffset <= offset) throw new Error(`artifacts.read did not advance past byte ${offset}`);
    offset = page.nextOffset;
  }
}

export function fromBase64(data: string): Uint8Array {
  const bin = atob(data);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

export async function sha256Hex(bytes: Uint8Array): Promise<string | null> {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) return null;
  const digest = await subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether the file read is the plan that was submitted: hashed here, equal to the record, and the host agrees. */
export function planMatches(plan: FetchedPlan, proposal: Pick<ProposalView, "sha256">): boolean {
  return (
    plan.sha256 !== null &&
    plan.hostMatches &&
    plan.sha256 === plan.recordedSha256 &&
    plan.sha256 === proposal.sha256
  );
}

export interface ApprovalCard {
  el: HTMLElement;
  update(p: ProposalView): void;
  /** Once a second: the countdown, and Approve/Reject off once the deadline passed. */
  tick(): void;
}

export function createApprovalCard(ctx: ViewContext, initial: ProposalView): ApprovalCard {
  let p = initial;
  let plan: FetchedPlan | null = null;
  let planError: string | null = null;
  let loading = false;
  let busy = false;
  let raw = false;
  const titleId = uid("plan-title");

  const kind = h("p", { class: "card-kind" });
  const title = h("h3", { id: titleId, class: "card-title" });
  const question = h("p", { class: "card-question" });
  const mismatch = h("div", { class: "mismatch", role: "alert", hidden: true });
  const flagsBox = h("div", { class: "plan-flags", hidden: true });
  const body = h("div", { class: "plan-body", "aria-label": "Plan" });
  const rawView = h("pre", { class: "plan-raw", hidden: true, "aria-label": "Plan Markdown as written" });
  const rawToggle = h("button", { type: "button", "aria-pressed": "false" }, "Show raw Markdown");
  const loadButton = h("button", { type: "button", hidden: true }, "Show the plan");
  const reread = h("button", { type: "button", hidden: true }, "Read the plan file again");
  const hashes = h("dl", { class: "hashes" });
  const details = h("details", { class: "plan-details" }, h("summary", {}, "SHA-256 and size"), hashes);
  const expiryTime = h("time", {});
  const expiryLocal = h("span", {});
  const timer = h("span", { class: "countdown", role: "timer", "aria-live": "off" });
  const expiry = h("p", { class: "expiry" }, "Expires ", expiryTime, " (", expiryLocal, ") — ", timer);
  const modeName = uid("approve-mode");
  const autoWarning = h(
    "p",
    { class: "auto-warning", hidden: true, id: uid("auto-warning") },
    "Warning: under Auto, Bash runs without asking and may change any file in the workspace.",
  );
  const radios = MODES.map((m) => {
    const id = uid("mode");
    const input = h("input", {
      type: "radio",
      name: modeName,
      id,
      value: m.value,
      ...(m.value === "ask" ? { checked: true } : {}),
    });
    input.addEventListener("change", () => {
      autoWarning.hidden = selectedMode() !== "auto";
    });
    return {
      input,
      row: h("div", { class: "radio-row" }, input, h("label", { for: id }, `${m.label}: ${m.help}`)),
    };
  });
  const modes = h(
    "fieldset",
    { class: "approve-modes" },
    h("legend", {}, "Permission mode for the execution"),
    ...radios.map((r) => r.row),
    autoWarning,
  );
  const approve = h("button", { type: "button", class: "approve" }, "Approve");
  const reject = h("button", { type: "button", class: "reject" }, "Reject");
  const status = h("p", { class: "card-status", role: "status" });
  const actions = h("div", { class: "card-actions" }, approve, reject);
  const terminalLine = h("p", { class: "terminal-line" });

  const el = h(
    "article",
    { class: "approval-card", "aria-labelledby": titleId },
    kind,
    title,
    question,
    terminalLine,
    mismatch,
    flagsBox,
    loadButton,
    body,
    rawView,
    rawToggle,
    reread,
    details,
    expiry,
    modes,
    actions,
    status,
  );

  function selectedMode(): string {
    return radios.find((r) => r.input.checked)?.input.value ?? "ask";
  }

  rawToggle.addEventListener("click", () => {
    raw = !raw;
    render();
  });
  loadButton.addEventListener("click", () => void load());
  reread.addEventListener("click", () => void load());
  approve.addEventListener("click", () => void resolve("approve"));
  reject.addEventListener("click", () => void resolve("reject"));

  async function load(): Promise<void> {
    if (loading) return;
    loading = true;
    planError = null;
    delete body.dataset.rendered;
    render();
    try {
      plan = await fetchPlan(ctx, p.proposalId);
    } catch (err) {
      planError = errorText(err);
    } finally {
      loading = false;
      render();
    }
  }

  async function resolve(action: "approve" | "reject"): Promise<void> {
    if (busy) return;
    busy = true;
    setText(status, action === "approve" ? "Approving…" : "Rejecting…");
    render();
    try {
      const r = await ctx.bus.call("plans.resolve", {
        proposalId: p.proposalId,
        sessionId: p.sessionId,
        turnId: p.turnId,
        toolCallId: p.toolCallId,
        version: p.version,
        action,
        ...(action === "approve" ? { targetPermissionMode: selectedMode() } : {}),
      });
      ctx.stores.plans.trigger.seen({ proposal: r });
      setText(status, `${r.status}${r.targetPermissionMode ? ` (${r.targetPermissionMode})` : ""}`);
    } catch (err) {
      setText(status, `Refused: ${errorText(err)}`);
      ctx.report(err, action === "approve" ? "approve the plan" : "reject the plan");
      // The file changed since it was read here: read it again, so the card says so.
      if ((err as { code?: unknown }).code === "PLAN_ARTIFACT_HASH_MISMATCH") void load();
    } finally {
      busy = false;
      render();
    }
  }

  function expired(): boolean {
    return Date.parse(p.deadline) <= ctx.now();
  }

  function render(): void {
    const pending = p.status === "pending";
    el.classList.toggle("pending", pending);
    el.classList.toggle("terminal", !pending);
    setText(kind, pending ? "Plan awaiting approval" : `Plan ${p.status}`);
    setText(title, p.title);
    setText(question, p.question);
    terminalLine.hidden = pending;
    if (!pending) {
      const parts = [`status ${p.status}`];
      if (p.targetPermissionMode) parts.push(`permission mode ${p.targetPermissionMode}`);
      if (p.executionState) parts.push(`execution ${p.executionState}`);
      if (p.errorCode) parts.push(`code ${p.errorCode}`);
      if (p.resolvedAt) parts.push(`resolved ${absoluteTime(p.resolvedAt).iso}`);
      setText(terminalLine, parts.join(" · "));
    }
    loadButton.hidden = pending || plan !== null || loading;

    // The plan itself.
    if (loading) replace(body, h("p", { class: "muted" }, "Reading the plan file…"));
    else if (planError !== null)
      replace(body, h("p", { class: "error" }, `The plan file could not be read: ${planError}`));
    else if (plan !== null && body.dataset.rendered !== p.proposalId) {
      const markdown = new TextDecoder().decode(plan.bytes);
      const rendered = renderPlan(markdown);
      replace(body, planFragment(rendered.html));
      body.dataset.rendered = p.proposalId;
      setText(rawView, rawWithHiddenShown(markdown));
      replace(
        flagsBox,
        h("h4", {}, "Hidden or removed content"),
        h("ul", {}, ...rendered.flags.map((f) => h("li", {}, f))),
      );
      flagsBox.hidden = rendered.flags.length === 0;
    }
    const hasPlan = plan !== null && !loading && planError === null;
    body.hidden = raw && hasPlan;
    rawView.hidden = !(raw && hasPlan);
    rawToggle.hidden = !hasPlan;
    reread.hidden = !hasPlan || !pending;
    setAttrs(rawToggle, { "aria-pressed": raw ? "true" : "false" });
    setText(rawToggle, raw ? "Show rendered plan" : "Show raw Markdown");

    // Hashes on demand; the mismatch loudly.
    const matches = plan !== null && planMatches(plan, p);
    replace(
      hashes,
      h("dt", {}, "Recorded SHA-256"),
      h("dd", { class: "hash" }, p.sha256),
      h("dt", {}, "SHA-256 of the file read (computed in this browser)"),
      h(
        "dd",
        { class: "hash" },
        plan ? (plan.sha256 ?? "not computed: this page is not a secure context") : "not read yet",
      ),
      h("dt", {}, "Size"),
      h(
        "dd",
        {},
        plan
          ? `${plan.bytes.byteLength} bytes read (recorded ${p.byteSize} bytes)`
          : `${p.byteSize} bytes recorded`,
      ),
      h("dt", {}, "File"),
      h("dd", {}, plan?.path ?? p.artifactPath),
    );
    const showMismatch = pending && plan !== null && !matches;
    mismatch.hidden = !showMismatch;
    if (showMismatch) {
      setText(
        mismatch,
        plan!.sha256 === null
          ? "This browser cannot compute SHA-256 here (the page is not a secure context), so the plan cannot be checked against its record. Approve is off."
          : `The plan file no longer matches what was submitted: SHA-256 ${plan!.sha256}, recorded ${p.sha256}. The host would refuse to approve it; you can still reject it.`,
      );
    }
    el.classList.toggle("mismatched", showMismatch);

    // Deadline, mode and actions: only on a pending card.
    expiry.hidden = !pending;
    modes.hidden = !pending;
    actions.hidden = !pending;
    const t = absoluteTime(p.deadline);
    setAttrs(expiryTime, { datetime: t.iso });
    setText(expiryTime, t.iso);
    setText(expiryLocal, `local time ${t.local}`);
    tick();
  }

  function tick(): void {
    const pending = p.status === "pending";
    setText(timer, countdown(p.deadline, ctx.now()));
    const late = expired();
    const verified = plan !== null && planMatches(plan, p) && !loading;
    setDisabled(approve, !pending || busy || late || !verified);
    setDisabled(reject, !pending || busy || late);
    for (const r of radios) setDisabled(r.input, !pending || busy || late);
    if (pending && late) setText(status, "The deadline has passed: the host expires this plan.");
  }

  render();
  if (p.status === "pending") void load();

  return {
    el,
    update(next) {
      const changed = next.version !== p.version || next.status !== p.status;
      p = next;
      if (changed) render();
    },
    tick,
  };
}
