// The approval card of the decision records (issue #15 clause 4): title, question, the plan file
// fetched page by page through artifacts.read, hashed in the browser and compared with the record,
// rendered through markdown.ts; SHA-256 and size on demand; a loud mismatch state; the absolute
// expiry with a live countdown; Approve with a permission mode starting at Ask; Reject. Terminal
// cards are history and offer no action.
import type { ProposalView } from "../../../protocol/schemas.ts";
import { h, replace, setAttrs, setDisabled, setText } from "../dom.ts";
import { planFragment, rawWithHiddenShown, renderPlan } from "../markdown.ts";
import { absoluteTime, countdown } from "../time-format.ts";
import { type ApprovalCardParts, approvalCardParts, selectedMode } from "./approval-card-parts.ts";
import { errorText, type ViewContext } from "./view-context.ts";

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

/** One card's state and dependencies, which each step below takes explicitly. */
interface CardState {
  ctx: ViewContext;
  parts: ApprovalCardParts;
  p: ProposalView;
  plan: FetchedPlan | null;
  planError: string | null;
  loading: boolean;
  busy: boolean;
  raw: boolean;
}

export function createApprovalCard(ctx: ViewContext, initial: ProposalView): ApprovalCard {
  const parts = approvalCardParts();
  const c: CardState = {
    ctx,
    parts,
    p: initial,
    plan: null,
    planError: null,
    loading: false,
    busy: false,
    raw: false,
  };
  parts.rawToggle.addEventListener("click", () => {
    c.raw = !c.raw;
    renderCard(c);
  });
  parts.loadButton.addEventListener("click", () => void loadPlan(c));
  parts.reread.addEventListener("click", () => void loadPlan(c));
  parts.approve.addEventListener("click", () => void resolveProposal(c, "approve"));
  parts.reject.addEventListener("click", () => void resolveProposal(c, "reject"));

  renderCard(c);
  if (c.p.status === "pending") void loadPlan(c);

  return {
    el: parts.el,
    update(next) {
      const changed = next.version !== c.p.version || next.status !== c.p.status;
      c.p = next;
      if (changed) renderCard(c);
    },
    tick: () => tickCard(c),
  };
}

async function loadPlan(c: CardState): Promise<void> {
  if (c.loading) return;
  c.loading = true;
  c.planError = null;
  delete c.parts.body.dataset.rendered;
  renderCard(c);
  try {
    c.plan = await fetchPlan(c.ctx, c.p.proposalId);
  } catch (err) {
    c.planError = errorText(err);
  } finally {
    c.loading = false;
    renderCard(c);
  }
}

async function resolveProposal(c: CardState, action: "approve" | "reject"): Promise<void> {
  const { ctx, p } = c;
  const { status } = c.parts;
  if (c.busy) return;
  c.busy = true;
  setText(status, action === "approve" ? "Approving…" : "Rejecting…");
  renderCard(c);
  try {
    const r = await ctx.bus.call("plans.resolve", {
      proposalId: p.proposalId,
      sessionId: p.sessionId,
      turnId: p.turnId,
      toolCallId: p.toolCallId,
      version: p.version,
      action,
      ...(action === "approve" ? { targetPermissionMode: selectedMode(c.parts.radios) } : {}),
    });
    ctx.stores.plans.trigger.seen({ proposal: r });
    setText(status, `${r.status}${r.targetPermissionMode ? ` (${r.targetPermissionMode})` : ""}`);
  } catch (err) {
    setText(status, `Refused: ${errorText(err)}`);
    ctx.report(err, action === "approve" ? "approve the plan" : "reject the plan");
    // The file changed since it was read here: read it again, so the card says so.
    if ((err as { code?: unknown }).code === "PLAN_ARTIFACT_HASH_MISMATCH") void loadPlan(c);
  } finally {
    c.busy = false;
    renderCard(c);
  }
}

function expired(c: CardState): boolean {
  return Date.parse(c.p.deadline) <= c.ctx.now();
}

function renderCard(c: CardState): void {
  const { p, parts } = c;
  const { el, kind, title, question, terminalLine, expiry, modes, actions, expiryTime, expiryLocal } = parts;
  const pending = p.status === "pending";
  el.classList.toggle("pending", pending);
  el.classList.toggle("terminal", !pending);
  setText(kind, pending ? "Plan awaiting approval" : `Plan ${p.status}`);
  setText(title, p.title);
  setText(question, p.question);
  terminalLine.hidden = pending;
  if (!pending) {
    const lineParts = [`status ${p.status}`];
    if (p.targetPermissionMode) lineParts.push(`permission mode ${p.targetPermissionMode}`);
    if (p.executionState) lineParts.push(`execution ${p.executionState}`);
    if (p.errorCode) lineParts.push(`code ${p.errorCode}`);
    if (p.resolvedAt) lineParts.push(`resolved ${absoluteTime(p.resolvedAt).iso}`);
    setText(terminalLine, lineParts.join(" · "));
  }
  parts.loadButton.hidden = pending || c.plan !== null || c.loading;
  renderPlanBody(c, pending);
  renderHashes(c, pending);

  // Deadline, mode and actions: only on a pending card.
  expiry.hidden = !pending;
  modes.hidden = !pending;
  actions.hidden = !pending;
  const t = absoluteTime(p.deadline);
  setAttrs(expiryTime, { datetime: t.iso });
  setText(expiryTime, t.iso);
  setText(expiryLocal, `local time ${t.local}`);
  tickCard(c);
}

/** The plan itself: rendered, or raw Markdown on demand, with what rendering hid or removed. */
function renderPlanBody(c: CardState, pending: boolean): void {
  const { p, plan, raw, loading, planError } = c;
  const { body, rawView, flagsBox, rawToggle, reread } = c.parts;
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
}

/** Hashes on demand; the mismatch loudly. */
function renderHashes(c: CardState, pending: boolean): void {
  const { p, plan } = c;
  const { el, hashes, mismatch } = c.parts;
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
}

function tickCard(c: CardState): void {
  const { p, plan, busy } = c;
  const { timer, approve, reject, radios, status } = c.parts;
  const pending = p.status === "pending";
  setText(timer, countdown(p.deadline, c.ctx.now()));
  const late = expired(c);
  const verified = plan !== null && planMatches(plan, p) && !c.loading;
  setDisabled(approve, !pending || busy || late || !verified);
  setDisabled(reject, !pending || busy || late);
  for (const r of radios) setDisabled(r.input, !pending || busy || late);
  if (pending && late) setText(status, "The deadline has passed: the host expires this plan.");
}
